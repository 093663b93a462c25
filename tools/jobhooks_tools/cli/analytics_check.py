"""`jobhooks analytics check`: the background_job_completed contract's validation checklist, run
against a running stack through its real path (docs/analytics.md, "Checking a stack").

The fixture is two signed Fetcher events of a tenant and a job_name of their own (no
subscription wants them: nothing is delivered, and an event no subscription wants is a row all
the same): a completed job with a known duration and a controlled failure, timed one millisecond
apart in a window of two milliseconds. The window holds the fixture's rows alone, so every
reviewed question over it has one answer worked out from the fixture (`expected_answers`), the
whole reconciliation the contract asks for. The completed event is then sent again (a repairer
re-emission: same ce-id, new `t`, signature and ce-time) and must stay one row.

Everything is read back through the management API (`/v1/analytics/rows`, `/questions`), so the
check covers the sink, the table, the engine (DuckDB or Athena) and the API together.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any, Final

from jobhooks.analytics.columns import record_problems
from jobhooks.analytics.pseudonymize import PSEUDONYM_PREFIX
from jobhooks.inbound.keys import HmacKey, KeyConfigurationError, derive_external_key, key_from_hex
from jobhooks.inbound.outcome import format_timestamp
from jobhooks.inbound.sanitize import categorize_error, sanitize_error_message

from jobhooks_tools.cli.analytics_answers import answer_question, list_rows
from jobhooks_tools.cli.api_client import EXIT_USAGE, ApiClient
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.progress import Progress
from jobhooks_tools.sample_events import (
    SOURCE,
    SampleEvent,
    completed_body,
    demo_key,
    failed_body,
    make_job_event,
    re_emit,
)

ROWS_POLL_SECONDS: Final = 2.0
FIXTURE_DURATION_MS: Final = 4321
FAILURE_MESSAGE: Final = "failed to connect to datasource crm: connection refused"
# The fixture's outcomes happened a minute before the check: after the outcome boundary, and
# inside every freshness window.
FIXTURE_AGE: Final = timedelta(minutes=1)


@dataclass(frozen=True)
class Fixture:
    key: HmacKey
    tenant_id: str
    job_name: str
    completed_job_id: str
    failed_job_id: str
    completed_at: datetime
    signed_at: int

    @classmethod
    def new(cls, key: HmacKey, *, now: datetime) -> Fixture:
        nonce = uuid.uuid4().hex[:12]
        at = now - FIXTURE_AGE
        at = at.replace(microsecond=at.microsecond // 1000 * 1000)
        if at.hour == 23 and at.minute == 59 and at.second == 59:
            at -= timedelta(seconds=2)  # both outcomes on one UTC day
        return cls(
            key=key,
            tenant_id=f"jobhooks-check-{nonce}",
            job_name=f"jobhooks_check_{nonce}",
            completed_job_id=f"check-{nonce}-completed",
            failed_job_id=f"check-{nonce}-failed",
            completed_at=at,
            signed_at=int(now.timestamp()),
        )

    @property
    def failed_at(self) -> datetime:
        return self.completed_at + timedelta(milliseconds=1)

    @property
    def window(self) -> tuple[str, str]:
        """[from, to): the two outcomes' milliseconds, and nothing else."""
        return (
            format_timestamp(self.completed_at),
            format_timestamp(self.completed_at + timedelta(milliseconds=2)),
        )

    @property
    def error_category(self) -> str:
        # The category ingest gives the failure: the one rule, not a copy of it.
        return categorize_error(sanitize_error_message(FAILURE_MESSAGE))

    def completed(self) -> SampleEvent:
        return make_job_event(
            self.key,
            status="completed",
            tenant_id=self.tenant_id,
            job_id=self.completed_job_id,
            timestamp=self.signed_at,
            body=completed_body(
                self.completed_job_id,
                source=self.job_name,
                execution_ms=FIXTURE_DURATION_MS,
                completed_at=format_timestamp(self.completed_at),
            ),
        )

    def failed(self) -> SampleEvent:
        # A failure's outcome time is its ce-time (the body has none).
        return make_job_event(
            self.key,
            status="failed",
            tenant_id=self.tenant_id,
            job_id=self.failed_job_id,
            timestamp=self.signed_at,
            emitted_at=self.failed_at,
            body=failed_body(self.failed_job_id, source=self.job_name, message=FAILURE_MESSAGE),
        )

    def resent(self) -> SampleEvent:
        """The completed event again as the producer's repairer re-emits it."""
        return re_emit(self.completed(), self.key, timestamp=self.signed_at + 1)

    def expected_rows(self) -> dict[str, dict[str, Any]]:
        """By status, the values every row must have (identities are checked apart)."""
        common = {"job_name": self.job_name, "queue_name": SOURCE, "attempt_count": 1}
        return {
            "success": {
                **common,
                "timestamp_utc": format_timestamp(self.completed_at),
                "queue_wait_ms": 0,
                "duration_ms": FIXTURE_DURATION_MS,
                "error_category": None,
            },
            "failure": {
                **common,
                "timestamp_utc": format_timestamp(self.failed_at),
                "queue_wait_ms": 0,
                "duration_ms": 0,
                "error_category": self.error_category,
            },
        }

    def expected_answers(self, account_id: str) -> dict[str, list[list[Any]]]:
        """Every reviewed question's rows over `window`, worked out from the fixture:
        2 outcomes of one job_name and one account, 1 failure, 1 measured duration."""
        day, job = self.completed_at.date().isoformat(), self.job_name
        duration = FIXTURE_DURATION_MS
        return {
            "daily_outcomes": [[day, 2, 1, 1, 0.5]],
            "failure_categories": [[self.error_category, job, 1]],
            "failure_rate_by_account": [[account_id, 2, 1, 0.5]],
            "failure_rate_by_job": [[job, 2, 1, 0.5]],
            "job_health_over_time": [[day, job, 2, 1, 0.5, 1, duration]],
            # The failure counts as an outcome but has no duration: the p95 is the one measured.
            "job_health_window": [[job, 2, 1, 0.5, 1, duration]],
            # attempt_count is 1 and measured on both; queue_wait_ms is measured on neither.
            "retried_jobs": [[job, 2, 2, 0, 0.0, 1]],
            "slowest_jobs": [[job, 2, 1, duration, duration, duration]],
            "waiting_jobs": [[job, 2, 0, None, None, None]],
        }


