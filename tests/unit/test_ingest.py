"""Ingest's pure parts: settings, the inbound record, delivery tasks, keys, quarantine ids, EMF."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryResult,
    FailureClass,
)
from jobhooks.delivery_queue import MAX_BATCH_BYTES, _chunks
from jobhooks.delivery_task import DeliveryTask, InvalidDeliveryTaskError, delivery_id_for
from jobhooks.inbound.rejection import Reason
from jobhooks.ingest.exceptions import ClaimLostError, FetcherKeysUnavailableError
from jobhooks.ingest.fan_out import delivery_tasks_for
from jobhooks.ingest.fetcher_keys import SecretKeys
from jobhooks.ingest.inbound import InboundMessage, claimed_event_id
from jobhooks.ingest.model import (
    ClaimState,
    EventRecord,
    IngestOutcome,
    IngestResult,
    QuarantinedMessage,
)
from jobhooks.ingest.quarantine import quarantine_id_for
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.telemetry import PowertoolsTelemetry
from jobhooks.settings import ConfigurationError
from jobhooks.subscriptions import EventType, Subscription
from jobhooks_tools.sample_events import demo_key, make_job_event

NOW = datetime(2026, 7, 13, 18, 4, 12, 345000, tzinfo=UTC)
REQUIRED = {
    "JOBHOOKS_CLAIMS_TABLE": "claims",
    "JOBHOOKS_SUBSCRIPTIONS_TABLE": "subscriptions",
    "JOBHOOKS_QUARANTINE_TABLE": "quarantine",
    "JOBHOOKS_DELIVERY_QUEUE_URL": "http://127.0.0.1:5000/123456789012/delivery",
    "JOBHOOKS_FETCHER_KEYS_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:k",
}


# -------------------------------------------------------------------------- settings


def test_settings_have_the_documented_defaults() -> None:
    settings = IngestSettings.from_env(REQUIRED)

    assert settings.dedup_retention_seconds == 7 * 86400
    assert settings.quarantine_retention_seconds == 30 * 86400
    assert settings.claim_lease_max_seconds == 120
    assert settings.subscription_cache_seconds == 30
    assert settings.verification_policy(keys=()).max_age_seconds == 7 * 86400


def test_settings_read_the_ce_source_allowlist() -> None:
    assert IngestSettings.from_env(REQUIRED).verification_policy(keys=()).allowed_sources == (
        frozenset()
    )
    environ = {**REQUIRED, "JOBHOOKS_ALLOWED_SOURCES": " //lerian.fetcher/worker ,//b/worker"}
    policy = IngestSettings.from_env(environ).verification_policy(keys=())
    assert policy.allowed_sources == frozenset({"//lerian.fetcher/worker", "//b/worker"})
    assert policy.max_emission_lag_seconds == policy.max_age_seconds == 7 * 86400


@pytest.mark.parametrize("value", ["//a,,//b", "//a,", "//a\t/b", "//" + "x" * 300])
def test_settings_report_a_bad_allowlist_on_its_own_variable(value: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        IngestSettings.from_env({**REQUIRED, "JOBHOOKS_ALLOWED_SOURCES": value})

    assert str(raised.value).startswith("JOBHOOKS_ALLOWED_SOURCES:")


def test_claims_are_kept_the_freshness_window_plus_the_ingest_queue_retention() -> None:
    default = IngestSettings.from_env(REQUIRED)
    assert default.ingest_queue_retention_seconds == 4 * 86400  # template.yaml's IngestQueue
    # 7 + 4 days, raised to the 30 days deliveries are kept: the claim resolves their ids.
    assert default.claim_retention_seconds == 30 * 86400

    changed = IngestSettings.from_env(
        {
            **REQUIRED,
            "JOBHOOKS_DEDUP_RETENTION_DAYS": "30",
            "JOBHOOKS_INGEST_QUEUE_RETENTION_SECONDS": "86400",
        }
    )
    assert changed.claim_retention_seconds == 31 * 86400
    # Deliveries kept longer (AttemptLogDays): so are the claims that lead to them.
    longer = IngestSettings.from_env({**REQUIRED, "JOBHOOKS_ATTEMPT_LOG_DAYS": "90"})
    assert longer.claim_retention_seconds == 90 * 86400
    with pytest.raises(ConfigurationError, match="JOBHOOKS_INGEST_QUEUE_RETENTION_SECONDS"):
        IngestSettings.from_env({**REQUIRED, "JOBHOOKS_INGEST_QUEUE_RETENTION_SECONDS": "0"})


def test_settings_name_every_missing_variable() -> None:
    with pytest.raises(ConfigurationError) as raised:
        IngestSettings.from_env({})

    text = str(raised.value)
    for name in (
        "JOBHOOKS_CLAIMS_TABLE",
        "JOBHOOKS_SUBSCRIPTIONS_TABLE",
        "JOBHOOKS_QUARANTINE_TABLE",
        "JOBHOOKS_DELIVERY_QUEUE_URL",
    ):
        assert name in text
    assert "JOBHOOKS_FETCHER_KEYS_SECRET_ARN: " in text
    assert "JOBHOOKS_FETCHER_HMAC_KEYS" in text


def test_settings_accept_keys_given_directly() -> None:
    environ = {k: v for k, v in REQUIRED.items() if k != "JOBHOOKS_FETCHER_KEYS_SECRET_ARN"}
    environ["JOBHOOKS_FETCHER_HMAC_KEYS"] = demo_key().hex

    assert IngestSettings.from_env(environ).fetcher_hmac_keys == demo_key().hex


def test_settings_report_a_bad_key_list_on_its_own_variable() -> None:
    environ = {k: v for k, v in REQUIRED.items() if k != "JOBHOOKS_FETCHER_KEYS_SECRET_ARN"}
    environ["JOBHOOKS_FETCHER_HMAC_KEYS"] = "abc"

    with pytest.raises(ConfigurationError) as raised:
        IngestSettings.from_env(environ)

    assert str(raised.value).startswith("JOBHOOKS_FETCHER_HMAC_KEYS:")
    assert "FETCHER_KEYS_SECRET_ARN" not in str(raised.value)


def test_settings_bound_the_lease_by_lambdas_maximum_timeout() -> None:
    with pytest.raises(ConfigurationError, match="JOBHOOKS_CLAIM_LEASE_MAX_SECONDS"):
        IngestSettings.from_env({**REQUIRED, "JOBHOOKS_CLAIM_LEASE_MAX_SECONDS": "901"})


# -------------------------------------------------------------------------- inbound record


def test_the_receipt_clock_is_sqs_sent_timestamp() -> None:
    record = {
        "messageId": "m-1",
        "body": "{}",
        "attributes": {"SentTimestamp": "1783965852345", "ApproximateReceiveCount": "3"},
    }

    message = InboundMessage.from_lambda_record(record)

    assert message.sent_at == datetime(2026, 7, 13, 18, 4, 12, 345000, tzinfo=UTC)
    assert (message.message_id, message.body, message.replay_of) == ("m-1", "{}", None)


def test_a_record_without_sent_timestamp_uses_the_fallback_clock() -> None:
    message = InboundMessage.from_lambda_record(
        {"messageId": "m", "body": "x", "attributes": {"SentTimestamp": "soon"}},
        fallback_clock=NOW,
    )

    assert message.sent_at == NOW


# -------------------------------------------------------------------------- delivery tasks


def subscription(tenant_id: str, n: int = 1) -> Subscription:
    return Subscription(
        subscription_id=f"sub_{tenant_id}_{n}",
        tenant_id=tenant_id,
        url="https://example.com/hook",
        event_types=(EventType.JOB_COMPLETED,),
        created_at=NOW,
        updated_at=NOW,
        data_key=b"",
    )


def test_one_task_per_subscription_of_the_events_tenant_only() -> None:
    tasks = delivery_tasks_for(
        event_id="fetcher.job.completed.j",
        tenant_id="acme",
        event_type="job.completed",
        payload='{"type":"job.completed"}',
        subscriptions=[subscription("acme", 1), subscription("globex"), subscription("acme", 2)],
    )

    assert [task.subscription_id for task in tasks] == ["sub_acme_1", "sub_acme_2"]
    for task in tasks:
        assert task.delivery_id == delivery_id_for("fetcher.job.completed.j", task.subscription_id)
        assert (task.tenant_id, task.payload, task.replay) == (
            "acme",
            '{"type":"job.completed"}',
            False,
        )


def test_a_replayed_fan_out_marks_its_tasks_as_replays() -> None:
    (task,) = delivery_tasks_for(
        event_id="e",
        tenant_id="acme",
        event_type="job.completed",
        payload="{}",
        subscriptions=[subscription("acme")],
        replay=True,
    )

    assert task.replay is True


def test_a_task_on_the_wire_is_ascii_and_gives_back_the_exact_payload() -> None:
    # Noncharacters, a control character, an astral character: SQS refuses the first three.
    payload = '{"note":"a\ufffeb\uffffc\u0007d\U0001f680","type":"job.failed"}'
    (task,) = delivery_tasks_for(
        event_id="e",
        tenant_id="acme",
        event_type="job.failed",
        payload=payload,
        subscriptions=[subscription("acme")],
    )

    wire = task.to_json()
    assert wire.isascii()
    assert DeliveryTask.from_json(wire) == task
    assert DeliveryTask.from_json(wire).payload.encode() == payload.encode()
    # `attempts_made` 0 is left out: the task reads exactly as it did before the field.
    assert json.loads(wire) == json.loads(task.model_dump_json(exclude={"attempts_made"}))


def test_a_task_after_a_failed_first_attempt_carries_its_attempts_on_the_wire() -> None:
    (task,) = delivery_tasks_for(
        event_id="e",
        tenant_id="acme",
        event_type="job.failed",
        payload="{}",
        subscriptions=[subscription("acme")],
    )
    retry = task.model_copy(update={"attempts_made": 1})

    assert json.loads(retry.to_json())["attempts_made"] == 1
    assert DeliveryTask.from_json(retry.to_json()).attempts_made == 1
    assert DeliveryTask.from_json(task.to_json()).attempts_made == 0
    with pytest.raises(InvalidDeliveryTaskError):
        DeliveryTask.from_json(task.to_json()[:-1] + ',"attempts_made":-1}')


def test_batches_hold_at_most_ten_entries_and_one_mebibyte() -> None:
    small = [(None, "x" * 10)] * 23
    assert [len(chunk) for chunk in _chunks(small)] == [10, 10, 3]  # type: ignore[arg-type]
    big = [(None, "x" * (MAX_BATCH_BYTES // 3))] * 7
    assert [len(chunk) for chunk in _chunks(big)] == [3, 3, 1]  # type: ignore[arg-type]


# -------------------------------------------------------------------------- quarantine ids


def test_quarantine_ids_are_stable_per_sqs_delivery_and_new_per_replay() -> None:
    first = quarantine_id_for("m-1", NOW)

    assert first == quarantine_id_for("m-1", NOW)
    assert first.startswith("q_")
    assert first != quarantine_id_for("m-1", NOW.replace(second=13))
    assert first != quarantine_id_for("m-2", NOW)


def test_the_claimed_event_id_is_read_when_the_envelope_can_be() -> None:
    event = make_job_event(demo_key(), job_id="job-7")

    assert claimed_event_id(event.forwarded().to_json()) == "fetcher.job.completed.job-7"
    assert claimed_event_id("not json") is None
    legacy = make_job_event(demo_key(), legacy=True)
    assert claimed_event_id(legacy.forwarded().to_json()) is None


# -------------------------------------------------------------------------- keys secret


class FakeProvider:
    """Stands in for Powertools' SecretsProvider: a cached value and a forced re-read."""

    def __init__(self, value: Any) -> None:
        self.stored = value
        self.cached = value
        self.forced = 0

    def get(self, name: str, *, max_age: int | None = None, force_fetch: bool = False) -> Any:
        if isinstance(self.stored, Exception):
            raise self.stored
        if force_fetch:
            self.forced += 1
            self.cached = self.stored
        return self.cached


