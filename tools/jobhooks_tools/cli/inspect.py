"""`jobhooks inspect`: verify and normalize one forwarded message, offline."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

from jobhooks.inbound.cross_checks import parse_source_list
from jobhooks.inbound.event import parse_rfc3339
from jobhooks.inbound.job_events import (
    DEFAULT_RETENTION_SECONDS,
    VerificationPolicy,
    read_forwarded_message,
)
from jobhooks.inbound.keys import (
    HmacKey,
    KeyConfigurationError,
    derive_external_key,
    key_from_hex,
    parse_key_list,
)
from jobhooks.inbound.outcome_models import webhook_body
from jobhooks.inbound.rejection import RejectedMessageError

from jobhooks_tools.cli.exceptions import CliError

EXIT_REJECTED = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="verify and normalize one forwarded message",
        description=(
            "Verify one forwarded message (the JSON of docs/forwarded-message.md, or a "
            "Lambda SQS event holding one) and print the webhook body it becomes. Exit 0 with "
            'the body, or exit 3 with {"rejected": "<reason code>", "detail": "..."}.'
        ),
    )
    parser.add_argument("file", help="path of the message, or - for standard input")
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument(
        "--key-hex",
        action="append",
        metavar="HEX",
        help="external HMAC key, 64 hex characters (repeat for rotation; default: "
        "$JOBHOOKS_FETCHER_HMAC_KEYS, else derived from $APP_ENC_KEY)",
    )
    keys.add_argument("--app-enc-key", metavar="B64", help="derive the key from this APP_ENC_KEY")
    parser.add_argument(
        "--received-at",
        metavar="RFC3339",
        help="receipt time to judge freshness against (default: the SQS SentTimestamp when the "
        "file is an SQS event, else now)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        metavar="SECONDS",
        default=DEFAULT_RETENTION_SECONDS,
        help="maximum age of t (default: 7 days, the dedup retention; <= 0 disables)",
    )
    parser.add_argument(
        "--allow-legacy", action="store_true", help="also accept v1.4.x body-only signatures"
    )
    parser.add_argument(
        "--allowed-sources",
        metavar="LIST",
        default=os.environ.get("JOBHOOKS_ALLOWED_SOURCES", ""),
        help="ce-source values accepted, comma-separated, as the stack's AllowedSources "
        "(default: $JOBHOOKS_ALLOWED_SOURCES; empty: ce-source is not checked)",
    )
    parser.add_argument("--release", default=os.environ.get("JOBHOOKS_PRODUCER_RELEASE", ""))
    parser.set_defaults(handler=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    keys = _keys(args)
    raw = _read(args.file)
    body, sent_at = _forwarded_body(raw)
    received_at = _received_at(args.received_at) or sent_at or datetime.now(UTC)
    try:
        allowed_sources = parse_source_list(args.allowed_sources)
    except ValueError as error:
        raise CliError(f"--allowed-sources: {error}", exit_code=2) from None
    policy = VerificationPolicy(
        keys=keys,
        max_age_seconds=args.tolerance,
        allow_legacy_signatures=args.allow_legacy,
        allowed_sources=allowed_sources,
        # ce-time's bound before `t` is the retention, also when --tolerance turns the age off.
        max_emission_lag_seconds=(
            args.tolerance if args.tolerance > 0 else DEFAULT_RETENTION_SECONDS
        ),
    )
    try:
        event = read_forwarded_message(body, policy, received_at)
    except RejectedMessageError as rejection:
        print(json.dumps(rejection.as_dict(), indent=2))
        return EXIT_REJECTED
    print(json.dumps(webhook_body(event, release=args.release), indent=2, ensure_ascii=False))
    return 0


def _keys(args: argparse.Namespace) -> tuple[HmacKey, ...]:
    try:
        if args.key_hex:
            return tuple(key_from_hex(text) for text in args.key_hex)
        if args.app_enc_key:
            return (derive_external_key(args.app_enc_key),)
        if os.environ.get("JOBHOOKS_FETCHER_HMAC_KEYS"):
            return parse_key_list(os.environ["JOBHOOKS_FETCHER_HMAC_KEYS"])
        if os.environ.get("APP_ENC_KEY"):
            return (derive_external_key(os.environ["APP_ENC_KEY"]),)
    except KeyConfigurationError as error:
        raise CliError(str(error), exit_code=2) from None
    raise CliError(
        "no key: pass --key-hex or --app-enc-key, or set JOBHOOKS_FETCHER_HMAC_KEYS or APP_ENC_KEY",
        exit_code=2,
    )


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None


def _forwarded_body(raw: bytes) -> tuple[bytes, datetime | None]:
    """The forwarded message itself, unwrapping a one-record Lambda SQS event."""
    try:
        document = json.loads(raw)
    except ValueError:
        return raw, None
    if not (isinstance(document, dict) and isinstance(document.get("Records"), list)):
        return raw, None
    records = document["Records"]
    if len(records) != 1 or not isinstance(records[0], dict):
        raise CliError(f"the SQS event holds {len(records)} records; inspect takes exactly one")
    record = records[0]
    sent = record.get("attributes", {}).get("SentTimestamp")
    sent_at = datetime.fromtimestamp(int(sent) / 1000, UTC) if str(sent).isdigit() else None
    return str(record.get("body", "")).encode("utf-8"), sent_at


def _received_at(text: str | None) -> datetime | None:
    if text is None:
        return None
    moment = parse_rfc3339(text)
    if moment is None:
        raise CliError(f"--received-at {text!r} is not an RFC 3339 time", exit_code=2)
    return moment