class CheckFailedError(CliError):
    pass


class Checklist:
    """Prints one line per step; the first failure ends the check."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.step = 0
        self._stream = stream if stream is not None else sys.stdout

    def passed(self, title: str, detail: str) -> None:
        self.step += 1
        print(f"ok    {self.step:>2}/{self.total} {title}: {detail}", file=self._stream, flush=True)

    def failed(self, title: str, detail: str) -> CheckFailedError:
        self.step += 1
        print(f"FAIL  {self.step:>2}/{self.total} {title}: {detail}", file=self._stream, flush=True)
        return CheckFailedError(
            f"analytics check failed at step {self.step}/{self.total} ({title}): {detail}"
        )


def run_analytics_check(args: argparse.Namespace) -> int:
    client = ApiClient.from_args(args)
    key, key_origin = _signing_key(args)
    names = [q["name"] for q in client.get("/v1/analytics/questions")["questions"]]
    fixture = Fixture.new(key, now=datetime.now(UTC))
    checks = Checklist(total=7 + len(names))
    send, route = _sender(args)

    try:
        send([fixture.completed(), fixture.failed()])
    except CliError as error:
        raise checks.failed("publish the fixture", error.message) from None
    checks.passed(
        "publish the fixture",
        f"a completed job ({FIXTURE_DURATION_MS} ms) and a controlled failure "
        f"({fixture.error_category}) of job_name {fixture.job_name}, tenant {fixture.tenant_id}, "
        f"{route}, signed with {key_origin}",
    )
    try:
        send([fixture.resent()])
    except CliError as error:
        raise checks.failed("resend the same event id", error.message) from None
    checks.passed(
        "resend the same event id",
        "the completed event again, as the producer's repairer re-emits it (new t, signature "
        "and ce-time)",
    )

    rows = _wait_for_rows(client, fixture, checks, args)
    _check_window(rows, fixture, checks)
    _check_fields(rows, checks)
    account_id = _check_values(rows, fixture, checks)
    window_from, window_to = fixture.window
    expected = fixture.expected_answers(account_id)
    for name in names:
        title = f"question {name}"
        if name not in expected:
            raise checks.failed(
                title, "the check knows no answer for this question: add it to the fixture"
            )
        answer = answer_question(
            client, name, window_from=window_from, window_to=window_to, max_wait=args.max_wait
        )
        if answer["rows"] != expected[name]:
            raise checks.failed(
                title,
                f"answered {json.dumps(answer['rows'])}, the fixture makes it "
                f"{json.dumps(expected[name])}",
            )
        checks.passed(
            title, f"{json.dumps(answer['rows'])} reconciles with the fixture ({answer['engine']})"
        )
    again = _fixture_rows(client, fixture, args)
    if sorted(row["status"] for row in again) != ["failure", "success"]:
        raise checks.failed(
            "one row per event id",
            f"after the resend the window lists {len(again)} rows of the fixture, not one per "
            "event",
        )
    checks.passed(
        "one row per event id", "the re-sent completed event is still one row (read again)"
    )
    print(
        f"analytics check passed: {checks.total} steps, window [{window_from}, {window_to})",
        file=sys.stderr,
    )
    return 0


# -- the steps ---------------------------------------------------------------------------------


def _wait_for_rows(
    client: ApiClient, fixture: Fixture, checks: Checklist, args: argparse.Namespace
) -> list[dict[str, Any]]:
    title = "the rows arrive"
    progress = Progress("waiting for the fixture's rows")
    try:
        while True:
            rows = _fixture_rows(client, fixture, args)
            statuses = {row.get("status") for row in rows}
            if {"success", "failure"} <= statuses:
                break
            if progress.elapsed >= args.rows_timeout:
                progress.done()
                raise checks.failed(title, _why_no_rows(client, fixture, statuses, args))
            progress.update(f"{len(rows)} of 2")
            time.sleep(ROWS_POLL_SECONDS)
    finally:
        progress.done()
    checks.passed(title, f"{len(rows)} rows after {progress.elapsed:.1f} s")
    return rows


def _fixture_rows(
    client: ApiClient, fixture: Fixture, args: argparse.Namespace
) -> list[dict[str, Any]]:
    window_from, window_to = fixture.window
    listed = list_rows(client, window_from=window_from, window_to=window_to, max_wait=args.max_wait)
    rows: list[dict[str, Any]] = listed["rows"]
    return rows


def _why_no_rows(
    client: ApiClient, fixture: Fixture, statuses: set[Any], args: argparse.Namespace
) -> str:
    missing = sorted({"success", "failure"} - statuses)
    waited = f"no {' and no '.join(missing)} row of the fixture after {args.rows_timeout:g} s"
    accepted = client.get("/v1/events/unmatched", tenant_id=fixture.tenant_id, limit=10)
    count = len(accepted.get("events") or [])
    if count < 2:
        return (
            f"{waited}; ingest accepted {count} of its 2 events: is the shovel forwarding, and "
            "does the bridge trust the key the check signs with (`jobhooks quarantine list "
            "--reason signature_mismatch`; pass --key-hex)?"
        )
    return (
        f"{waited}, though ingest accepted both events: the analytics sink lost or delayed "
        'them (docs/analytics.md, "When a row cannot be written"; on AWS Firehose buffers up '
        "to 5 minutes: raise --rows-timeout)"
    )


def _check_window(rows: list[dict[str, Any]], fixture: Fixture, checks: Checklist) -> None:
    title = "the window holds the fixture alone"
    others = [row for row in rows if row.get("job_name") != fixture.job_name]
    if others or len(rows) != 2:
        raise checks.failed(
            title,
            f"the window [{fixture.window[0]}, {fixture.window[1]}) holds {len(rows)} rows, "
            f"{len(others)} of them not the fixture's; run the check again (it picks a new "
            "window)",
        )
    checks.passed(title, f"[{fixture.window[0]}, {fixture.window[1]}): 2 rows, both the fixture's")


def _check_fields(rows: list[dict[str, Any]], checks: Checklist) -> None:
    title = "11 fields and 2 extras, typed"
    for row in rows:
        problems = record_problems(row)
        if problems:
            raise checks.failed(title, f"the {row.get('status')} row: {'; '.join(problems)}")
    checks.passed(
        title, f"the {len(rows[0])} columns of both rows arrive in order with their types"
    )


def _check_values(rows: list[dict[str, Any]], fixture: Fixture, checks: Checklist) -> str:
    """Check every value against the fixture; the account id the table holds (raw or pseudonym)."""
    title = "the rows hold the fixture"
    by_status = {row["status"]: row for row in rows}
    problems: list[str] = []
    for status, expected in fixture.expected_rows().items():
        row = by_status[status]
        for column, value in expected.items():
            if row[column] != value:
                problems.append(f"{status} {column} is {row[column]!r}, expected {value!r}")
        unmeasured = set(row["unmeasured"])
        wanted = {"queue_wait_ms"} | ({"duration_ms"} if status == "failure" else set())
        if not wanted <= unmeasured or ("duration_ms" in unmeasured) != (status == "failure"):
            problems.append(f"{status} unmeasured is {sorted(unmeasured)}")
        if (row["release"] == "unknown") != ("release" in unmeasured):
            problems.append(f"{status} release {row['release']!r} and its unmeasured disagree")
    problems += _identity_problems(by_status, fixture)
    if problems:
        raise checks.failed(title, "; ".join(problems))
    account_id = str(by_status["success"]["account_id"])
    identities = "pseudonymized" if account_id.startswith(PSEUDONYM_PREFIX) else "raw"
    checks.passed(
        title,
        f"timestamps, job_name, queue_name, attempts, durations, status, unmeasured and the "
        f"failure's category match; ids {identities}, release {by_status['success']['release']}",
    )
    return account_id


def _identity_problems(rows: Mapping[str, Mapping[str, Any]], fixture: Fixture) -> list[str]:
    success, failure = rows["success"], rows["failure"]
    raw = {
        "success": (fixture.tenant_id, fixture.completed_job_id),
        "failure": (fixture.tenant_id, fixture.failed_job_id),
    }
    pseudonymized = str(success["account_id"]).startswith(PSEUDONYM_PREFIX)
    problems = []
    for status, row in rows.items():
        tenant, job_id = raw[status]
        event_id = f"fetcher.job.{'completed' if status == 'success' else 'failed'}.{job_id}"
        values = (row["account_id"], row["job_id"], row["event_id"])
        if pseudonymized:
            if not all(str(v).startswith(PSEUDONYM_PREFIX) for v in values):
                problems.append(f"{status} ids are not all pseudonyms")
            if tenant in values or job_id in values or event_id in values:
                problems.append(f"{status} row shows a raw id beside pseudonyms")
        elif values != (tenant, job_id, event_id):
            problems.append(f"{status} ids are {values}, expected {(tenant, job_id, event_id)}")
    if success["account_id"] != failure["account_id"]:
        problems.append("one tenant has two account_ids")
    return problems


# -- getting the fixture in --------------------------------------------------------------------


def _sender(args: argparse.Namespace) -> tuple[Any, str]:
    """A function that publishes events, and how it does (for the step's line)."""
    if args.ingest_queue_url:
        return _to_ingest_queue(args), f"sent to the ingest queue {args.ingest_queue_url}"
    from jobhooks_tools.publisher import DEFAULT_AMQP_URL

    url = args.amqp_url or DEFAULT_AMQP_URL
    return _through_rabbitmq(url), f"published through RabbitMQ at {_redacted(url)}"


def _through_rabbitmq(url: str) -> Any:
    from jobhooks_tools.publisher import PublishError, SamplePublisher

    def send(events: Sequence[SampleEvent]) -> None:
        try:
            with SamplePublisher(url) as publisher:
                for event in events:
                    publisher.publish(event)
        except PublishError as error:
            raise CliError(f"RabbitMQ: {error}") from None

    return send


def _to_ingest_queue(args: argparse.Namespace) -> Any:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    def send(events: Sequence[SampleEvent]) -> None:
        try:
            sqs = boto3.session.Session(profile_name=args.profile, region_name=args.region).client(
                "sqs"
            )
            for event in events:
                # What the shovel sends: the message as it came off the broker, received now.
                forwarded = event.forwarded(received_at=format_timestamp(datetime.now(UTC)))
                sqs.send_message(QueueUrl=args.ingest_queue_url, MessageBody=forwarded.to_json())
        except (BotoCoreError, ClientError) as error:
            raise CliError(f"SQS: {error}") from None

    return send


def _signing_key(args: argparse.Namespace) -> tuple[HmacKey, str]:
    try:
        if args.key_hex:
            return key_from_hex(args.key_hex), "--key-hex"
        if args.app_enc_key:
            return derive_external_key(args.app_enc_key), "the key derived from --app-enc-key"
    except KeyConfigurationError as error:
        raise CliError(f"analytics check: {error}", EXIT_USAGE) from None
    return demo_key(), "the demo key (jobhooks dev trusts it)"


def _redacted(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=user + host))
