"""A delivery's ids are derived from its event and subscription, and must never change: the
deliver side deduplicates by `delivery_id`, the attempt log and first-attempt pages are keyed by
it, and receivers deduplicate by `webhook-id`. Ingest derives the event's share once per event
(`delivery_tasks_for_subscriptions`); these hold every path to the ids as first written."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobhooks.delivery_task import (
    DeliveryTask,
    delivery_id_for,
    delivery_task_for,
    delivery_tasks_for_subscriptions,
    parse_delivery_id,
    subscription_tag,
)
from jobhooks.ingest.fan_out import delivery_tasks_for
from jobhooks.subscriptions.model import EventType, Subscription
from jobhooks.webhook_signature import webhook_id_for

from tests.depth import examples

JOB = "0197a3f2-7c1e-7d33-9a51-000000000001"


# The ids as they were first written, kept as the specification a faster derivation must meet.
def written_delivery_id(event_id: str, subscription_id: str) -> str:
    def base64url(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

    tag = base64url(hashlib.sha256(subscription_id.encode("utf-8")).digest()[:6])
    match = re.fullmatch(r"fetcher\.job\.(completed|failed)\.([0-9a-f-]{36})", event_id)
    if match is not None:
        status, job_id = match.groups()
        with contextlib.suppress(ValueError):
            job_uuid = uuid.UUID(job_id)
            if str(job_uuid) == job_id:
                return f"dlv_{status[0]}{base64url(job_uuid.bytes)}.{tag}"
    return f"dlv_e{base64url(event_id.encode('utf-8'))}.{tag}"


def written_webhook_id(event_id: str) -> str:
    return "msg_" + hashlib.sha256(event_id.encode("utf-8")).hexdigest()[:32]


def written_task(
    event_id: str, subscription_id: str, *, tenant_id: str, event_type: str, payload: str
) -> DeliveryTask:
    return DeliveryTask(
        delivery_id=written_delivery_id(event_id, subscription_id),
        event_id=event_id,
        webhook_id=written_webhook_id(event_id),
        subscription_id=subscription_id,
        tenant_id=tenant_id,
        event_type=event_type,
        payload=payload,
    )


def _uuid_texts(value: uuid.UUID) -> list[str]:
    hex32 = value.hex
    canonical = str(value)
    mixed = "".join(c.upper() if n % 2 else c for n, c in enumerate(canonical))
    return [
        canonical,
        canonical.upper(),
        mixed,
        hex32,
        hex32 + "----",  # 36 characters of hex and hyphens, not the canonical form
        "-" * 4 + hex32,
        f"{{{canonical}}}",
        f"urn:uuid:{canonical}",
        canonical[:8] + canonical[9:13] + "-" + canonical[8] + canonical[13:],  # hyphen moved
    ]


@st.composite
def near_canonical_uuids(draw: st.DrawFn) -> str:
    """A UUID's canonical text with one small change: what a looser check would let through."""
    text = str(draw(st.uuids()))
    change = draw(st.sampled_from(["upper group", "replace", "insert", "delete"]))
    if change == "upper group":
        groups = text.split("-")
        at = draw(st.integers(0, len(groups) - 1))
        groups[at] = groups[at].upper()
        return "-".join(groups)
    at = draw(st.integers(0, len(text) - 1))
    char = draw(st.sampled_from("0123456789abcdefABCDEF-{}:gG \n"))
    if change == "replace":
        return text[:at] + char + text[at + 1 :]
    if change == "insert":
        return text[:at] + char + text[at:]
    return text[:at] + text[at + 1 :]


uuid_texts = st.one_of(
    st.uuids().map(str),
    st.uuids().flatmap(lambda value: st.sampled_from(_uuid_texts(value))),
    near_canonical_uuids(),
    st.text(alphabet="0123456789abcdefABCDEF-", min_size=34, max_size=38),
)
event_ids = st.one_of(
    st.builds("fetcher.job.{}.{}".format, st.sampled_from(["completed", "failed"]), uuid_texts),
    st.builds(
        "fetcher.job.{}.{}".format, st.sampled_from(["started", "Completed", ""]), uuid_texts
    ),
    st.text(),
    st.text().map(lambda tail: f"fetcher.job.completed.{JOB}{tail}"),
)
subscription_ids = st.one_of(st.text(), st.from_regex(r"sub_[0-9A-Za-z]{26}", fullmatch=True))
texts = st.text(max_size=40)


