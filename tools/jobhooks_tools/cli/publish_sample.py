"""`jobhooks publish-sample`: publish realistic signed Fetcher job events to RabbitMQ."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from jobhooks.inbound.keys import HmacKey, KeyConfigurationError, derive_external_key, key_from_hex

from jobhooks_tools.cli.exceptions import CliError

USAGE_ERROR = 2
AMQP_URL_ENV = "JOBHOOKS_AMQP_URL"

_DESCRIPTION = """\
Sign and publish job events the way the Fetcher worker does: exchange fetcher.job.events,
routing keys job.completed / job.failed, CloudEvents headers as AMQP byte arrays, the signed
headers (t, signature-version, X-Tenant-ID) as strings, a compact camelCase body, persistent.

Each event can be followed by the copies the producer really sends (--copies): an outbox
relay copy, a repairer copy (both with a new t, signature and X-Request-Id; the repairer's also
with a new ce-time) and a broker redelivery (the same bytes). --tamper adds messages the bridge
must quarantine, each printed with the reason code it must get.

Nothing is declared: run the shovel (jobhooks shovel, or jobhooks dev) first; it declares the
exchange and binds its queue. Without a key, events are signed with the public demo key that
jobhooks dev trusts (events/README.md)."""


def register(subparsers: Any) -> None:
    from jobhooks_tools.publisher import Copy, Tampering

    parser = subparsers.add_parser(
        "publish-sample",
        help="publish realistic signed Fetcher job events to RabbitMQ",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--amqp-url",
        default=os.environ.get(AMQP_URL_ENV) or None,
        metavar="URL",
        help=f"broker URL, amqp://user:password@host:5672/vhost [env {AMQP_URL_ENV}; default "
        "amqp://guest:guest@localhost:5672/]",
    )
    parser.add_argument(
        "--exchange", default="fetcher.job.events", help="default fetcher.job.events"
    )
    parser.add_argument(
        "--count", type=_non_negative_int, default=4, metavar="N", help="events (default 4)"
    )
    parser.add_argument(
        "--rate",
        type=_non_negative_float,
        default=0.0,
        metavar="PER_SECOND",
        help="messages per second, copies and tampered ones included (default 0: no limit)",
    )
    parser.add_argument(
        "--tenant",
        action="append",
        metavar="ID",
        help="tenant (X-Tenant-ID); repeat for several, taken in turn (default single-tenant)",
    )
    parser.add_argument(
        "--vhost-per-tenant",
        action="store_true",
        help="publish each tenant's events into the vhost of its name, as a multi-tenant "
        "producer does (the vhosts must exist)",
    )
    parser.add_argument(
        "--status",
        choices=("completed", "failed", "mixed"),
        default="mixed",
        help="event type: completed, failed, or both in turn (default mixed)",
    )
    parser.add_argument(
        "--copies",
        type=_choices(Copy),
        default=[],
        metavar="KINDS",
        help=f"copies to publish after each event, comma-separated: {_listing(Copy)}",
    )
    parser.add_argument(
        "--tamper",
        type=_choices(Tampering),
        default=[],
        metavar="KINDS",
        help=f"tampered messages to publish at the end, comma-separated: {_listing(Tampering)}",
    )
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument(
        "--key-hex", metavar="HEX", help="external HMAC key to sign with (64 hex characters)"
    )
    keys.add_argument(
        "--app-enc-key", metavar="B64", help="derive the signing key from this APP_ENC_KEY"
    )
    parser.add_argument(
        "--output",
        choices=("table", "json"),
        default="table",
        help="one line per message as text (default) or as a JSON object",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print only the summary line (on stderr)"
    )
    parser.set_defaults(handler=run_publish_sample)


def run_publish_sample(args: argparse.Namespace) -> int:
    from jobhooks_tools.publisher import (
        DEFAULT_AMQP_URL,
        STATUSES,
        PublishError,
        SamplePublisher,
        sample_traffic,
    )
    from jobhooks_tools.sample_events import demo_key

    key, key_origin = _signing_key(args, demo_key)
    statuses = STATUSES if args.status == "mixed" else (args.status,)
    traffic = sample_traffic(
        key,
        count=args.count,
        tenants=tuple(args.tenant or ("single-tenant",)),
        statuses=statuses,
        copies=tuple(args.copies),
        tampered=tuple(args.tamper),
        vhost_per_tenant=args.vhost_per_tenant,
        exchange=args.exchange,
    )
    interval = 1.0 / args.rate if args.rate else 0.0
    started = time.monotonic()
    valid = rejected = 0
    try:
        with SamplePublisher(args.amqp_url or DEFAULT_AMQP_URL) as publisher:
            for n, publication in enumerate(traffic):
                if interval:
                    # A fixed schedule, so a slow publish does not lower the average rate.
                    time.sleep(max(0.0, started + n * interval - time.monotonic()))
                publisher.publish_sample(publication)
                if publication.valid:
                    valid += 1
                else:
                    rejected += 1
                if not args.quiet:
                    _print(publication, args.output)
    except PublishError as error:
        raise CliError(f"publish-sample: {error}") from None
    seconds = time.monotonic() - started
    print(
        f"published {valid + rejected} messages ({valid} valid, {rejected} to be rejected) "
        f"in {seconds:.2f} s, signed with {key_origin} (fingerprint {key.fingerprint})",
        file=sys.stderr,
    )
    return 0


def _signing_key(args: argparse.Namespace, demo_key: Any) -> tuple[HmacKey, str]:
    try:
        if args.key_hex:
            return key_from_hex(args.key_hex), "--key-hex"
        if args.app_enc_key:
            return derive_external_key(args.app_enc_key), "the key derived from --app-enc-key"
    except KeyConfigurationError as error:
        raise CliError(f"publish-sample: {error}", USAGE_ERROR) from None
    return demo_key(), "the demo key"


def _print(publication: Any, output: str) -> None:
    described = publication.describe()
    if output == "json":
        print(json.dumps(described), flush=True)
        return
    verdict = (
        "valid" if publication.valid else f"must be rejected: {described['expected_rejection']}"
    )
    vhost = f" vhost={described['vhost']}" if described["vhost"] else ""
    print(
        f"{described['routing_key']:<14} {described['kind']:<20} {described['event_id']} "
        f"tenant={described['tenant_id']}{vhost} ({verdict})",
        flush=True,
    )


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _choices(kinds: Any) -> Any:
    def parse(text: str) -> list[Any]:
        chosen = []
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            if item == "all":
                chosen.extend(kinds)
                continue
            try:
                chosen.append(kinds(item))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{item!r} is not one of {_listing(kinds)}"
                ) from None
        return chosen

    return parse


def _listing(kinds: Any) -> str:
    return ", ".join(kind.value for kind in kinds) + " or all"
