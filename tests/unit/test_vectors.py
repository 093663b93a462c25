"""The producer's own signing vectors (tests/vectors/fetcher-job-events.json, computed with its
implementation; docs/fetcher-job-events.md): key derivation, canonical payloads, signatures and
verdicts, all 32."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jobhooks.inbound.keys import HmacKey, derive_external_key, derive_key
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.inbound.signed_bytes import (
    _go_json,
    bound_job_id,
    canonical_signed_bytes,
    job_id_in,
    legacy_signed_bytes,
    parse_json_object,
)
from jobhooks.inbound.verification import verify_signature

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "fetcher-job-events.json").read_text()
)
LABELS = {
    "external_hmac": b"fetcher-external-hmac-v1",
    "internal_hmac": b"fetcher-internal-hmac-v1",
    "storage_encryption": b"fetcher-storage-encryption-v1",
}
# The producer's verdict strings, as the bridge's reason codes.
PRODUCER_REASONS = {
    "expired": Reason.STALE_TIMESTAMP,
    "future": Reason.FUTURE_TIMESTAMP,
    "failed:signature-mismatch": Reason.SIGNATURE_MISMATCH,
    "failed:invalid-timestamp": Reason.BAD_TIMESTAMP,
    "unsupported-version": Reason.UNSUPPORTED_SIGNATURE_VERSION,
}


def of_kind(kind: str) -> list[Any]:
    return [pytest.param(vector, id=vector["name"]) for vector in VECTORS if vector["kind"] == kind]


def test_all_32_vectors_are_exercised() -> None:
    assert len(VECTORS) == 32
    assert {vector["kind"] for vector in VECTORS} == {"derive", "document_hmac", "sign", "verify"}


@pytest.mark.parametrize("vector", of_kind("derive") + of_kind("sign"))
def test_derives_the_producers_keys(vector: dict[str, Any]) -> None:
    app_enc_key = vector["inputs"]["app_enc_key"]
    derived = vector["outputs"]["derived_keys_hex"]
    for name, label in LABELS.items():
        assert derive_key(app_enc_key, label).hex() == derived[name]
    tool_line = vector["outputs"]["derive_key_tool_stdout"]
    assert tool_line == f"External HMAC Key (hex): {derive_external_key(app_enc_key).hex}"
    if "master_key_hex" in vector["outputs"]:
        assert base64.b64decode(app_enc_key).hex() == vector["outputs"]["master_key_hex"]


@pytest.mark.parametrize("vector", of_kind("document_hmac"))
def test_result_hmac_is_over_the_plaintext_document(vector: dict[str, Any]) -> None:
    key = derive_external_key(vector["inputs"]["app_enc_key"])
    plaintext = base64.b64decode(vector["inputs"]["plaintext_b64"])
    assert plaintext.decode() == vector["inputs"]["plaintext_text"]
    assert len(plaintext) == vector["outputs"]["size_bytes"]
    digest = hmac.new(key.secret, plaintext, hashlib.sha256).hexdigest()
    assert digest == vector["outputs"]["result_hmac"]


@pytest.mark.parametrize("vector", of_kind("sign"))
def test_builds_canonical_payload_and_signature(vector: dict[str, Any]) -> None:
    inputs, outputs = vector["inputs"], vector["outputs"]
    key = derive_key(inputs["app_enc_key"], LABELS[inputs["key_used"]])
    body = base64.b64decode(inputs["body_b64"])
    assert bound_job_id(body) == outputs["job_id_bound"]
    signed = canonical_signed_bytes(
        timestamp=inputs["timestamp"],
        version=inputs["version"],
        tenant_id=inputs["tenant_id"],
        job_id=bound_job_id(body),
        exchange=inputs["exchange"],
        routing_key=inputs["routing_key"],
        body=body,
    )
    assert base64.b64encode(signed).decode() == outputs["canonical_payload_b64"]
    assert hmac.new(key, signed, hashlib.sha256).hexdigest() == outputs["expected_signature"]
    legacy = legacy_signed_bytes(timestamp=inputs["timestamp"], body=body)
    assert base64.b64encode(legacy).decode() == outputs["legacy_payload_b64"]
    assert (
        hmac.new(key, legacy, hashlib.sha256).hexdigest() == outputs["legacy_body_only_signature"]
    )
    assert (
        outputs["expected_signature_headers"]["x-message-signature"]
        == outputs["expected_signature"]
    )


@pytest.mark.parametrize("vector", of_kind("verify"))
def test_reaches_the_producers_verdict(vector: dict[str, Any]) -> None:
    inputs, outputs = vector["inputs"], vector["outputs"]
    key = HmacKey(derive_key(inputs["app_enc_key"], LABELS[inputs["key_used"]]))
    arguments = dict(
        headers=inputs["headers"],
        exchange=inputs["exchange"],
        routing_key=inputs["routing_key"],
        body=base64.b64decode(inputs["body_b64"]),
        keys=[key],
        received_at=inputs["now_unix"],
        max_age_seconds=inputs["tolerance_seconds"],
        allow_legacy=inputs["allow_legacy_body_only"],
    )
    if outputs["accepted"]:
        verified = verify_signature(**arguments)
        assert verified.legacy is (outputs["reason"] == "ok-legacy-body-only")
    else:
        with pytest.raises(RejectedMessageError) as rejected:
            verify_signature(**arguments)
        assert rejected.value.reason is PRODUCER_REASONS[outputs["reason"]]


def test_the_internal_key_never_verifies_job_events() -> None:
    vector = next(v for v in VECTORS if v["name"] == "completed-single-tenant")
    internal = HmacKey(derive_key(vector["inputs"]["app_enc_key"], LABELS["internal_hmac"]))
    headers = {**vector["inputs"]["headers"], **vector["outputs"]["expected_signature_headers"]}
    with pytest.raises(RejectedMessageError) as rejected:
        verify_signature(
            headers=headers,
            exchange=vector["inputs"]["exchange"],
            routing_key=vector["inputs"]["routing_key"],
            body=base64.b64decode(vector["inputs"]["body_b64"]),
            keys=[internal],
            received_at=vector["inputs"]["timestamp"],
            max_age_seconds=300,
        )
    assert rejected.value.reason is Reason.SIGNATURE_MISMATCH


@given(secret=st.binary(min_size=32, max_size=32), message=st.binary(max_size=2048))
def test_a_keys_hmac_is_the_standard_librarys(secret: bytes, message: bytes) -> None:
    # HmacKey.sign reuses its key's prepared hash states instead of hmac.new's per-call set-up;
    # the signature must be the same, byte for byte, for any key and message.
    assert HmacKey(secret).sign(message) == hmac.new(secret, message, hashlib.sha256).hexdigest()


def test_a_key_is_copied_and_pickled_with_its_prepared_states_rebuilt() -> None:
    key = HmacKey(bytes(range(32)))
    for copied in (pickle.loads(pickle.dumps(key)), copy.deepcopy(key), copy.copy(key)):
        assert copied == key and copied.fingerprint == key.fingerprint
        assert copied.sign(b"body") == key.sign(b"body")
    assert "secret" not in repr(key) and bytes(range(32)).hex() not in repr(key)


def _decoded_whole(body: bytes) -> object:
    """What parse_json_object made of a body when the decoder read every body whole."""
    try:
        document = _go_json.decode(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


@pytest.mark.parametrize(
    "body",
    [
        b'{"jobId":"j","status":"failed"}',
        b' {"jobId":"j"}',
        b'{"jobId":"j"} ',
        b'{"jobId":"j"}\n',
        b'{"jobId":"j"}x',
        b'{"jobId":"j"}{"jobId":"k"}',
        b'{"jobId":"j"',
        b'{"jobId":}',
        b'{"jobId":"j","n":NaN}',
        b'{"jobId":"j","n":Infinity}',
        b'{"jobId":"j","n":' + b"9" * 5000 + b"}",
        b'{"jobId":"j","n":' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"jobId":"\xff"}',
        b"{}",
        b"[]",
        b'"{"',
    ],
)
def test_a_compact_body_binds_the_job_id_a_whole_decode_binds(body: bytes) -> None:
    # A body that is one object from its first byte to its last is scanned without the
    # decoder's whitespace handling; any other body is decoded whole, as every body once was.
    assert parse_json_object(body) == _decoded_whole(body)
    assert bound_job_id(body) == job_id_in(_decoded_whole(body))  # type: ignore[arg-type]
