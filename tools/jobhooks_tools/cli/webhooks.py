"""`jobhooks webhooks`: register and manage a tenant's webhook subscriptions (docs/cli.md)."""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from datetime import datetime
from typing import Any
from urllib.parse import quote

from jobhooks_tools.cli.api_client import EXIT_FAILED, EXIT_USAGE, ApiClient, connection_arguments
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.tables import Column, add_output_argument, print_json, render_table

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_FORMATTER = argparse.RawDescriptionHelpFormatter


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "webhooks",
        help="register and manage webhook subscriptions",
        description="Register webhook URLs for a tenant's Fetcher job events and manage them "
        "through the management API (see `jobhooks webhooks COMMAND --help`).",
    )
    commands = parser.add_subparsers(dest="webhooks_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    add = commands.add_parser(
        "add",
        parents=[connection],
        formatter_class=_FORMATTER,
        help="create a subscription; prints it with its signing secret, once",
        description="Create a subscription and print it as JSON. The `secret` (whsec_...)\n"
        "is shown this once: store it where the receiver verifies signatures.\n\n"
        "  jobhooks webhooks add --tenant acme --url https://hooks.example.com/fetcher \\\n"
        "      --events job.completed,job.failed --job-name 'billing-*'",
    )
    add.add_argument("--tenant", required=True, help="the tenant id (X-Tenant-ID)")
    add.add_argument("--url", required=True, help="https URL of a public host")
    add.add_argument(
        "--events",
        type=_event_list,
        metavar="TYPES",
        help="comma-separated event types (default: job.completed,job.failed; notification "
        "types such as job_health.degraded are listed explicitly)",
    )
    _job_name_argument(add, "only jobs whose job_name matches (repeatable; default: every job)")
    add.add_argument("--description", help="free text for people, up to 512 characters")
    add.set_defaults(handler=run_add)

    listing = commands.add_parser(
        "list",
        parents=[connection],
        help="list a tenant's subscriptions",
        description="List a tenant's subscriptions, one page at a time (never their secrets).",
    )
    listing.add_argument("--tenant", required=True, help="the tenant id")
    listing.add_argument("--limit", type=int, default=50, help="page size, 1-100 (default 50)")
    listing.add_argument("--cursor", help="`next_cursor` of the previous page")
    add_output_argument(listing)
    listing.set_defaults(handler=run_list)

    show = commands.add_parser(
        "show",
        parents=[connection],
        help="show one subscription",
        description="Print one subscription as JSON (its secrets' ids and expiry, never a secret).",
    )
    _subscription_arguments(show)
    show.set_defaults(handler=run_show)

    update = commands.add_parser(
        "update",
        parents=[connection],
        help="change the URL, event types, job filter, description; enable or disable",
        description="Change a subscription and print it as JSON. Only the options given change; "
        '--description "" clears the description, --job-name "" the job filter.',
    )
    _subscription_arguments(update)
    update.add_argument("--url", help="a new https URL")
    update.add_argument("--events", type=_event_list, metavar="TYPES", help="new event types")
    _job_name_argument(update, 'the new job filter, replacing the old (repeatable; "" clears it)')
    update.add_argument("--description", help="a new description")
    status = update.add_mutually_exclusive_group()
    status.add_argument("--enable", action="store_true", help="resume deliveries")
    status.add_argument("--disable", action="store_true", help="stop deliveries")
    update.set_defaults(handler=run_update)

    remove = commands.add_parser(
        "remove",
        parents=[connection],
        help="delete a subscription",
        description="Delete a subscription; deliveries to it stop.",
    )
    _subscription_arguments(remove)
    remove.set_defaults(handler=run_remove)

    rotate = commands.add_parser(
        "rotate-secret",
        parents=[connection],
        help="issue a new signing secret; prints it once",
        description="Issue a new signing secret and print the subscription with it as JSON. "
        "The previous secret keeps signing (every webhook carries both signatures) for the "
        "grace period, so receivers can switch without dropping a webhook.",
    )
    _subscription_arguments(rotate)
    rotate.add_argument(
        "--grace",
        type=duration_seconds,
        metavar="DURATION",
        help="how long the old secret still signs: 0 to 7d, as seconds or 30m, 24h, 7d "
        "(default 24h)",
    )
    rotate.set_defaults(handler=run_rotate_secret)

    test = commands.add_parser(
        "test",
        parents=[connection],
        help="send a signed test webhook now",
        description="POST a signed jobhooks.test webhook to the subscription now and print the "
        "attempt's result as JSON. Exits 1 when the receiver did not answer 2xx.",
    )
    _subscription_arguments(test)
    test.set_defaults(handler=run_test)

    recover = commands.add_parser(
        "recover",
        parents=[connection],
        formatter_class=_FORMATTER,
        help="send again every delivery since a time that did not succeed",
        description="Send again, oldest first, every delivery of an active subscription created\n"
        "since --since that did not succeed (skipped while it was disabled, failed, parked or\n"
        "gone), with the same webhook-id as before. Prints a progress line per page on stderr\n"
        "and the counts as JSON. Safe to run again: what was sent is not sent twice.\n\n"
        "  jobhooks webhooks recover sub_... --since 2026-12-06T01:00:00Z",
    )
    _subscription_arguments(recover)
    recover.add_argument(
        "--since",
        required=True,
        type=iso_time,
        metavar="ISO",
        help="an ISO 8601 time with a time zone, e.g. 2026-12-06T01:00:00Z",
    )
    recover.add_argument(
        "--page-size",
        type=int,
        default=500,
        metavar="N",
        help="deliveries per API call, 1-1000 (default 500)",
    )
    recover.set_defaults(handler=run_recover)


