"""The job filter of a subscription: glob patterns against an outcome's job_name."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from jobhooks.ingest.fan_out import delivery_tasks_for, job_name_of
from jobhooks.subscriptions import EventType, Subscription

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def subscription(subscription_id: str, *patterns: str, tenant: str = "acme") -> Subscription:
    return Subscription(
        subscription_id=subscription_id,
        tenant_id=tenant,
        url="https://hooks.example.com/",
        event_types=(EventType.JOB_COMPLETED,),
        job_names=patterns,
        created_at=T0,
        updated_at=T0,
        data_key=b"k",
    )


@pytest.mark.parametrize(
    ("patterns", "job_name", "wanted"),
    [
        ((), "anything", True),
        ((), None, True),
        (("billing-*",), "billing-invoices", True),
        (("billing-*",), "payments", False),
        (("billing-*",), "Billing-invoices", False),  # case matters, as job names are ids
        (("nightly-?", "audit"), "nightly-1", True),
        (("nightly-?", "audit"), "audit", True),
        (("nightly-?", "audit"), "nightly-12", False),
        (("*",), None, False),  # an unmeasured job name matches no filter
    ],
)
def test_a_job_filter_admits_only_matching_job_names(
    patterns: tuple[str, ...], job_name: str | None, wanted: bool
) -> None:
    assert subscription("sub_a", *patterns).wants_job(job_name) is wanted


def test_fan_out_makes_tasks_only_for_subscriptions_whose_filter_matches() -> None:
    subscriptions = [
        subscription("sub_billing", "billing-*"),
        subscription("sub_reports", "nightly-report"),
        subscription("sub_all"),
    ]
    tasks = delivery_tasks_for(
        event_id="e1",
        tenant_id="acme",
        event_type="job.completed",
        payload="{}",
        subscriptions=subscriptions,
        job_name="billing-refunds",
    )
    assert [task.subscription_id for task in tasks] == ["sub_billing", "sub_all"]


def test_a_stored_payload_gives_back_its_job_name_unless_unmeasured() -> None:
    measured = '{"type":"job.completed","data":{"job_name":"billing","unmeasured":[]}}'
    unmeasured = '{"type":"job.failed","data":{"job_name":"unknown","unmeasured":["job_name"]}}'
    assert job_name_of(measured) == "billing"
    assert job_name_of(unmeasured) is None
