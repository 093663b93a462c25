"""`jobhooks alerts`: a tenant's job-health alert rules (docs/cli.md, docs/notifications.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from jobhooks_tools.cli.api_client import EXIT_USAGE, ApiClient, connection_arguments
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.tables import Column, add_output_argument, print_json, render_table
from jobhooks_tools.cli.webhooks import duration_seconds

_FORMATTER = argparse.RawDescriptionHelpFormatter


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "alerts",
        help="job-health alert rules (job_health.degraded / job_health.recovered)",
        description="Rules that watch a tenant's jobs: when a job's failure rate or p95 "
        "duration crosses a threshold over a window, job_health.degraded goes to the tenant's "
        "subscriptions that list it (and job_health.recovered when it is back under). See "
        "`jobhooks alerts COMMAND --help`.",
    )
    commands = parser.add_subparsers(dest="alerts_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    add = commands.add_parser(
        "add",
        parents=[connection],
        formatter_class=_FORMATTER,
        help="add a rule; prints it as JSON",
        description="Add a job-health alert rule and print it as JSON. Give --failure-rate, "
        "--p95-ms or both.\n\n"
        "  jobhooks alerts add --tenant acme --job-name 'billing-*' --failure-rate 0.2\n"
        "  jobhooks alerts add --tenant acme --job-name nightly-report --p95-ms 60000 \\\n"
        "      --min-outcomes 5 --window 1h",
    )
    add.add_argument("--tenant", required=True, help="the tenant id")
    add.add_argument(
        "--job-name",
        required=True,
        metavar="PATTERN",
        help="a job name or glob pattern (billing-*); each matching job is judged on its own",
    )
    add.add_argument(
        "--failure-rate",
        type=_rate,
        metavar="R",
        help="degraded at or above this failure rate over the window (0.2 is 20 %%)",
    )
    add.add_argument(
        "--p95-ms",
        type=_positive,
        metavar="N",
        help="degraded when the p95 of measured durations is at or above N ms",
    )
    add.add_argument(
        "--min-outcomes",
        type=_positive,
        metavar="N",
        help="outcomes the window must hold for a verdict (default 10)",
    )
    add.add_argument(
        "--window",
        type=duration_seconds,
        metavar="DURATION",
        help="how far back each evaluation looks: 60 to 1d, as seconds or 15m, 1h (default 15m)",
    )
    add.set_defaults(handler=run_add)

    listing = commands.add_parser(
        "list",
        parents=[connection],
        help="list a tenant's rules and their recent alerts",
        description="List a tenant's alert rules (with the jobs each finds degraded now) and "
        "the recent alerts they sent.",
    )
    listing.add_argument("--tenant", required=True, help="the tenant id")
    add_output_argument(listing)
    listing.set_defaults(handler=run_list)

    remove = commands.add_parser(
        "remove",
        parents=[connection],
        help="remove a rule",
        description="Remove an alert rule; its jobs are no longer watched.",
    )
    remove.add_argument("rule_id", metavar="RULE_ID", help="alr_...")
    remove.add_argument(
        "--tenant", help="only if it is this tenant's (another tenant's reads as not found)"
    )
    remove.set_defaults(handler=run_remove)


def run_add(args: argparse.Namespace) -> int:
    if args.failure_rate is None and args.p95_ms is None:
        raise CliError("give --failure-rate, --p95-ms or both", EXIT_USAGE)
    body: dict[str, Any] = {"tenant_id": args.tenant, "job_name": args.job_name}
    for field, value in (
        ("failure_rate", args.failure_rate),
        ("p95_ms", args.p95_ms),
        ("min_outcomes", args.min_outcomes),
        ("window_seconds", args.window),
    ):
        if value is not None:
            body[field] = value
    print_json(ApiClient.from_args(args).post("/v1/alerts", body))
    return 0


def run_list(args: argparse.Namespace) -> int:
    listing = ApiClient.from_args(args).get("/v1/alerts", tenant_id=args.tenant)
    if args.output == "json":
        print_json(listing)
        return 0
    print(render_table(listing["rules"], RULE_COLUMNS))
    if listing["recent_alerts"]:
        print()
        print(render_table(listing["recent_alerts"], ALERT_COLUMNS))
    return 0


def run_remove(args: argparse.Namespace) -> int:
    path = f"/v1/alerts/{quote(args.rule_id, safe='')}"
    ApiClient.from_args(args).delete(path, tenant_id=args.tenant)
    print_json({"rule_id": args.rule_id, "deleted": True})
    return 0


def _thresholds(rule: Mapping[str, Any]) -> str:
    parts = []
    if rule.get("failure_rate") is not None:
        parts.append(f"fail>={rule['failure_rate']:g}")
    if rule.get("p95_ms") is not None:
        parts.append(f"p95>={rule['p95_ms']}ms")
    return ",".join(parts)


RULE_COLUMNS = (
    Column("ID", lambda rule: rule["rule_id"]),
    Column("JOBS", lambda rule: rule["job_name"], flexible=True, min_width=8),
    Column("THRESHOLDS", _thresholds),
    Column("WINDOW", lambda rule: f"{rule['window_seconds']}s/{rule['min_outcomes']}+"),
    Column(
        "DEGRADED",
        lambda rule: ",".join(job["job_name"] for job in rule["degraded"]) or "-",
        flexible=True,
        min_width=8,
    ),
)
ALERT_COLUMNS = (
    Column("AT", lambda alert: alert["at"]),
    Column("ALERT", lambda alert: alert["type"].removeprefix("job_health.")),
    Column("JOB", lambda alert: alert["job_name"], flexible=True, min_width=8),
    Column("FAIL", lambda alert: f"{alert['failures']}/{alert['outcomes']}"),
    Column("RULE", lambda alert: alert["rule_id"]),
)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number such as 0.2") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError("a failure rate is above 0 and at most 1 (0.2 is 20 %)")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
