"""`jobhooks quarantine`: messages ingest rejected, and replaying them (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote

from jobhooks.inbound.rejection import Reason

from jobhooks_tools.cli.api_client import ApiClient, connection_arguments
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.tables import (
    Column,
    add_output_argument,
    print_json,
    render_table,
    short_time,
)

# As `jobhooks inspect`: the message was rejected (again).
EXIT_REJECTED = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "quarantine",
        help="rejected messages: list, show, replay",
        description="Inspect the messages ingest rejected, with their reason codes, and replay "
        "them once the cause is fixed (see `jobhooks quarantine COMMAND --help`).",
    )
    commands = parser.add_subparsers(dest="quarantine_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    listing = commands.add_parser(
        "list",
        parents=[connection],
        help="rejected messages with their reason codes",
        description="List quarantined messages; with --reason, only those (newest first).",
    )
    listing.add_argument(
        "--reason", choices=[reason.value for reason in Reason], help="only this reason code"
    )
    listing.add_argument("--limit", type=int, default=50, help="page size, 1-100 (default 50)")
    listing.add_argument("--cursor", help="`next_cursor` of the previous page")
    add_output_argument(listing)
    listing.set_defaults(handler=run_list)

    show = commands.add_parser(
        "show",
        parents=[connection],
        help="one rejected message, the original included",
        description="Print one quarantined message as JSON: its reason, the detail, and the "
        "original SQS body (verify it offline with `jobhooks inspect`).",
    )
    show.add_argument("quarantine_id", metavar="QUARANTINE_ID", help="q_...")
    show.set_defaults(handler=run_show)

    replay = commands.add_parser(
        "replay",
        parents=[connection],
        help="run a rejected message through ingest again",
        description="Replay a quarantined message as if it arrived now, after fixing the cause "
        "(for example adding a rotated Fetcher key). Prints the outcome as JSON; exits 3 when "
        "it is rejected again (it is then quarantined under a new id).",
    )
    replay.add_argument("quarantine_id", metavar="QUARANTINE_ID", help="q_...")
    replay.add_argument(
        "--allow-stale",
        action="store_true",
        help="accept a timestamp older than the dedup retention (stale_timestamp) this once",
    )
    replay.set_defaults(handler=run_replay)


def run_list(args: argparse.Namespace) -> int:
    page = ApiClient.from_args(args).get(
        "/v1/quarantine", reason=args.reason, limit=args.limit, cursor=args.cursor
    )
    if args.output == "json":
        print_json(page)
        return 0
    print(render_table(page["messages"], QUARANTINE_COLUMNS))
    if page.get("next_cursor"):
        print(f"more: --cursor {page['next_cursor']}", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    path = f"/v1/quarantine/{quote(args.quarantine_id, safe='')}"
    print_json(ApiClient.from_args(args).get(path))
    return 0


def run_replay(args: argparse.Namespace) -> int:
    path = f"/v1/quarantine/{quote(args.quarantine_id, safe='')}/replay"
    body = {"allow_stale": True} if args.allow_stale else None
    result = ApiClient.from_args(args).post(path, body)
    print_json(result)
    if result.get("outcome") == "rejected":
        raise CliError(
            f"rejected again: {result.get('reason')}: {result.get('detail')} "
            f"(now {result.get('quarantined_as')})",
            EXIT_REJECTED,
        )
    return 0


QUARANTINE_COLUMNS = (
    Column("ID", lambda row: row["quarantine_id"]),
    Column("REASON", lambda row: row["reason"], flexible=True, min_width=12),
    Column("STATUS", lambda row: row["status"]),
    Column("RECEIVED", lambda row: short_time(row.get("received_at"))),
)
