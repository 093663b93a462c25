"""The management API includes a resource's router when a request first names that resource.

`jobhooks.management.routes.ResourceRoutes`: a request loads only the router that can match its
path, and the OpenAPI document lists every path in the same order whatever the order requests
included the routers in. A resolver that includes the routers is built in a fresh interpreter
for each check: including a router binds it to that resolver.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jobhooks.management.routes import RESOURCES, resource_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/v1/subscriptions", "subscriptions"),
        ("/v1/subscriptions/sub_123/rotate-secret", "subscriptions"),
        ("/v1/dlq/redrive", "dlq"),
        ("/v1/portal/links", "portal"),
        ("/v1/analytics/questions/failures_by_job", "analytics"),
        ("/v1/nothing", None),
        ("/v1", None),
        ("/v2/subscriptions", None),
        ("v1/subscriptions", None),
        ("/portal/session", None),
        ("/v1/subscriptionsx", None),
    ],
)
def test_a_path_names_the_resource_whose_router_alone_can_match_it(
    path: str, resource: str | None
) -> None:
    assert resource_of(path) == resource


def run(code: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path[:0] = ['layers/jobhooks']\n{code}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    return completed.stdout


PRELUDE = """
import json, sys
from aws_lambda_powertools import Logger, Metrics
from jobhooks.management.openapi import document_metadata
from jobhooks.management.resolver import http_resolver
from jobhooks.management.routes import ResourceRoutes
routes = ResourceRoutes(http_resolver(Logger(), Metrics(namespace="jobhooks")))
"""


def test_a_request_includes_its_resources_router_and_no_other() -> None:
    context = {"stage": "$default", "http": {"method": "GET"}}
    quarantined = {"rawPath": "/v1/quarantine/q_123", "requestContext": context}
    unknown = {"rawPath": "/v1/nothing", "requestContext": context}
    loaded = json.loads(
        run(
            PRELUDE
            + f"routes.include_for({quarantined!r})\n"
            + f"routes.include_for({unknown!r})\n"
            + "prefix = 'jobhooks.management.routes.'\n"
            + "routers = sorted(m for m in sys.modules if m.startswith(prefix))\n"
            + "print(json.dumps([sorted(routes.included), routers]))"
        )
    )
    assert loaded == [
        ["quarantine"],
        ["jobhooks.management.routes.dependencies", "jobhooks.management.routes.quarantine"],
    ]


def test_the_document_lists_paths_in_resource_order_whatever_the_order_of_inclusion() -> None:
    write = "print(routes.document(**document_metadata()))"
    in_order = run(PRELUDE + write)
    reversed_first = run(
        PRELUDE + "".join(f"routes.include({name!r})\n" for name in reversed(RESOURCES)) + write
    )
    assert json.loads(in_order)["paths"]
    assert reversed_first == in_order