@pytest.mark.parametrize(
    ("event_id", "subscription_id", "delivery_id"),
    [
        (f"fetcher.job.completed.{JOB}", "sub_Ab-_9", "dlv_cAZej8nwefTOaUQAAAAAAAQ.V2ymDUFC"),
        (f"fetcher.job.failed.{JOB}", "sub_Ab-_9", "dlv_fAZej8nwefTOaUQAAAAAAAQ.V2ymDUFC"),
        (
            f"fetcher.job.failed.{JOB.upper()}",
            "sub_Ab-_9",
            "dlv_eZmV0Y2hlci5qb2IuZmFpbGVkLjAxOTdBM0YyLTdDMUUtN0QzMy05QTUxLTAwMDAwMDAwMDAwMQ"
            ".V2ymDUFC",
        ),
        (
            "fetcher.job.failed.0197a3f27c1e7d339a51000000000001----",
            "sub_Ab-_9",
            "dlv_eZmV0Y2hlci5qb2IuZmFpbGVkLjAxOTdhM2YyN2MxZTdkMzM5YTUxMDAwMDAwMDAwMDAxLS0tLQ"
            ".V2ymDUFC",
        ),
        ("other.é.1", "sub_Ab-_9", "dlv_eb3RoZXIuw6kuMQ.V2ymDUFC"),
    ],
)
def test_a_delivery_id_is_the_one_it_always_was(
    event_id: str, subscription_id: str, delivery_id: str
) -> None:
    assert delivery_id_for(event_id, subscription_id) == delivery_id
    (task,) = delivery_tasks_for_subscriptions(
        event_id=event_id,
        tenant_id="ten_1",
        event_type="fetcher.job.failed",
        payload="{}",
        subscription_ids=[subscription_id],
    )
    assert task.delivery_id == delivery_id


def test_a_task_s_message_body_is_the_one_it_always_was() -> None:
    task = delivery_task_for(
        event_id=f"fetcher.job.completed.{JOB}",
        tenant_id="ten_1",
        event_type="fetcher.job.completed",
        payload='{"a":"\u00e9\ufffe"}',
        subscription_id="sub_Ab-_9",
    )
    assert task.to_json() == (
        '{"format":"jobhooks.delivery/1","delivery_id":"dlv_cAZej8nwefTOaUQAAAAAAAQ.V2ymDUFC",'
        f'"event_id":"fetcher.job.completed.{JOB}",'
        '"webhook_id":"msg_e7f6b1d9cfd390a0c58084413580ca34","subscription_id":"sub_Ab-_9",'
        '"tenant_id":"ten_1","event_type":"fetcher.job.completed",'
        '"payload":"{\\"a\\":\\"\\u00e9\\ufffe\\"}","replay":false}'
    )


def _near_misses() -> list[str]:
    job = "0197a3f2-7c1e-7d33-9a51-0000000abcde"  # a letter in every group
    groups = job.split("-")
    upper = ["-".join(g.upper() if n == at else g for n, g in enumerate(groups)) for at in range(5)]
    hyphens = [at for at, char in enumerate(job) if char == "-"]
    hyphen_moved = [job[:at] + job[at + 1] + "-" + job[at + 2 :] for at in hyphens]
    hyphen_dropped = [job[:at] + job[at + 1 :] for at in hyphens]
    # A hyphen for the first digit of each group: still 36 characters of hex and hyphens.
    digit_to_hyphen = [job[: at + 1] + "-" + job[at + 2 :] for at in [-1, *hyphens]]
    return [
        *upper,
        *hyphen_moved,
        *hyphen_dropped,
        *digit_to_hyphen,
        job.replace("-", "") + "0000",
        job[:-1] + "g",
        job + "\n",
    ]