def run_add(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"tenant_id": args.tenant, "url": args.url}
    if args.events is not None:
        body["event_types"] = args.events
    if args.job_names is not None:
        body["job_names"] = _job_names(args.job_names)
    if args.description is not None:
        body["description"] = args.description
    print_json(ApiClient.from_args(args).post("/v1/subscriptions", body))
    return 0


def run_list(args: argparse.Namespace) -> int:
    page = ApiClient.from_args(args).get(
        "/v1/subscriptions", tenant_id=args.tenant, limit=args.limit, cursor=args.cursor
    )
    if args.output == "json":
        print_json(page)
        return 0
    print(render_table(page["subscriptions"], SUBSCRIPTION_COLUMNS))
    _more(page)
    return 0


def run_show(args: argparse.Namespace) -> int:
    print_json(ApiClient.from_args(args).get(_path(args), tenant_id=args.tenant))
    return 0


def run_update(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {}
    if args.url is not None:
        body["url"] = args.url
    if args.events is not None:
        body["event_types"] = args.events
    if args.job_names is not None:
        body["job_names"] = _job_names(args.job_names)
    if args.description is not None:
        body["description"] = args.description
    if args.enable or args.disable:
        body["status"] = "active" if args.enable else "disabled"
    if not body:
        raise CliError(
            "nothing to change: give --url, --events, --job-name, --description, --enable or "
            "--disable",
            EXIT_USAGE,
        )
    print_json(ApiClient.from_args(args).patch(_path(args), body, tenant_id=args.tenant))
    return 0


def run_remove(args: argparse.Namespace) -> int:
    ApiClient.from_args(args).delete(_path(args), tenant_id=args.tenant)
    print_json({"subscription_id": args.subscription_id, "deleted": True})
    return 0


def run_rotate_secret(args: argparse.Namespace) -> int:
    body = {"grace_seconds": args.grace} if args.grace is not None else None
    client = ApiClient.from_args(args)
    print_json(client.post(f"{_path(args)}/rotate-secret", body, tenant_id=args.tenant))
    return 0


def run_test(args: argparse.Namespace) -> int:
    result = ApiClient.from_args(args).post(f"{_path(args)}/test", tenant_id=args.tenant)
    print_json(result)
    if not result.get("delivered"):
        answer = result.get("status_code") or result.get("error") or "no answer"
        detail = f" ({result['detail']})" if result.get("detail") else ""
        raise CliError(f"test webhook not delivered: {answer}{detail}", EXIT_FAILED)
    return 0


def run_recover(args: argparse.Namespace) -> int:
    client = ApiClient.from_args(args)
    body: dict[str, Any] = {"since": args.since, "limit": args.page_size}
    totals: Counter[str] = Counter()
    sent = unavailable = pages = 0
    since = args.since
    while True:
        page = client.post(f"{_path(args)}/recover", body, tenant_id=args.tenant)
        pages += 1
        since = page.get("since", since)
        sent += int(page.get("sent", 0))
        unavailable += int(page.get("unavailable", 0))
        totals.update({status: int(n) for status, n in (page.get("by_status") or {}).items()})
        cursor = page.get("next_cursor")
        print(
            f"recover {args.subscription_id}: {sent} sent{_by_status(totals)}"
            + (", more to go" if cursor else ", done"),
            file=sys.stderr,
            flush=True,
        )
        if not cursor:
            break
        body["cursor"] = cursor
    print_json(
        {
            "subscription_id": args.subscription_id,
            "since": since,
            "sent": sent,
            "by_status": dict(sorted(totals.items())),
            "unavailable": unavailable,
            "pages": pages,
        }
    )
    return 0


def _by_status(totals: Counter[str]) -> str:
    counted = ", ".join(f"{status} {n}" for status, n in sorted(totals.items()) if n)
    return f" ({counted})" if counted else ""


def iso_time(text: str) -> str:
    """An ISO 8601 time with a time zone, as given (the API judges it again)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-12-06T01:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no time zone: add Z for UTC, e.g. 2026-12-06T01:00:00Z"
        )
    return text.strip()


SUBSCRIPTION_COLUMNS = (
    Column("ID", lambda row: row["subscription_id"]),
    Column("STATUS", lambda row: row["status"]),
    Column(
        "EVENTS",
        lambda row: ",".join(kind.removeprefix("job.") for kind in row["event_types"]),
        flexible=True,
        min_width=9,
    ),
    Column("URL", lambda row: row["url"], flexible=True, min_width=16),
)


def _subscription_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("subscription_id", metavar="SUBSCRIPTION_ID", help="sub_...")
    parser.add_argument(
        "--tenant", help="only if it is this tenant's (another tenant's reads as not found)"
    )


def _job_name_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument(
        "--job-name", dest="job_names", action="append", metavar="PATTERN", help=help_text
    )


def _job_names(patterns: list[str]) -> list[str]:
    """The patterns given; `--job-name ""` alone is the empty filter (every job)."""
    return [pattern for pattern in patterns if pattern]


def _path(args: argparse.Namespace) -> str:
    return f"/v1/subscriptions/{quote(args.subscription_id, safe='')}"


def _event_list(text: str) -> list[str]:
    events = [part.strip() for part in text.split(",") if part.strip()]
    if not events:
        raise argparse.ArgumentTypeError("give at least one event type, e.g. job.completed")
    return events


def duration_seconds(text: str) -> int:
    """`3600`, `30m`, `24h`, `7d` as seconds (the CLI's durations)."""
    match = _DURATION.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 3600, 30m, 24h, 7d")
    return int(match.group(1)) * _SECONDS[match.group(2)]


def _more(page: dict[str, Any]) -> None:
    if page.get("next_cursor"):
        print(f"more: --cursor {page['next_cursor']}", file=sys.stderr)