def test_secret_keys_are_re_read_at_most_once_per_interval() -> None:
    clock = [0.0]
    provider = FakeProvider(demo_key().hex)
    keys = SecretKeys("arn", provider, refresh_interval=10, monotonic=lambda: clock[0])
    assert keys.keys() == (demo_key(),)
    provider.stored = f"{'11' * 32},{demo_key().hex}"

    assert keys.refresh() is True
    assert len(keys.keys()) == 2
    assert keys.refresh() is False  # within the interval: no call at all
    clock[0] = 11
    assert keys.refresh() is False  # re-read, unchanged
    assert provider.forced == 2


def test_an_unusable_secret_is_a_configuration_error_that_shows_no_key_material() -> None:
    secret = "REPLACE_ME_" + "ab" * 20
    keys = SecretKeys("arn", FakeProvider(secret))

    with pytest.raises(FetcherKeysUnavailableError) as raised:
        keys.keys()

    assert raised.value.code == "fetcher_keys_unavailable"
    assert "ab" * 20 not in str(raised.value)


def test_an_unusable_cached_secret_is_read_again_at_most_once_per_interval() -> None:
    # The operator replaces the placeholder: the next invocation must not wait out the
    # Powertools cache (300 s) before it can verify anything, nor hammer Secrets Manager.
    clock = [0.0]
    provider = FakeProvider("REPLACE_ME_WITH_jobhooks_keys_derive_OUTPUT")
    keys = SecretKeys("arn", provider, refresh_interval=10, monotonic=lambda: clock[0])
    with pytest.raises(FetcherKeysUnavailableError):
        keys.keys()
    assert provider.forced == 1
    with pytest.raises(FetcherKeysUnavailableError):
        keys.keys()  # within the interval: the cached value, no second read
    assert provider.forced == 1

    provider.stored = demo_key().hex
    clock[0] = 11

    assert keys.keys() == (demo_key(),)
    assert provider.forced == 2