@pytest.mark.parametrize("job_id", _near_misses())
def test_only_the_canonical_uuid_text_is_carried_as_bytes(job_id: str) -> None:
    event_id = f"fetcher.job.completed.{job_id}"
    assert delivery_id_for(event_id, "sub_a") == written_delivery_id(event_id, "sub_a")
    assert delivery_id_for(event_id, "sub_a").startswith("dlv_e")


@settings(max_examples=examples(300))
@given(st.sampled_from(["completed", "failed"]), uuid_texts, subscription_ids)
def test_fetcher_delivery_ids_are_derived_as_first_written(
    status: str, job_id: str, subscription_id: str
) -> None:
    event_id = f"fetcher.job.{status}.{job_id}"
    assert delivery_id_for(event_id, subscription_id) == written_delivery_id(
        event_id, subscription_id
    )


@settings(max_examples=examples(200))
@given(event_ids, subscription_ids)
def test_delivery_ids_are_derived_as_first_written(event_id: str, subscription_id: str) -> None:
    delivery_id = delivery_id_for(event_id, subscription_id)
    assert delivery_id == written_delivery_id(event_id, subscription_id)
    assert subscription_tag(subscription_id) == delivery_id.rpartition(".")[2]
    named = parse_delivery_id(delivery_id)
    if event_id:  # an empty ce-id has no event part to read back
        assert named is not None
        assert named.event_id == event_id
        assert named.is_for(subscription_id)


@given(event_ids, st.lists(subscription_ids, max_size=8), texts, texts, texts)
def test_an_event_s_tasks_are_the_tasks_built_one_by_one(
    event_id: str, subscriptions: list[str], tenant_id: str, event_type: str, payload: str
) -> None:
    fields = {"tenant_id": tenant_id, "event_type": event_type, "payload": payload}
    tasks = delivery_tasks_for_subscriptions(
        event_id=event_id, subscription_ids=subscriptions, **fields
    )
    expected = [written_task(event_id, s, **fields) for s in subscriptions]
    assert list(tasks) == expected
    assert [task.to_json() for task in tasks] == [task.to_json() for task in expected]
    assert [task.model_dump() for task in tasks] == [task.model_dump() for task in expected]
    assert {task.webhook_id for task in tasks} <= {webhook_id_for(event_id)}
    for subscription_id in subscriptions:
        single = delivery_task_for(event_id=event_id, subscription_id=subscription_id, **fields)
        assert single.to_json() == written_task(event_id, subscription_id, **fields).to_json()


AT = "2026-12-07T00:00:00Z"


def subscription(subscription_id: str, tenant_id: str = "acme") -> Subscription:
    return Subscription.model_validate(
        {
            "subscription_id": subscription_id,
            "tenant_id": tenant_id,
            "url": "https://example.com/hook",
            "event_types": [EventType.JOB_COMPLETED],
            "job_names": ["nightly-*"] if subscription_id.endswith("filtered") else [],
            "created_at": AT,
            "updated_at": AT,
            "data_key": b"",
        }
    )


@pytest.mark.parametrize("replay", [False, True])
def test_fan_out_keeps_the_order_the_tenant_and_the_job_filter(replay: bool) -> None:
    event_id = f"fetcher.job.completed.{JOB}"
    matched = [
        subscription("sub_b"),
        subscription("sub_other_tenant", tenant_id="globex"),
        subscription("sub_filtered"),
        subscription("sub_a"),
    ]
    tasks = delivery_tasks_for(
        event_id=event_id,
        tenant_id="acme",
        event_type="fetcher.job.completed",
        payload="{}",
        subscriptions=matched,
        job_name="weekly",
        replay=replay,
    )
    expected = [
        written_task(
            event_id, s, tenant_id="acme", event_type="fetcher.job.completed", payload="{}"
        ).model_copy(update={"replay": replay})
        for s in ("sub_b", "sub_a")
    ]
    assert list(tasks) == expected
    assert [task.to_json() for task in tasks] == [task.to_json() for task in expected]
    assert all(task.replay is replay for task in tasks)
