"""`jobhooks analytics`: the background_job_completed table through the management API
(docs/analytics.md, docs/cli.md).

    questions                      the reviewed questions, one per line
    query NAME [--from] [--to]     one question's answer over a window
    rows [--from] [--to]           the deduplicated rows of a window
    check                          the contract's validation checklist against the running stack
    report [--from] [--to]         one self-contained HTML page of job health

The same commands work against `jobhooks dev` (DuckDB answers at once) and a deployed stack
(Athena): when Athena is still running a query the API answers 202 with its id, and the command
polls it, with a progress line on stderr, for at most `--max-wait` seconds.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from jobhooks_tools.cli.analytics_answers import (
    DEFAULT_MAX_WAIT_SECONDS,
    answer_question,
    list_rows,
    query_result,
)
from jobhooks_tools.cli.api_client import ApiClient, connection_arguments
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.tables import Column, add_output_argument, print_json, render_table

DEFAULT_REPORT_FILE: Final = "jobhooks-analytics-report.html"
# The `query` answer's keys in JSON (the API's `note` goes to stderr).
ANSWER_KEYS: Final = ("question", "engine", "from", "to", "columns", "rows")

_DESCRIPTION = """\
The background_job_completed table: one row per verified, deduplicated event (whether or not a
subscription wanted it), and the reviewed questions that answer which jobs fail, retry, wait
or run slowly. Every command goes through the management API: against `jobhooks dev` DuckDB
answers from local files, against a deployed stack Athena does (a query still running after the
API's wait is polled, with a progress line on stderr). Windows are [from, to) on timestamp_utc,
UTC, by default the last 7 days. Operators only: the table holds every tenant's outcomes.
See `jobhooks analytics COMMAND --help`."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "analytics",
        help="the analytics table: questions, query, rows, check, report",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="analytics_command", metavar="COMMAND", required=True)
    connection = connection_arguments()
    window = _window_arguments()

    listing = commands.add_parser(
        "questions",
        parents=[connection],
        help="the reviewed questions, one per line",
        description="List the reviewed questions: each name, and what it answers.",
    )
    add_output_argument(listing)
    listing.set_defaults(handler=run_questions)

    query = commands.add_parser(
        "query",
        parents=[connection, window],
        help="answer one question over a window",
        description="Run one reviewed question over [--from, --to) and print its answer: a "
        'table, or with --output json {"question", "engine", "from", "to", "columns", "rows"}. '
        "A note (no outcome in the window, nothing measured) goes to stderr.",
    )
    query.add_argument("name", metavar="NAME", help="a question (jobhooks analytics questions)")
    add_output_argument(query)
    query.set_defaults(handler=run_query)

    rows = commands.add_parser(
        "rows",
        parents=[connection, window],
        help="the deduplicated rows of a window",
        description="List the table's rows of [--from, --to), one per event_id (the outcomes "
        'view), the first 1,000 by timestamp_utc: a table, or with --output json {"rows": '
        "[{...}, ...]}, one object per row with every column.",
    )
    add_output_argument(rows)
    rows.set_defaults(handler=run_rows)

    check = commands.add_parser(
        "check",
        parents=[connection],
        help="the contract's validation checklist, against the running stack",
        description=_CHECK_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _check_arguments(check)
    check.set_defaults(handler=run_check)

    report = commands.add_parser(
        "report",
        parents=[connection, window],
        help="write one self-contained HTML page of job health",
        description="Write failure rate and p95 duration per job_name per day over [--from, "
        "--to) as one HTML file: inline charts and tables, no script, nothing fetched, so it "
        "opens anywhere without a network.",
    )
    report.add_argument(
        "--out",
        metavar="FILE",
        default=DEFAULT_REPORT_FILE,
        help=f"the file to write (default {DEFAULT_REPORT_FILE})",
    )
    report.set_defaults(handler=run_report)


def _window_arguments() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("window")
    group.add_argument(
        "--from",
        dest="window_from",
        metavar="ISO",
        help="start, inclusive: 2026-07-13 or 2026-07-13T18:00:00Z; no zone means UTC "
        "(default: 7 days before --to)",
    )
    group.add_argument(
        "--to", dest="window_to", metavar="ISO", help="end, exclusive (default: now)"
    )
    group.add_argument(
        "--max-wait",
        type=_positive_seconds,
        default=DEFAULT_MAX_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"how long to poll a query Athena is still running (default "
        f"{DEFAULT_MAX_WAIT_SECONDS:g})",
    )
    return parent


# -- the commands ------------------------------------------------------------------------------


def run_questions(args: argparse.Namespace) -> int:
    listed = ApiClient.from_args(args).get("/v1/analytics/questions")
    if args.output == "json":
        print_json(listed)
        return 0
    width = max((len(q["name"]) for q in listed["questions"]), default=0)
    for question in listed["questions"]:
        print(f"{question['name']:<{width}}  {question['question']}")
    return 0


def run_query(args: argparse.Namespace) -> int:
    answer = answer_question(
        ApiClient.from_args(args),
        args.name,
        window_from=args.window_from,
        window_to=args.window_to,
        max_wait=args.max_wait,
    )
    if args.output == "json":
        print_json({key: answer[key] for key in ANSWER_KEYS})
    else:
        names = answer["columns"]
        columns = [Column(name, _field(name), flexible=True, min_width=len(name)) for name in names]
        print(render_table([dict(zip(names, row, strict=True)) for row in answer["rows"]], columns))
    if answer.get("note"):
        print(answer["note"], file=sys.stderr)
    return 0


def run_rows(args: argparse.Namespace) -> int:
    listed = list_rows(
        ApiClient.from_args(args),
        window_from=args.window_from,
        window_to=args.window_to,
        max_wait=args.max_wait,
    )
    if args.output == "json":
        print_json({"rows": listed["rows"]})
    else:
        print(render_table(listed["rows"], ROW_COLUMNS))
    if listed.get("truncated"):
        print(
            f"only the first {len(listed['rows'])} rows of the window: narrow --from/--to",
            file=sys.stderr,
        )
    return 0


def run_report(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from jobhooks_tools.local.analytics.report import REPORT_QUESTION, render_report

    answer = answer_question(
        ApiClient.from_args(args),
        REPORT_QUESTION,
        window_from=args.window_from,
        window_to=args.window_to,
        max_wait=args.max_wait,
    )
    page = render_report(query_result(answer), generated_at=datetime.now(UTC))
    path = Path(args.out)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None
    jobs = len({row[answer["columns"].index("job_name")] for row in answer["rows"]})
    print(
        f"wrote {path} ({len(page.encode()):,} bytes): {jobs} job_name(s), window "
        f"[{answer['from']}, {answer['to']}), engine {answer['engine']}"
    )
    return 0


def run_check(args: argparse.Namespace) -> int:
    from jobhooks_tools.cli.analytics_check import run_analytics_check

    return run_analytics_check(args)


# -- output ------------------------------------------------------------------------------------


def _shown(value: Any) -> Any:
    if isinstance(value, list):
        return ",".join(str(item) for item in value) or "[]"
    return value


def _field(name: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda row: _shown(row.get(name))


def _moment(row: Mapping[str, Any]) -> str:
    """`2026-07-13T18:04:11.204Z` -> `2026-07-13 18:04:11` (UTC): the table fits 80 columns."""
    return str(row.get("timestamp_utc") or "")[:19].replace("T", " ")


ROW_COLUMNS: Final = (
    Column("TIME (UTC)", _moment),
    Column("STATUS", _field("status")),
    Column("JOB_NAME", _field("job_name"), flexible=True),
    Column("MS", _field("duration_ms")),
    Column("CATEGORY", _field("error_category"), flexible=True),
    Column("ACCOUNT", _field("account_id"), flexible=True),
    Column("EVENT_ID", _field("event_id"), flexible=True, min_width=12),
)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


# -- check -------------------------------------------------------------------------------------

_CHECK_DESCRIPTION = """\
Run the background_job_completed contract's validation checklist against the running stack,
through the real path (a signed Fetcher event -> RabbitMQ -> shovel -> ingest -> the table):

  1. publish a known fixture: a completed job of a job_name of its own, and a controlled
     failure, for a tenant of its own (no subscription: nothing is delivered);
  2. send the completed event's id again (a repairer re-emission);
  3. wait for the rows (Firehose buffers up to 5 minutes on AWS: --rows-timeout);
  4. check the window holds the fixture's rows alone, and
  5. all 11 required fields and the 2 extras with their documented types,
  6. with the fixture's values;
  7. run every reviewed question over the fixed window and reconcile its answer with the
     fixture;
  8. read the rows again: the re-sent id is still one row.

Each step prints a line; the first mismatch ends the check with exit code 1, naming the step.
The fixture is published through RabbitMQ with --amqp-url (what jobhooks dev prints), or,
without a broker, sent to the ingest queue as the shovel would (--ingest-queue-url: the stack's
IngestQueueUrl output; needs sqs:SendMessage on it). It is signed with --key-hex or
--app-enc-key (default: the public demo key that jobhooks dev trusts)."""


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    import os

    from jobhooks_tools.cli.publish_sample import AMQP_URL_ENV

    route = parser.add_argument_group("how the fixture gets in (one of)")
    targets = route.add_mutually_exclusive_group()
    targets.add_argument(
        "--amqp-url",
        default=os.environ.get(AMQP_URL_ENV) or None,
        metavar="URL",
        help=f"publish through this RabbitMQ, as Fetcher does [env {AMQP_URL_ENV}]",
    )
    targets.add_argument(
        "--ingest-queue-url",
        metavar="URL",
        help="send to this SQS ingest queue, as the shovel does (a stack whose broker you "
        "cannot reach); AWS credentials from --profile / the usual chain",
    )
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument("--key-hex", metavar="HEX", help="the Fetcher external HMAC key to sign with")
    keys.add_argument("--app-enc-key", metavar="B64", help="derive the signing key from this")
    parser.add_argument(
        "--rows-timeout",
        type=_positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="how long to wait for the fixture's rows (default 600: Firehose buffers up to 5 "
        "minutes before the rows reach S3)",
    )
    parser.add_argument(
        "--max-wait",
        type=_positive_seconds,
        default=DEFAULT_MAX_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"how long to poll a query Athena is still running (default "
        f"{DEFAULT_MAX_WAIT_SECONDS:g})",
    )
