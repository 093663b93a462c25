"""A background_job_completed row is the outcome of a real event, typed as the contract says.

Outcomes come from the sample events of events/ through the real inbound pipeline
(`read_forwarded_message`, then `outcome_data`), never built by hand.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jobhooks.analytics.columns import (
    COLUMN_NAMES,
    COLUMNS,
    CONTRACT_COLUMNS,
    EXTRA_COLUMNS,
    ContractType,
    Privacy,
    record_problems,
)
from jobhooks.analytics.exceptions import PseudonymizationKeyError
from jobhooks.analytics.pseudonymize import (
    PSEUDONYM_PREFIX,
    StaticKeyPseudonymizer,
    pseudonym,
)
from jobhooks.analytics.row import AnalyticsRow, row_from_outcome
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome import OutcomeData, outcome_data
from jobhooks.inbound.sanitize import ERROR_CATEGORIES
from jobhooks_tools.sample_events import demo_key, failed_body, make_job_event

EVENTS = Path(__file__).parents[2] / "events"
ANALYTICS_DOC = Path(__file__).parents[2] / "docs" / "analytics.md"
RECEIVED_AT = datetime(2026, 7, 13, 18, 4, 13, tzinfo=UTC)
POLICY = VerificationPolicy(keys=[demo_key()], allow_legacy_signatures=True)
KEY_TEXT = "k" * 16 + "0123456789abcdef0123456789"

# The contract's eleven fields, names and types (docs/analytics.md, "The columns").
CONTRACT = {
    "timestamp_utc": "timestamp",
    "event_id": "string",
    "release": "string",
    "account_id": "string",
    "job_id": "string",
    "job_name": "string",
    "queue_name": "string",
    "attempt_count": "number",
    "queue_wait_ms": "number",
    "duration_ms": "number",
    "status": "string",
}
PSEUDONYMOUS = {"account_id", "job_id"}
# event_id too: Fetcher's ce-id embeds the job id.
PSEUDONYMIZED = PSEUDONYMOUS | {"event_id"}


def outcome_of(sample: str, release: str | None = "fetcher@2.0.2") -> OutcomeData:
    raw = (EVENTS / "forwarded" / f"{sample}.json").read_bytes()
    return outcome_data(read_forwarded_message(raw, POLICY, RECEIVED_AT), release=release)


def assert_contract_types(record: dict[str, Any]) -> None:
    """Every value of a written record has its column's contract type."""
    assert record_problems(record) == []


def test_the_columns_are_the_contracts_eleven_then_justified_extras() -> None:
    assert {c.name: c.type.value for c in CONTRACT_COLUMNS} == CONTRACT
    assert list(COLUMN_NAMES[:11]) == list(CONTRACT)
    assert {c.name for c in COLUMNS if c.privacy is Privacy.PSEUDONYMOUS} == PSEUDONYMOUS
    assert [c.name for c in EXTRA_COLUMNS] == ["unmeasured", "error_category"]
    for column in EXTRA_COLUMNS:
        assert column.reason and column.is_extra, column.name
    for column in CONTRACT_COLUMNS:
        assert not column.is_extra and not column.nullable and column.source
    # The row model is the column list: same names, same order.
    assert tuple(AnalyticsRow.model_fields) == COLUMN_NAMES


def test_the_contract_table_of_the_analytics_doc_is_the_one_in_the_code() -> None:
    rows = re.findall(
        r"^\| `(\w+)` \| ([^|]+) \| ([\w-]+) \| ([^|]+) \|$", ANALYTICS_DOC.read_text(), re.M
    )
    contract = [
        (name, kind, privacy) for name, kind, privacy, source in rows if "**extra**" not in source
    ]
    assert [name for name, _, _ in contract] == list(CONTRACT)
    assert {name: kind for name, kind, _ in contract} == CONTRACT
    assert {name for name, _, privacy in contract if privacy == "pseudonymous"} == PSEUDONYMOUS
    extras = [name for name, _, _, source in rows if "**extra**" in source]
    assert extras == [c.name for c in EXTRA_COLUMNS]


def test_completed_event_becomes_a_typed_row_of_its_outcome() -> None:
    outcome = outcome_of("completed")
    row = row_from_outcome(outcome)
    record = row.to_record()
    assert_contract_types(record)
    for name in CONTRACT:
        assert record[name] == outcome[name], name
    assert record["status"] == "success" and record["duration_ms"] == 8421
    assert record["unmeasured"] == ["queue_wait_ms"]
    assert record["error_category"] is None
    assert row.timestamp_utc == datetime(2026, 7, 13, 18, 4, 11, 204000, tzinfo=UTC)
    assert json.loads(row.to_json()) == record


def test_failed_event_row_carries_the_category_never_the_message() -> None:
    outcome = outcome_of("failed")
    error = outcome["fetcher"]["error"]
    record = row_from_outcome(outcome).to_record()
    assert_contract_types(record)
    assert record["status"] == "failure"
    assert record["error_category"] == error["category"]
    assert record["error_category"] in ERROR_CATEGORIES
    assert record["unmeasured"] == ["queue_wait_ms", "duration_ms"]
    assert error["message"] not in json.dumps(record)


