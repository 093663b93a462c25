"""`jobhooks keys`: the Fetcher external HMAC key."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jobhooks.inbound.keys import KeyConfigurationError, derive_external_key

from jobhooks_tools.cli.exceptions import CliError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("keys", help="Fetcher HMAC key tools")
    commands = parser.add_subparsers(dest="keys_command", metavar="COMMAND", required=True)
    derive = commands.add_parser(
        "derive",
        help="derive the external HMAC key from APP_ENC_KEY",
        description=(
            "Print the external HMAC key (64 hex characters) the producer derives from its "
            "master key APP_ENC_KEY with HKDF-SHA256 (info fetcher-external-hmac-v1). Store "
            "only this derived key in the bridge, never APP_ENC_KEY. Without --app-enc-key the "
            "master key is read from standard input, which keeps it out of shell history."
        ),
    )
    derive.add_argument("--app-enc-key", metavar="B64", help="the master key (base64)")
    derive.set_defaults(handler=run_derive)


def run_derive(args: argparse.Namespace) -> int:
    master = args.app_enc_key
    if master is None:
        if sys.stdin.isatty():
            print("APP_ENC_KEY (base64), then Enter:", file=sys.stderr)
        master = sys.stdin.readline().strip()
    try:
        key = derive_external_key(master)
    except KeyConfigurationError as error:
        raise CliError(str(error), exit_code=2) from None
    print(key.hex)
    return 0
