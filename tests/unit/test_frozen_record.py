"""Every `FrozenRecord` behaves as the frozen dataclass it replaced (`jobhooks.frozen_record`).

Each record below is held to a reference: the frozen dataclass made from the fields and
defaults its `@dataclass(frozen=True, slots=True)` declared (written out here, not read from the
class under test). Same constructor, `repr`, `==` and `hash`, the same errors on assignment and
deletion, copies and pickles that come back equal, and `replace` makes what `dataclasses.replace`
made.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from jobhooks.analytics.columns import Column
from jobhooks.delivery.first_attempts import FirstAttempt, FirstAttemptPage
from jobhooks.delivery.model import DeliveryOutcome, PostResult
from jobhooks.delivery.network_policy import CheckedTarget, NetworkPolicy, resolve_host
from jobhooks.delivery.retry_schedule import RetrySchedule
from jobhooks.delivery.stored_page import StoredPage
from jobhooks.endpoint_health.model import HealthThresholds
from jobhooks.frozen_record import FrozenRecord, replace
from jobhooks.inbound.job_events import VerificationPolicy
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import Claim, Duplicate, EventRecord, FanOutPlan, IngestResult
from jobhooks.storage.claimed_event import ClaimedEvent

LAYER = Path(__file__).resolve().parents[2] / "layers" / "jobhooks"
REQUIRED = dataclasses.MISSING

# Each record's fields as its dataclass declared them: (name, default or REQUIRED).
DECLARED: dict[type[FrozenRecord], tuple[tuple[str, Any], ...]] = {
    Column: (
        ("name", REQUIRED),
        ("type", REQUIRED),
        ("privacy", REQUIRED),
        ("source", REQUIRED),
        ("reason", ""),
        ("nullable", False),
    ),
    FirstAttempt: (
        ("event_id", REQUIRED),
        ("event_type", REQUIRED),
        ("at", REQUIRED),
        ("status_code", REQUIRED),
        ("latency_ms", REQUIRED),
    ),
    FirstAttemptPage: (
        ("subscription_id", REQUIRED),
        ("tenant_id", REQUIRED),
        ("batch_id", REQUIRED),
        ("successes", REQUIRED),
    ),
    PostResult: (
        ("status_code", REQUIRED),
        ("error", REQUIRED),
        ("detail", REQUIRED),
        ("latency_ms", REQUIRED),
        ("response_excerpt", ""),
        ("retry_after_seconds", None),
        ("address", None),
    ),
    DeliveryOutcome: (
        ("result", REQUIRED),
        ("delivery_id", None),
        ("attempt", None),
        ("failure_class", None),
        ("retry_in_seconds", None),
        ("disabled_subscription", False),
    ),
    CheckedTarget: (
        ("scheme", REQUIRED),
        ("host", REQUIRED),
        ("port", REQUIRED),
        ("request_target", REQUIRED),
        ("addresses", REQUIRED),
    ),
    NetworkPolicy: (("allow_private_networks", False), ("resolver", resolve_host)),
    RetrySchedule: (("delays", REQUIRED), ("jitter", 0.2)),
    StoredPage: (("page", REQUIRED), ("expires_at", REQUIRED)),
    HealthThresholds: (("failing_after", 5), ("auto_disable_after", timedelta(days=5))),
    FanOutPlan: (("batch_id", REQUIRED), ("payload", REQUIRED), ("subscription_ids", REQUIRED)),
    Duplicate: (("existing", REQUIRED),),
    IngestResult: (
        ("outcome", REQUIRED),
        ("event_id", None),
        ("deliveries", 0),
        ("reason", None),
        ("quarantine_id", None),
    ),
    ClaimedEvent: (
        ("event_id", REQUIRED),
        ("tenant_id", REQUIRED),
        ("batch_id", REQUIRED),
        ("subscription_ids", REQUIRED),
    ),
    Claim: (
        ("event_id", REQUIRED),
        ("tenant_id", REQUIRED),
        ("event_type", REQUIRED),
        ("job_id", REQUIRED),
        ("token", REQUIRED),
        ("lease_until_ms", REQUIRED),
        ("took_over", None),
        ("signed_at", None),
    ),
    EventRecord: (
        ("event_id", REQUIRED),
        ("state", REQUIRED),
        ("tenant_id", REQUIRED),
        ("event_type", REQUIRED),
        ("job_id", REQUIRED),
        ("claimed_at", REQUIRED),
        ("expires_at", REQUIRED),
        ("lease_until_ms", None),
        ("done_at", None),
        ("matched", None),
        ("payload", None),
        ("unmatched", False),
        ("subscription_ids", None),
        ("batch_id", None),
    ),
    InboundMessage: (
        ("body", REQUIRED),
        ("message_id", REQUIRED),
        ("sent_at", REQUIRED),
        ("replay_of", None),
        ("receipt_handle", None),
    ),
    VerificationPolicy: (
        ("keys", REQUIRED),
        ("max_age_seconds", 604800),
        ("max_future_seconds", 30.0),
        ("allow_legacy_signatures", False),
        ("allowed_sources", frozenset()),
        ("max_emission_lag_seconds", 604800),
    ),
}

# Two values per field that the record's `__init__` accepts; the first make the sample record,
# the second differ from them. Most records take any value; a retry schedule checks itself.
VALUES: dict[type[FrozenRecord], dict[str, tuple[Any, Any]]] = {
    RetrySchedule: {"delays": ((0, 5, 300), (0, 5, 301)), "jitter": (0.1, 0.25)},
}


def values_of(cls: type[FrozenRecord], which: int) -> dict[str, Any]:
    own = VALUES.get(cls, {})
    return {
        name: own[name][which] if name in own else (f"{name}-a", f"{name}-b")[which]
        for name, _ in DECLARED[cls]
    }


def reference(cls: type[FrozenRecord]) -> type[Any]:
    """The frozen dataclass `cls` was: same name, fields and defaults."""
    fields = [
        (name, Any) if default is REQUIRED else (name, Any, dataclasses.field(default=default))
        for name, default in DECLARED[cls]
    ]
    made = dataclasses.make_dataclass(
        cls.__name__, fields, frozen=True, slots=True, module=cls.__module__
    )
    made.__qualname__ = cls.__qualname__
    return made


def parameters(callable_: Any) -> list[tuple[str, Any, Any]]:
    return [
        (parameter.name, parameter.kind, parameter.default)
        for parameter in inspect.signature(callable_).parameters.values()
    ]


RECORDS = list(DECLARED)
NAMES = [cls.__name__ for cls in RECORDS]


def test_every_frozen_record_in_the_layer_is_held_to_its_dataclass() -> None:
    declared = {
        match.group(1)
        for path in LAYER.rglob("*.py")
        for match in re.finditer(r"^class (\w+)\(FrozenRecord\):", path.read_text(), re.M)
    }
    assert declared == set(NAMES)


@pytest.mark.parametrize("cls", RECORDS, ids=NAMES)
def test_a_record_is_made_as_its_dataclass_was(cls: type[FrozenRecord]) -> None:
    made = reference(cls)
    assert parameters(cls) == parameters(made)
    assert cls.__match_args__ == made.__match_args__
    sample = values_of(cls, 0)
    assert cls(*sample.values()) == cls(**sample)


@pytest.mark.parametrize("cls", RECORDS, ids=NAMES)
def test_a_record_compares_hashes_and_prints_as_its_dataclass(cls: type[FrozenRecord]) -> None:
    made = reference(cls)
    sample, other = values_of(cls, 0), values_of(cls, 1)
    record, expected = cls(**sample), made(**sample)
    assert repr(record) == repr(expected)
    assert hash(record) == hash(expected)
    assert record == cls(**sample)
    assert not record != cls(**sample)  # noqa: SIM202 (`!=` is what is checked)
    for name in sample:
        changed = {**sample, name: other[name]}
        assert record != cls(**changed)
        assert (record == cls(**changed)) == (expected == made(**changed))
    # Another class, even with the same fields, is never equal (as for a dataclass).
    assert record.__eq__(expected) is NotImplemented
    assert record != expected


@pytest.mark.parametrize("cls", RECORDS, ids=NAMES)
def test_a_record_refuses_changes_as_its_dataclass(cls: type[FrozenRecord]) -> None:
    made = reference(cls)
    sample = values_of(cls, 0)
    record, expected = cls(**sample), made(**sample)
    for name in sample:
        with pytest.raises(dataclasses.FrozenInstanceError) as ours:
            setattr(record, name, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError) as theirs:
            setattr(expected, name, "changed")
        assert str(ours.value) == str(theirs.value)
        with pytest.raises(dataclasses.FrozenInstanceError) as ours:
            delattr(record, name)
        with pytest.raises(dataclasses.FrozenInstanceError) as theirs:
            delattr(expected, name)
        assert str(ours.value) == str(theirs.value)
    assert record == cls(**sample)


@pytest.mark.parametrize("cls", RECORDS, ids=NAMES)
def test_a_record_refuses_a_new_attribute(cls: type[FrozenRecord]) -> None:
    # Python 3.12's frozen dataclass with slots raises TypeError here (its `__setattr__` names
    # the class as it was before `slots=True` made a new one); a record says what is wrong.
    record = cls(**values_of(cls, 0))
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'extra'"):
        record.extra = "added"  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'extra'"):
        del record.extra  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", RECORDS, ids=NAMES)
def test_a_record_is_copied_and_pickled_whole(cls: type[FrozenRecord]) -> None:
    record = cls(**values_of(cls, 0))
    for copied in (copy.copy(record), copy.deepcopy(record), pickle.loads(pickle.dumps(record))):
        assert type(copied) is cls
        assert copied == record
        assert repr(copied) == repr(record)


@pytest.mark.parametrize("cls", RECORDS, ids=NAMES)
def test_a_record_is_copied_with_changes_as_dataclasses_replace_copies_its_dataclass(
    cls: type[FrozenRecord],
) -> None:
    made = reference(cls)
    sample, other = values_of(cls, 0), values_of(cls, 1)
    record, expected = cls(**sample), made(**sample)
    for name in sample:
        changed = replace(record, **{name: other[name]})
        assert type(changed) is cls
        assert changed == cls(**{**sample, name: other[name]})
        assert repr(changed) == repr(dataclasses.replace(expected, **{name: other[name]}))
    assert replace(record) == record
    assert replace(record) is not record
    with pytest.raises(TypeError, match="unexpected keyword argument 'not_a_field'"):
        replace(record, not_a_field=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'not_a_field'"):
        dataclasses.replace(expected, not_a_field=1)


def test_a_record_must_list_its_fields_in_its_slots() -> None:
    with pytest.raises(TypeError, match="__slots__ must list its annotated fields"):

        class Partial(FrozenRecord):
            __slots__ = ("first",)
            first: str
            second: str
