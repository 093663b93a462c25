"""`jobhooks deliveries`: attempt history, and replaying a delivery or an event (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from jobhooks_tools.cli.api_client import EXIT_USAGE, ApiClient, connection_arguments
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.tables import (
    Column,
    add_output_argument,
    print_json,
    render_table,
    short_time,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "deliveries",
        help="delivery attempts; replay a delivery or an event",
        description="Read delivery attempts and replay deliveries or events through the "
        "management API (see `jobhooks deliveries COMMAND --help`).",
    )
    commands = parser.add_subparsers(dest="deliveries_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    listing = commands.add_parser(
        "list",
        parents=[connection],
        help="a subscription's or an event's deliveries, or events nobody wanted",
        description="List the deliveries of a subscription (newest first) or of an event (one "
        "per subscription) with their status and attempts; or, with --unmatched, a tenant's "
        "events that no subscription wanted.",
    )
    which = listing.add_mutually_exclusive_group(required=True)
    which.add_argument("--subscription", metavar="SUBSCRIPTION_ID", help="sub_...")
    which.add_argument("--event", metavar="EVENT_ID", help="an event's ce-id")
    which.add_argument(
        "--unmatched", action="store_true", help="events no subscription matched (needs --tenant)"
    )
    listing.add_argument("--tenant", help="only this tenant's (required with --unmatched)")
    listing.add_argument("--limit", type=int, default=50, help="page size, 1-100 (default 50)")
    listing.add_argument("--cursor", help="`next_cursor` of the previous page")
    add_output_argument(listing)
    listing.set_defaults(handler=run_list)

    show = commands.add_parser(
        "show",
        parents=[connection],
        help="one delivery with its attempt log",
        description="Print one delivery with every attempt (status code or error, latency, the "
        "start of the receiver's answer) as JSON.",
    )
    show.add_argument("delivery_id", metavar="DELIVERY_ID", help="dlv_...")
    show.add_argument("--tenant", help="only if it is this tenant's")
    show.set_defaults(handler=run_show)

    replay = commands.add_parser(
        "replay",
        parents=[connection],
        help="deliver one delivery, or one event, again",
        description="Enqueue a delivery again (even one that succeeded: receivers deduplicate "
        "on webhook-id), or with --event an event to every subscription that wants it now. "
        "Prints what was enqueued as JSON.",
    )
    target = replay.add_mutually_exclusive_group(required=True)
    target.add_argument("delivery_id", metavar="DELIVERY_ID", nargs="?", help="dlv_...")
    target.add_argument("--event", metavar="EVENT_ID", help="replay this event instead")
    replay.add_argument("--tenant", help="only if it is this tenant's")
    replay.set_defaults(handler=run_replay)


def run_list(args: argparse.Namespace) -> int:
    client = ApiClient.from_args(args)
    if args.unmatched:
        if not args.tenant:
            raise CliError("--unmatched lists one tenant's events: give --tenant", EXIT_USAGE)
        page = client.get(
            "/v1/events/unmatched", tenant_id=args.tenant, limit=args.limit, cursor=args.cursor
        )
        rows: list[dict[str, Any]] = page["events"]
        columns: Sequence[Column] = EVENT_COLUMNS
    else:
        page = client.get(
            "/v1/deliveries",
            subscription_id=args.subscription,
            event_id=args.event,
            tenant_id=args.tenant,
            limit=args.limit,
            cursor=args.cursor,
        )
        rows, columns = page["deliveries"], DELIVERY_COLUMNS
    if args.output == "json":
        print_json(page)
        return 0
    print(render_table(rows, columns))
    if page.get("next_cursor"):
        print(f"more: --cursor {page['next_cursor']}", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    path = f"/v1/deliveries/{quote(args.delivery_id, safe='')}"
    print_json(ApiClient.from_args(args).get(path, tenant_id=args.tenant))
    return 0


def run_replay(args: argparse.Namespace) -> int:
    client = ApiClient.from_args(args)
    if args.event:
        # A ce-id's characters are all legal in a path segment; anything else is encoded.
        path = f"/v1/events/{quote(args.event, safe=':@+=~')}/replay"
    else:
        path = f"/v1/deliveries/{quote(args.delivery_id, safe='')}/replay"
    print_json(client.post(path, tenant_id=args.tenant))
    return 0


def _last_result(row: Mapping[str, Any]) -> str:
    last = row.get("last_attempt") or {}
    if last.get("status_code"):
        return f"http_{last['status_code']}"
    return str(last.get("error") or "-")


DELIVERY_COLUMNS = (
    Column("DELIVERY", lambda row: row["delivery_id"]),
    Column("STATUS", lambda row: row["status"]),
    Column("TRIES", lambda row: row["attempt_count"]),
    Column("LAST", _last_result, flexible=True, min_width=4),
    Column("UPDATED", lambda row: short_time(row.get("updated_at"))),
)

EVENT_COLUMNS = (
    Column("EVENT", lambda row: row["event_id"], flexible=True, min_width=20),
    Column("TYPE", lambda row: row["event_type"]),
    Column("DONE", lambda row: short_time(row.get("done_at"))),
)
