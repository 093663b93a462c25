"""`jobhooks portal`: one-time links into the tenant portal, and revoking them (docs/cli.md,
docs/portal.md). Operators only: a caller bound to tenants by a grant is refused (403).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from jobhooks_tools.cli.api_client import ApiClient, connection_arguments
from jobhooks_tools.cli.tables import print_json

_TTL = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 86_400


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "portal",
        help="one-time links into the tenant portal, and revoking them",
        description="Give a tenant's team a one-time link that opens their portal (their "
        "endpoints and deliveries, nobody else's), or end portal sessions early. "
        "See docs/portal.md.",
    )
    commands = parser.add_subparsers(dest="portal_command", metavar="COMMAND", required=True)
    connection = connection_arguments()

    link = commands.add_parser(
        "link",
        parents=[connection],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help='print a one-time portal link for a tenant: {"url", "expires_at"}',
        description="Print a one-time link that opens the portal for one tenant, as JSON\n"
        '{"url", "expires_at"}. The link opens the portal once, until it expires; anyone\n'
        "holding it until then can open it, so send it over a channel you trust.\n\n"
        "  jobhooks portal link --tenant acme --ttl 15m",
    )
    link.add_argument("--tenant", required=True, help="the tenant whose portal the link opens")
    link.add_argument(
        "--ttl",
        type=_ttl,
        default=900,
        metavar="DURATION",
        help="how long the link may be opened: 1m to 24h, as seconds or 15m, 2h (default 15m)",
    )
    link.set_defaults(handler=run_link)

    revoke = commands.add_parser(
        "revoke",
        parents=[connection],
        help="end every portal link and session of a tenant, or one session",
        description="End portal access early: --tenant ends every link and session of the "
        "tenant at its next request; --session ends one session (its id is in the API access "
        "log, field portalSession). Prints what was revoked as JSON.",
    )
    target = revoke.add_mutually_exclusive_group(required=True)
    target.add_argument("--tenant", help="every link and session of this tenant")
    target.add_argument("--session", metavar="SESSION_ID", help="one session (ses_...)")
    revoke.set_defaults(handler=run_revoke)


def run_link(args: argparse.Namespace) -> int:
    created = ApiClient.from_args(args).post(
        "/v1/portal/links", {"tenant_id": args.tenant, "ttl_seconds": args.ttl}
    )
    print_json({"url": created["url"], "expires_at": created["expires_at"]})
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    body = {"tenant_id": args.tenant} if args.tenant is not None else {"session_id": args.session}
    print_json(ApiClient.from_args(args).post("/v1/portal/revocations", body))
    return 0


def _ttl(text: str) -> int:
    match = _TTL.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 900, 15m, 2h")
    seconds = int(match.group(1)) * _SECONDS[match.group(2)]
    if not MIN_TTL_SECONDS <= seconds <= MAX_TTL_SECONDS:
        raise argparse.ArgumentTypeError("a link lives 1m to 24h")
    return seconds