def test_legacy_event_row_marks_what_the_old_producer_could_not_supply() -> None:
    outcome = outcome_of("legacy", release=None)
    record = row_from_outcome(outcome).to_record()
    assert_contract_types(record)
    assert record["queue_name"] == "fetcher.job.events"  # no ce-source: the exchange
    assert record["release"] == "unknown"
    assert record["timestamp_utc"] == "2026-07-13T18:04:11.204Z"  # completedAt
    assert record["unmeasured"] == ["release", "queue_wait_ms"]


def test_error_text_that_leaks_stays_out_of_the_row() -> None:
    key = demo_key()
    leak = "dial tcp 10.0.0.5:5432: connect: refused; open postgres://u:pw@db:5432/x"
    event = make_job_event(
        key,
        status="failed",
        tenant_id="acme",
        job_id="job-1",
        body=failed_body("job-1", message=leak),
    )
    outcome = outcome_data(
        read_forwarded_message(event.forwarded().to_json(), POLICY, datetime.now(UTC))
    )
    text = row_from_outcome(outcome).to_json()
    assert json.loads(text)["error_category"] == "datasource_error"
    for fragment in ("10.0.0.5", "postgres", "pw@db", "dial tcp"):
        assert fragment not in text


def test_pseudonymization_off_keeps_the_ids_and_on_replaces_them_with_keyed_pseudonyms() -> None:
    outcome = outcome_of("completed")
    plain = row_from_outcome(outcome)
    assert (plain.account_id, plain.job_id) == (outcome["account_id"], outcome["job_id"])

    pseudonymized = row_from_outcome(outcome, pseudonymizer=StaticKeyPseudonymizer(KEY_TEXT))
    record = pseudonymized.to_record()
    assert_contract_types(record)
    for column in PSEUDONYMIZED:
        value = record[column]
        assert re.fullmatch(PSEUDONYM_PREFIX + "[0-9a-f]{64}", value), value
    # Neither the tenant nor the job id appears anywhere in the row, not even inside event_id.
    assert f'"{outcome["account_id"]}"' not in json.dumps(record)
    assert outcome["job_id"] not in json.dumps(record)
    # The documented format: p1_ + HMAC-SHA256(key, column NUL value), hex.
    import hashlib
    import hmac

    digest = hmac.new(
        KEY_TEXT.encode(), b"account_id\x00" + outcome["account_id"].encode(), hashlib.sha256
    ).hexdigest()
    assert record["account_id"] == "p1_" + digest
    # Every other column is untouched.
    assert {k: v for k, v in record.items() if k not in PSEUDONYMIZED} == {
        k: v for k, v in plain.to_record().items() if k not in PSEUDONYMIZED
    }


def test_pseudonyms_are_stable_per_key_and_separate_the_two_columns() -> None:
    one, other = StaticKeyPseudonymizer(KEY_TEXT), StaticKeyPseudonymizer(KEY_TEXT[::-1])
    assert one.pseudonym("account_id", "acme") == one.pseudonym("account_id", "acme")
    assert one.pseudonym("account_id", "acme") != other.pseudonym("account_id", "acme")
    assert one.pseudonym("account_id", "x") != one.pseudonym("job_id", "x")
    assert pseudonym(KEY_TEXT.encode(), "job_id", "x") == one.pseudonym("job_id", "x")
    with pytest.raises(ValueError, match="not a pseudonymized column"):
        one.pseudonym("job_name", "payments")


def test_a_short_key_is_refused_without_showing_it() -> None:
    with pytest.raises(PseudonymizationKeyError, match="has 8 characters") as refused:
        StaticKeyPseudonymizer("s3cr3t!!")
    assert "s3cr3t" not in str(refused.value)


def test_record_problems_name_every_field_off_the_contract() -> None:
    record = row_from_outcome(outcome_of("completed")).to_record()
    assert record_problems(record) == []
    broken = {
        **record,
        "timestamp_utc": "2026-07-13 18:04:11",
        "attempt_count": "1",
        "duration_ms": True,
        "status": "",
        "unmeasured": "queue_wait_ms",
        "job_id": None,
    }
    assert record_problems(broken) == [
        "timestamp_utc is not a UTC timestamp: '2026-07-13 18:04:11'",
        "job_id is null",
        "attempt_count is not a whole number",
        "duration_ms is not a whole number",
        "status is not a non-empty string",
        "unmeasured is not a list of strings",
    ]
    missing = {k: v for k, v in record.items() if k != "release"}
    assert record_problems(missing)[0].startswith("columns are")
    assert ContractType.NUMBER.value == "number"


def test_a_row_rejects_what_the_table_cannot_hold() -> None:
    record = row_from_outcome(outcome_of("completed")).model_dump()
    with pytest.raises(ValueError, match="error_category"):
        AnalyticsRow(**{**record, "error_category": "connection refused by 10.0.0.5"})
    with pytest.raises(ValueError, match="time zone"):
        AnalyticsRow(**{**record, "timestamp_utc": datetime(2026, 7, 13, 18, 4)})


def test_the_core_package_imports_neither_boto3_nor_duckdb() -> None:
    # The ingest function's cold start: building rows and the sink port must stay light.
    code = (
        "import sys, jobhooks.analytics.row, jobhooks.analytics.recorder, "
        "jobhooks.analytics.questions, jobhooks.analytics.results, jobhooks.analytics.firehose, "
        "jobhooks.analytics.athena, jobhooks.analytics.engine;"
        "print(sorted(m for m in ('boto3', 'botocore', 'duckdb', 'sqlglot') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"
