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
from jobhooks.cli.errors import CliError

# Each module defines register(subparsers); its parsers set `handler(args) -> int`.
COMMAND_MODULES = (
    "jobhooks.cli.inspect",
    "jobhooks.cli.keys",
    "jobhooks.cli.shovel",
    "jobhooks.cli.dev",
    "jobhooks.cli.publish_sample",
    "jobhooks.cli.webhooks",
    "jobhooks.cli.deliveries",
    "jobhooks.cli.quarantine",
    "jobhooks.cli.dlq",
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
