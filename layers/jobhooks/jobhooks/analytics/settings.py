"""The analytics settings of a process, as mixins of its one settings model.

The ingest function's model gains `AnalyticsSinkSettings`, the management API's gains
`AnalyticsQuerySettings` (docs/architecture.md, "Environment"; docs/analytics.md):

- `JOBHOOKS_ANALYTICS_STREAM`: the Firehose delivery stream rows go to (a deployed stack);
- `JOBHOOKS_ANALYTICS_DIR`: the directory the local sink writes and DuckDB reads
  (`jobhooks dev`); the stream wins when both are set;
- `JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN`: pseudonymize `account_id` and `job_id`
  with the key in this secret; `JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_KEY` gives the key
  directly (local use). Neither: ids are written as they are (the default);
- `JOBHOOKS_ANALYTICS_WORKGROUP`, `JOBHOOKS_ANALYTICS_DATABASE`: where Athena answers;
- `JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS`: how long one API call waits for Athena before it
  answers "still running" (the API function has 15 s, API Gateway 30 s).
"""

from typing import TYPE_CHECKING, Any, Final

from pydantic import Field, field_validator

from jobhooks.analytics.pseudonymize import (
    MIN_KEY_CHARS,
    Pseudonymizer,
    SecretKeyPseudonymizer,
    StaticKeyPseudonymizer,
)
from jobhooks.moved_names import moved_name
from jobhooks.settings import Settings

if TYPE_CHECKING:
    from jobhooks.analytics.query_settings import AnalyticsQuerySettings as AnalyticsQuerySettings

# The query side's settings live in a module of their own, so that the ingest function's cold
# start does not define them; still importable from here, loaded on first use.
_MOVED: Final = {"AnalyticsQuerySettings": "jobhooks.analytics.query_settings"}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)


class AnalyticsSinkSettings(Settings):
    analytics_stream: str = ""
    analytics_dir: str = ""
    analytics_pseudonymization_secret_arn: str = ""
    analytics_pseudonymization_key: str = Field("", repr=False)

    @field_validator("analytics_pseudonymization_key")
    @classmethod
    def _long_enough(cls, value: str) -> str:
        if value and len(value.strip()) < MIN_KEY_CHARS:
            raise ValueError(f"at least {MIN_KEY_CHARS} characters are needed")
        return value

    def pseudonymizer(self, *, session: Any = None) -> Pseudonymizer | None:
        """The pseudonymizer these settings ask for; None when ids are stored as they are.

        The recorder pseudonymizes rows with it; the tenant portal pseudonymizes the session's
        tenant id with it, to find that tenant's rows.
        """
        if self.analytics_pseudonymization_secret_arn:
            from jobhooks.storage.clients import SecretsManagerReader

            provider = SecretsManagerReader(session)
            return SecretKeyPseudonymizer(self.analytics_pseudonymization_secret_arn, provider)
        if self.analytics_pseudonymization_key:
            return StaticKeyPseudonymizer(self.analytics_pseudonymization_key)
        return None
