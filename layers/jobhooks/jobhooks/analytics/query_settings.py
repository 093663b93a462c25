"""Where the analytics questions are answered: the management API's, the portal's and the alert
evaluator's analytics settings (`JOBHOOKS_ANALYTICS_WORKGROUP`, `JOBHOOKS_ANALYTICS_DATABASE`,
`JOBHOOKS_ANALYTICS_DIR`, `JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS`: `jobhooks.analytics.settings`).

A module of its own, so that the ingest function, which writes rows and asks no question, does not
define this model; `jobhooks.analytics.settings` still exports it.
"""

from pydantic import Field, ValidationInfo, field_validator

from jobhooks.settings import Settings


class AnalyticsQuerySettings(Settings):
    analytics_workgroup: str = ""
    analytics_database: str = Field("", validate_default=True)
    analytics_dir: str = ""
    analytics_query_wait_seconds: float = Field(10, gt=0, le=25)

    @field_validator("analytics_database")
    @classmethod
    def _database_with_workgroup(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("analytics_workgroup") and not value:
            raise ValueError("the Glue database is needed with JOBHOOKS_ANALYTICS_WORKGROUP")
        return value
