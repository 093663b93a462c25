"""`jobhooks dev`: the whole bridge on one machine."""

from __future__ import annotations

import argparse
from typing import Any

from jobhooks.cli.errors import CliError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("dev", help="run the whole bridge locally (no AWS account)")
    parser.set_defaults(handler=run_dev)


def run_dev(args: argparse.Namespace) -> int:
    raise CliError("jobhooks dev is not available yet")