def test_an_unreadable_secret_names_the_aws_error() -> None:
    from botocore.exceptions import ClientError

    # What Powertools raises: the ClientError only as the implicit context.
    wrapped = GetParameterError("An error occurred (AccessDeniedException)")
    wrapped.__context__ = ClientError({"Error": {"Code": "AccessDeniedException"}}, "Get")
    keys = SecretKeys("arn", FakeProvider(wrapped))

    with pytest.raises(FetcherKeysUnavailableError, match="AccessDeniedException"):
        keys.keys()


# -------------------------------------------------------------------------- metrics


def emf_blobs(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"_aws"')]


def _report_one_rejection_and_one_unmatched_event(
    telemetry: PowertoolsTelemetry, *, end_batch: bool = True
) -> None:
    telemetry.record_started(InboundMessage("{}", "m", NOW))
    telemetry.rejected(
        QuarantinedMessage(
            quarantine_id="q_1",
            reason=Reason.STALE_TIMESTAMP,
            detail="too old",
            message="{}",
            sqs_message_id="m",
            sent_at=NOW,
            received_at=NOW,
            expires_at=NOW,
        )
    )
    telemetry.accepted(
        EventRecord(
            event_id="e",
            state=ClaimState.DONE,
            tenant_id="acme",
            event_type="job.completed",
            job_id="j",
            claimed_at=NOW,
            expires_at=NOW,
            matched=0,
        )
    )
    if end_batch:
        telemetry.batch_ingested([])  # as the service ends every batch: the counts go out


def test_a_batchs_counts_go_out_once_each_as_their_sums(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # EMF writes one value per add: ten 1.0s per metric and invocation were log bytes for nothing.
    metrics = Metrics(namespace="jobhooks", service="jobhooks-test")
    metrics.clear_metrics()
    telemetry = PowertoolsTelemetry(Logger(service="jobhooks-test"), metrics)
    for n in range(3):
        telemetry.record_started(InboundMessage("{}", f"m{n}", NOW))
    telemetry.batch_ingested([])
    metrics.flush_metrics()

    (totals,) = emf_blobs(capsys.readouterr().out)
    assert totals["Received"] == [3.0]


def test_rejections_are_counted_in_total_and_per_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    metrics = Metrics(namespace="jobhooks", service="jobhooks-test")
    metrics.clear_metrics()  # one store per process: start from an empty one
    telemetry = PowertoolsTelemetry(Logger(service="jobhooks-test"), metrics)

    _report_one_rejection_and_one_unmatched_event(telemetry)
    metrics.flush_metrics()

    blobs = emf_blobs(capsys.readouterr().out)
    by_reason = [blob for blob in blobs if "reason" in blob]
    assert [(b["reason"], b["service"], b["Rejected"]) for b in by_reason] == [
        ("stale_timestamp", "jobhooks-test", [1.0])
    ]
    (totals,) = [blob for blob in blobs if "reason" not in blob]
    assert totals["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    for name, value in (
        ("Received", 1.0),
        ("Rejected", 1.0),
        ("Accepted", 1.0),
        ("DeliveriesEnqueued", 0.0),
        ("Unmatched", 1.0),
    ):
        assert totals[name] == [value], name


def test_nothing_is_counted_while_metrics_are_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    # Powertools never clears its per-process store while metrics are disabled (`jobhooks dev`,
    # in-process replays): whatever was added would surface in a later, enabled flush.
    metrics = Metrics(namespace="jobhooks", service="jobhooks-test")
    metrics.clear_metrics()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    _report_one_rejection_and_one_unmatched_event(
        PowertoolsTelemetry(Logger(service="jobhooks-test"), metrics)
    )

    assert metrics.provider.metric_set == {}


def test_an_invocation_logs_one_info_line_naming_its_accepted_events(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics(namespace="jobhooks", service="jobhooks-test")
    metrics.clear_metrics()
    telemetry = PowertoolsTelemetry(Logger(service="jobhooks-test", level="INFO"), metrics)
    caplog.set_level("INFO")
    _report_one_rejection_and_one_unmatched_event(telemetry, end_batch=False)

    telemetry.batch_ingested(
        [
            IngestResult(IngestOutcome.ACCEPTED, event_id="e1", deliveries=2),
            IngestResult(IngestOutcome.ACCEPTED, event_id="e2", deliveries=1),
            IngestResult(IngestOutcome.DUPLICATE, event_id="e1"),
            IngestResult(IngestOutcome.REJECTED, reason=Reason.STALE_TIMESTAMP),
            ClaimLostError("e3"),
        ]
    )

    # The accepted event's own line is DEBUG now: the rejection's warning and the batch's line.
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "message rejected and quarantined"),
        ("INFO", "ingest batch done"),
    ]
    batch = caplog.records[-1].__dict__
    assert (batch["accepted"], batch["duplicate"], batch["rejected"], batch["retrying"]) == (
        2,
        1,
        1,
        1,
    )
    assert (batch["deliveries"], batch["accepted_ids"]) == (3, ["e1", "e2"])
    assert batch["duplicate_ids"] == ["e1"]


def test_first_attempts_are_counted_with_the_deliver_functions_metrics_and_in_the_batch_line(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics(namespace="jobhooks", service="jobhooks-test")
    metrics.clear_metrics()
    telemetry = PowertoolsTelemetry(Logger(service="jobhooks-test", level="INFO"), metrics)
    caplog.set_level("INFO")
    task = delivery_tasks_for(
        event_id="e",
        tenant_id="acme",
        event_type="job.completed",
        payload="{}",
        subscriptions=[subscription("acme")],
    )[0]
    ok = DeliveryAttempt(n=1, at=NOW, status_code=200, latency_ms=12)
    boom = DeliveryAttempt(n=1, at=NOW, status_code=503, latency_ms=30)
    batch = (
        DeliveryOutcome(DeliveryResult.SUCCEEDED, task.delivery_id, ok),
        DeliveryOutcome(
            DeliveryResult.RETRY_SCHEDULED, task.delivery_id, boom, FailureClass.HTTP_5XX, 5
        ),
        DeliveryOutcome(DeliveryResult.NOT_STARTED, task.delivery_id),
    )

    telemetry.first_attempts_made(batch)
    telemetry.batch_ingested([], first_attempts=batch)
    metrics.flush_metrics()

    blobs = emf_blobs(capsys.readouterr().out)
    (totals,) = [blob for blob in blobs if "failure_class" not in blob]
    assert totals["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    assert (totals["DeliveryAttempts"], totals["DeliverySucceeded"]) == ([2.0], [1.0])
    assert totals["DeliveryFailed"] == [1.0]
    assert sorted(totals["DeliveryLatency"]) == [12.0, 30.0]
    [by_class] = [blob for blob in blobs if "failure_class" in blob]
    assert (by_class["failure_class"], by_class["DeliveryFailed"]) == ("http_5xx", [1.0])
    [line] = [r for r in caplog.records if r.getMessage() == "ingest batch done"]
    counts = {
        name: getattr(line, name)
        for name in ("first_attempts_succeeded", "first_attempts_failed", "first_attempts_skipped")
    }
    assert counts == {
        "first_attempts_succeeded": 1,
        "first_attempts_failed": 1,
        "first_attempts_skipped": 1,
    }
