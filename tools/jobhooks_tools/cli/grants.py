"""`jobhooks grants`: bind IAM callers to tenants (docs/cli.md, docs/api.md "Who may call").

A caller whose IAM ARN matches a grant's pattern acts for the grant's tenants only; every other
IAM caller is an operator. Operators only: a tenant-bound caller is refused (403).
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from jobhooks_tools.cli.api_client import ApiClient, connection_arguments
from jobhooks_tools.cli.tables import Column, add_output_argument, print_json, render_table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "grants",
        help="bind IAM callers to tenants (tenant-bound access)",
        description="Grants map an IAM principal ARN pattern to the tenants its callers may act "
        "for. A caller matching no grant is an operator. See docs/api.md.",
    )
    commands = parser.add_subparsers(dest="grants_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    add = commands.add_parser(
        "add",
        parents=[connection],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="bind the principals matching a pattern to tenants; prints the grant",
        description="Add a grant and print it as JSON. Patterns use IAM's wildcards (* and ?)\n"
        "and match the caller's ARN as API Gateway reports it: a role's callers appear as\n"
        "arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION.\n\n"
        "  jobhooks grants add --principal 'arn:aws:sts::123456789012:assumed-role/acme-ci/*' \\\n"
        "      --tenant acme",
    )
    add.add_argument("--principal", required=True, metavar="ARN_PATTERN", help="IAM ARN pattern")
    add.add_argument(
        "--tenant",
        required=True,
        action="append",
        dest="tenants",
        metavar="TENANT",
        help="a tenant the principals may act for (repeat for several)",
    )
    add.add_argument("--description", default="", help="why this grant exists (256 characters)")
    add.set_defaults(handler=run_add)

    listing = commands.add_parser(
        "list", parents=[connection], help="list the grants", description="List every grant."
    )
    add_output_argument(listing)
    listing.set_defaults(handler=run_list)

    remove = commands.add_parser(
        "remove",
        parents=[connection],
        help="remove a grant",
        description="Remove a grant. Its principals are operators again, unless another grant "
        "still binds them: restrict operators with IAM too (docs/api.md).",
    )
    remove.add_argument("grant_id", metavar="GRANT_ID", help="grt_...")
    remove.set_defaults(handler=run_remove)


def run_add(args: argparse.Namespace) -> int:
    body = {
        "principal_pattern": args.principal,
        "tenants": args.tenants,
        "description": args.description,
    }
    print_json(ApiClient.from_args(args).post("/v1/grants", body))
    return 0


def run_list(args: argparse.Namespace) -> int:
    listing = ApiClient.from_args(args).get("/v1/grants")
    if args.output == "json":
        print_json(listing)
    else:
        print(render_table(listing["grants"], GRANT_COLUMNS))
    return 0


def run_remove(args: argparse.Namespace) -> int:
    ApiClient.from_args(args).delete(f"/v1/grants/{quote(args.grant_id, safe='')}")
    print_json({"grant_id": args.grant_id, "removed": True})
    return 0


GRANT_COLUMNS = (
    Column("ID", lambda row: row["grant_id"]),
    Column("TENANTS", lambda row: ",".join(row["tenants"]), flexible=True, min_width=8),
    Column("PRINCIPAL PATTERN", lambda row: row["principal_pattern"], flexible=True, min_width=20),
)
