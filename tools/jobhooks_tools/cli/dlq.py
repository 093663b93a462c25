"""`jobhooks dlq`: what is parked in the dead-letter queues, and sending it back (docs/cli.md)."""

from __future__ import annotations

import argparse
from typing import Any

from jobhooks_tools.cli.api_client import ApiClient, connection_arguments
from jobhooks_tools.cli.tables import (
    Column,
    add_output_argument,
    print_json,
    render_table,
    short_time,
)

QUEUES = ("delivery", "ingest", "spill")
METHODS = ("auto", "move_task", "resend")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dlq",
        help="dead-letter queues: count, peek, redrive",
        description="Count and peek at the delivery, ingest and spill dead-letter queues, and "
        "move their messages back (see `jobhooks dlq COMMAND --help`).",
    )
    commands = parser.add_subparsers(dest="dlq_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    listing = commands.add_parser(
        "list",
        parents=[connection],
        help="count and peek at a dead-letter queue",
        description="Print how many messages wait in a dead-letter queue and peek at a few "
        "(they stay there). Parked deliveries show why they were parked.",
    )
    listing.add_argument("--queue", choices=QUEUES, default="delivery", help="default delivery")
    listing.add_argument(
        "--limit", type=int, default=10, help="messages to peek at, 1-100 (default 10)"
    )
    add_output_argument(listing)
    listing.set_defaults(handler=run_list)

    redrive = commands.add_parser(
        "redrive",
        parents=[connection],
        help="move a dead-letter queue's messages back to their source queue",
        description="Move the messages back so they are delivered (ingested, written) again. "
        "On AWS "
        "SQS moves them itself (StartMessageMoveTask); the local stack receives and resends "
        "them. JOBHOOKS_DLQ_REDRIVE on the API decides, --method overrides it. Prints the "
        "result as JSON.",
    )
    redrive.add_argument("--queue", choices=QUEUES, default="delivery", help="default delivery")
    redrive.add_argument("--method", choices=METHODS, help="override the API's configured method")
    redrive.add_argument(
        "--max", type=int, dest="max_messages", metavar="N", help="resend at most N messages"
    )
    redrive.set_defaults(handler=run_redrive)


def run_list(args: argparse.Namespace) -> int:
    listing = ApiClient.from_args(args).get("/v1/dlq", queue=args.queue, limit=args.limit)
    if args.output == "json":
        print_json(listing)
        return 0
    print(
        f"{listing['queue']} dead-letter queue: {listing['approximate_count']} waiting, "
        f"{listing['approximate_in_flight']} in flight"
    )
    task = listing.get("move_task")
    if task:
        print(f"move task: {task['status']}, {task.get('moved')} of {task.get('to_move')} moved")
    if listing["messages"]:
        columns = {"delivery": DELIVERY_COLUMNS, "spill": SPILL_COLUMNS}.get(
            args.queue, INGEST_COLUMNS
        )
        print(render_table(listing["messages"], columns))
    return 0


def run_redrive(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"queue": args.queue}
    if args.method:
        body["method"] = args.method
    if args.max_messages is not None:
        body["max_messages"] = args.max_messages
    print_json(ApiClient.from_args(args).post("/v1/dlq/redrive", body))
    return 0


DELIVERY_COLUMNS = (
    Column("DELIVERY", lambda row: row.get("delivery_id") or row["message_id"]),
    Column("REASON", lambda row: row.get("park_reason"), flexible=True, min_width=6),
    Column("LAST", lambda row: row.get("last_result"), flexible=True, min_width=4),
    Column("SENT", lambda row: short_time(row.get("sent_at"))),
)

INGEST_COLUMNS = (
    Column("MESSAGE", lambda row: row["message_id"]),
    Column("EVENT", lambda row: row.get("event_id"), flexible=True, min_width=12),
    Column("SENT", lambda row: short_time(row.get("sent_at"))),
)

SPILL_COLUMNS = (
    Column("MESSAGE", lambda row: row["message_id"]),
    Column("KIND", lambda row: row.get("spill_kind"), flexible=True, min_width=4),
    Column("ITEMS", lambda row: row.get("spilled_items")),
    Column("SENT", lambda row: short_time(row.get("sent_at"))),
)
