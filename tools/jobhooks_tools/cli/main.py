"""Entry point of the `jobhooks` command.

Exit codes: 0 success, 2 bad usage (argparse), 3 a message was rejected (`inspect`), 1 or another
non-zero code with a one-line reason on stderr for any other failure.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from jobhooks import __version__

from jobhooks_tools.cli.exceptions import CliError

# Each module defines register(subparsers); its parsers set `handler(args) -> int`.
COMMAND_MODULES = (
    "jobhooks_tools.cli.inspect",
    "jobhooks_tools.cli.keys",
    "jobhooks_tools.cli.shovel",
    "jobhooks_tools.cli.dev",
    "jobhooks_tools.cli.publish_sample",
    "jobhooks_tools.cli.webhooks",
    "jobhooks_tools.cli.alerts",
    "jobhooks_tools.cli.deliveries",
    "jobhooks_tools.cli.quarantine",
    "jobhooks_tools.cli.dlq",
    "jobhooks_tools.cli.analytics",
    "jobhooks_tools.cli.portal",
    "jobhooks_tools.cli.grants",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jobhooks",
        description="Fetcher job events from RabbitMQ to signed HTTPS webhooks.",
    )
    parser.add_argument("--version", action="version", version=f"jobhooks {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except CliError as error:
        print(f"jobhooks: {error.message}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
