"""`jobhooks shovel`: forward Fetcher's job events from RabbitMQ to the SQS ingest queue."""

from __future__ import annotations

import argparse
import os
from typing import Any

from jobhooks_tools.cli.exceptions import CliError

USAGE_ERROR = 2

_DESCRIPTION = """\
Declare the exchange, the shovel's queue, its bindings and a parking queue; consume with manual
acks and forward every message, unchanged, to the SQS ingest queue (SendMessageBatch). A message
is acked only after SQS accepted it. SIGTERM drains in-flight messages and exits 0.

Every flag has an environment variable; a flag wins over its variable. See docs/shovel.md."""


def register(subparsers: Any) -> None:
    # Imported here so that other commands do not pay for pika, boto3 and pydantic.
    from jobhooks_tools.shovel.settings import SOURCES

    parser = subparsers.add_parser(
        "shovel",
        help="forward job events from RabbitMQ to the SQS ingest queue",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name, source in SOURCES.items():
        help_text = f"{source.help} [env {', '.join(source.env)}]"
        if source.kind == "list":
            parser.add_argument(source.flag, dest=name, action="append", help=help_text)
        elif source.kind == "bool":
            parser.add_argument(
                source.flag, dest=name, action=argparse.BooleanOptionalAction, help=help_text
            )
        else:
            parser.add_argument(source.flag, dest=name, metavar=name.upper(), help=help_text)
    parser.set_defaults(handler=run_shovel)


def run_shovel(args: argparse.Namespace) -> int:
    from jobhooks_tools.shovel import ShovelError, ShovelSettingsError, load_settings, serve
    from jobhooks_tools.shovel.logs import configure_logging
    from jobhooks_tools.shovel.settings import SOURCES

    flags = {name: getattr(args, name, None) for name in SOURCES}
    try:
        settings = load_settings(flags, os.environ)
    except ShovelSettingsError as error:
        raise CliError(f"shovel: {error}", USAGE_ERROR) from None
    configure_logging(settings.log_level)
    try:
        serve(settings)
    except ShovelError as error:
        raise CliError(f"shovel: {error}") from None
    return 0
