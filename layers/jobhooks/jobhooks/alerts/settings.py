"""The alert evaluator's configuration (`JOBHOOKS_*`; docs/notifications.md).

It reads the rules (`JOBHOOKS_ALERT_RULES_TABLE`), asks the analytics engine (Athena on AWS:
`JOBHOOKS_ANALYTICS_WORKGROUP`/`_DATABASE`; DuckDB on `jobhooks dev`: `JOBHOOKS_ANALYTICS_DIR`),
finds a tenant's rows under its pseudonym when the table is pseudonymized
(`JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN` or `_KEY`), and notifies
(`NotificationSettings`).
"""

from pydantic import Field

from jobhooks.analytics.settings import AnalyticsQuerySettings
from jobhooks.notifications.settings import NotificationSettings


class AlertSettings(NotificationSettings, AnalyticsQuerySettings):
    alert_rules_table: str = Field(min_length=1)
    analytics_pseudonymization_secret_arn: str = ""
    analytics_pseudonymization_key: str = Field("", repr=False)
    # How long one evaluation waits for the engine per tenant and window (the function has 60 s).
    alert_query_wait_seconds: float = Field(40, gt=0, le=50)
