"""The fan-out decided before an event's claim: one mapping of the event gives both the bytes
receivers get and the outcome the analytics row is built from."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome_models import Outcome, to_outcome, to_webhook
from jobhooks.ingest.fan_out_plan import plan_fan_out
from jobhooks.subscriptions.model import EventType, Subscription
from jobhooks_tools.sample_events import demo_key, make_job_event

T = 1_783_965_852
AT = datetime.fromtimestamp(T + 1, UTC)
RELEASE = "fetcher@2.0.2"
HOOK = Subscription(
    subscription_id="sub_acme_1",
    tenant_id="acme",
    url="https://example.com/hook",
    event_types=(EventType.JOB_COMPLETED, EventType.JOB_FAILED),
    created_at=AT,
    updated_at=AT,
    data_key=b"",
)


class Subscriptions:
    def matching(self, tenant_id: str, event_type: str) -> Sequence[Subscription]:
        return [HOOK] if HOOK.wants(tenant_id, event_type) else []


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_the_payload_is_the_webhook_model_s_bytes_and_the_outcome_its_data(status: str) -> None:
    raw = make_job_event(demo_key(), status=status, tenant_id="acme", timestamp=T).forwarded()
    event = read_forwarded_message(raw.to_json(), VerificationPolicy(keys=[demo_key()]), AT)

    planned = plan_fan_out(
        event, batch_id="batch-1", subscriptions=Subscriptions(), producer_release=RELEASE
    )

    webhook = to_webhook(event, release=RELEASE)
    assert planned.plan.payload == webhook.model_dump_json(exclude_none=True)
    assert [task.payload for task in planned.tasks] == [planned.plan.payload]
    assert Outcome.model_validate(planned.outcome) == to_outcome(event, release=RELEASE)
    assert planned.plan.subscription_ids == ("sub_acme_1",)
    assert planned.subscriptions == (HOOK,)
