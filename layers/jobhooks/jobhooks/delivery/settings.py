"""The deliver function's configuration (docs/architecture.md, "Environment")."""

from pydantic import Field

from jobhooks.delivery.post_settings import WebhookPostSettings as WebhookPostSettings
from jobhooks.endpoint_health.settings import EndpointHealthSettings


class DeliverSettings(WebhookPostSettings, EndpointHealthSettings):
    """Read once at cold start: `DeliverSettings.from_env()` names any bad `JOBHOOKS_*` variable.

    With the endpoint-health rules' settings (`EndpointHealthSettings`: thresholds, and where
    notifications go), since the deliver function settles attempts."""

    deliveries_table: str = Field(min_length=1)
    subscriptions_table: str = Field(min_length=1)
    # Read by the duplicate check: a delivery whose first attempt (ingest's) succeeded has no
    # record, only an entry in the page its event's claim names (`delivery.history`).
    claims_table: str = Field(min_length=1)
    first_attempts_table: str = Field(min_length=1)
    delivery_queue_url: str = Field(min_length=1)
    delivery_dlq_url: str = Field(min_length=1)
    # How long a warm function reuses a subscription it read: saves one read per delivery. A
    # disable or a secret rotation made elsewhere is seen this much later (0 turns it off).
    subscription_cache_seconds: float = Field(30, ge=0, le=300)
    # At most this many POSTs at once to one endpoint, and to one tenant's endpoints, of the
    # function's `delivery_concurrency`: a tenant's slow endpoints never hold every worker; a
    # record over its cap waits for its own tenant's POSTs, holding no worker.
    delivery_max_per_endpoint: int = Field(4, ge=1, le=100)
    delivery_max_per_tenant: int = Field(5, ge=1, le=100)
