"""A package registered with `defer_package_init` gives what its `__init__` would, loading less.

Each case runs in a fresh interpreter: the registration only applies to a package not yet
imported, and the point is what `sys.modules` holds afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> dict[str, object]:
    program = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'layers' / 'jobhooks')!r})\n"
        "from jobhooks.lazy_packages import HEAVY_POWERTOOLS_PACKAGES, defer_package_init\n"
        "for name in HEAVY_POWERTOOLS_PACKAGES:\n"
        "    defer_package_init(name)\n" + code
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120
    )
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def test_the_http_resolver_loads_without_the_other_resolvers_or_event_classes() -> None:
    result = run(
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response\n"
        "from aws_lambda_powertools.event_handler.api_gateway import (\n"
        "    APIGatewayHttpResolver as Direct, Response as DirectResponse)\n"
        "print(json.dumps({\n"
        "    'same': APIGatewayHttpResolver is Direct and Response is DirectResponse,\n"
        "    'asyncio': 'asyncio' in sys.modules,\n"
        "    'appsync': 'aws_lambda_powertools.event_handler.appsync' in sys.modules,\n"
        "    'kafka': 'aws_lambda_powertools.utilities.data_classes.kafka_event' in sys.modules,\n"
        "}))\n"
    )
    assert result == {"same": True, "asyncio": False, "appsync": False, "kafka": False}


def test_every_name_the_init_exports_still_resolves_to_the_same_object() -> None:
    result = run(
        "import importlib\n"
        "lazy = {}\n"
        "for name in ('aws_lambda_powertools.event_handler',\n"
        "             'aws_lambda_powertools.utilities.data_classes'):\n"
        "    package = importlib.import_module(name)\n"
        "    lazy[name] = {attr: getattr(package, attr) for attr in package.__all__}\n"
        "# The real __init__, run now: the objects it binds are the ones the lazy package gave.\n"
        "for name in lazy:\n"
        "    module = sys.modules[name]\n"
        "    module.__spec__.loader.exec_module(module)\n"
        "print(json.dumps({name: sorted(attr for attr, value in names.items()\n"
        "                               if getattr(sys.modules[name], attr) is not value)\n"
        "                  for name, names in lazy.items()}))\n"
    )
    assert result == {
        "aws_lambda_powertools.event_handler": [],
        "aws_lambda_powertools.utilities.data_classes": [],
    }


def test_a_submodule_imported_from_the_package_is_that_submodule() -> None:
    result = run(
        "from aws_lambda_powertools.event_handler import content_types\n"
        "print(json.dumps({'json': content_types.APPLICATION_JSON}))\n"
    )
    assert result == {"json": "application/json"}


def test_a_package_already_imported_is_left_as_it_is() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, json\n"
            f"sys.path.insert(0, {str(ROOT / 'layers' / 'jobhooks')!r})\n"
            "import aws_lambda_powertools.event_handler as before\n"
            "from jobhooks.lazy_packages import defer_package_init\n"
            "defer_package_init('aws_lambda_powertools.event_handler')\n"
            "print(json.dumps(sys.modules['aws_lambda_powertools.event_handler'] is before))\n",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(completed.stdout.strip().splitlines()[-1]) is True
