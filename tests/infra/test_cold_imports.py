"""What importing each handler loads: the cold start pays only for what the function needs then.

A deterministic guard beside bench/coldstart.py (which measures the time): each handler is
imported in a fresh interpreter, as Lambda imports it, and the modules it must leave to the
first request that needs them are checked absent. AWS clients (boto3) are made on first use
everywhere; the management API also leaves the HTTP client (urllib3), the secret cipher
(cryptography), the ingest path and the OpenAPI object models to the requests that use them.
Other modules are checked absent because no request needs them: Powertools' other resolvers and
event classes in the HTTP functions, the inbound event's models in the deliver function.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jobhooks.management.routes import RESOURCES

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/"
ENVIRONMENT = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "jobhooks-test",
    "POWERTOOLS_METRICS_NAMESPACE": "jobhooks",
    "PYDANTIC_DISABLE_PLUGINS": "__all__",
    "JOBHOOKS_CLAIMS_TABLE": "claims",
    "JOBHOOKS_SUBSCRIPTIONS_TABLE": "subscriptions",
    "JOBHOOKS_DELIVERIES_TABLE": "deliveries",
    "JOBHOOKS_FIRST_ATTEMPTS_TABLE": "first-attempts",
    "JOBHOOKS_QUARANTINE_TABLE": "quarantine",
    "JOBHOOKS_DELIVERY_QUEUE_URL": QUEUE + "delivery",
    "JOBHOOKS_DELIVERY_DLQ_URL": QUEUE + "delivery-dlq",
    "JOBHOOKS_INGEST_QUEUE_URL": QUEUE + "ingest",
    "JOBHOOKS_INGEST_DLQ_URL": QUEUE + "ingest-dlq",
    "JOBHOOKS_KMS_KEY_ID": "alias/jobhooks",
    "JOBHOOKS_FETCHER_KEYS_SECRET_ARN": (
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobhooks-fetcher-keys"
    ),
    "JOBHOOKS_ACCESS_TABLE": "access",
    "JOBHOOKS_PORTAL_KEY_SECRET_ARN": (
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobhooks-portal-key"
    ),
}
# Loaded by an import that makes AWS clients or reads a secret: never at import.
EVERY_FUNCTION = ("boto3", "aws_lambda_powertools.utilities.parameters")
API_LEAVES = (
    *EVERY_FUNCTION,
    "botocore.client",
    "botocore.exceptions",
    "urllib3",
    "cryptography",
    "jobhooks.delivery.http_client",
    "jobhooks.delivery.deliver",
    "jobhooks.ingest.service",
    "jobhooks.inbound.job_events",
    "jobhooks.inbound.outcome",
    "jobhooks.inbound.outcome_models",
    "jobhooks.subscriptions.store",
    "aws_lambda_powertools.event_handler.openapi.models",
)
# The authorizer runs before every portal request: a verdict from an HMAC and one table read.
AUTHORIZER_LEAVES = (
    *EVERY_FUNCTION,
    "botocore.client",
    "pydantic",
    "cryptography",
    "urllib3",
    "aws_lambda_powertools.event_handler",
)


def modules_after_import(function: str) -> set[str]:
    return set(after_import(function, "json.dumps(sorted(sys.modules))"))


# Every class of ours that is a dataclass, as `module.Class`, once the handler is imported.
OUR_DATACLASSES = (
    "json.dumps(sorted(f'{name}.{cls.__name__}' for name, module in list(sys.modules.items())"
    " if name.startswith('jobhooks') for cls in vars(module).values()"
    " if isinstance(cls, type) and cls.__module__ == name"
    " and hasattr(cls, '__dataclass_fields__')))"
)


def after_import(function: str, expression: str) -> list[str]:
    """`expression` (JSON text) evaluated in a fresh interpreter that imported the handler."""
    code = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(ROOT / 'layers' / 'jobhooks')!r}, "
        f"{str(ROOT / 'functions' / function)!r}]\n"
        "import app\n"
        f"print({expression})\n"
    )
    keep = {name: value for name, value in os.environ.items() if not name.startswith("JOBHOOKS_")}
    completed = subprocess.run(
        [sys.executable, "-c", code],
        env={**keep, **ENVIRONMENT},
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    result: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(
        name for name in names if any(m == name or m.startswith(name + ".") for m in modules)
    )


@pytest.mark.parametrize("function", ["ingest", "deliver"])
def test_the_event_functions_make_no_aws_client_at_import(function: str) -> None:
    assert loaded(modules_after_import(function), EVERY_FUNCTION) == []


def test_the_api_leaves_what_few_requests_need_to_those_requests() -> None:
    assert loaded(modules_after_import("api"), API_LEAVES) == []


# Loaded by neither HTTP function: Powertools' other resolvers (AppSync's pulls in asyncio) and
# other services' event classes (`jobhooks.lazy_packages`), and the models whose id shapes and
# bounds the API's models use (`ingest/limits.py`, `delivery/limits.py`, `alerts/limits.py`).
HTTP_LEAVES = (
    "asyncio",
    "aws_lambda_powertools.event_handler.appsync",
    "aws_lambda_powertools.event_handler.bedrock_agent",
    "aws_lambda_powertools.utilities.data_classes.kafka_event",
    "jobhooks.ingest.model",
    "jobhooks.delivery_task",
    "jobhooks.alerts.model",
)


@pytest.mark.parametrize("function", ["api", "portal"])
def test_the_http_functions_load_the_http_resolver_alone_and_no_model_for_an_id_shape(
    function: str,
) -> None:
    assert loaded(modules_after_import(function), HTTP_LEAVES) == []


def test_the_deliver_function_loads_nothing_of_the_inbound_event() -> None:
    # Its endpoint health and notifications format times with `storage.times`, not through the
    # inbound pipeline's outcome module and the event models it builds.
    modules = modules_after_import("deliver")
    assert loaded(modules, ("jobhooks.inbound.event", "jobhooks.inbound.outcome")) == []


def test_the_portal_authorizer_imports_no_models_router_or_client() -> None:
    assert loaded(modules_after_import("authorizer"), AUTHORIZER_LEAVES) == []


# The portal is a function of its own: it loads none of the operators' routes or operations,
# and the management API loads nothing of the portal.
PORTAL_LEAVES = (
    *API_LEAVES,
    "jobhooks.management.routes",
    "jobhooks.management.dlq",
    "jobhooks.management.quarantine",
    "jobhooks.management.events",
    "jobhooks.analytics.questions",
)


def test_the_portal_loads_no_operator_routes_or_operations() -> None:
    assert loaded(modules_after_import("portal"), PORTAL_LEAVES) == []


def test_the_api_loads_nothing_of_the_portal() -> None:
    assert loaded(modules_after_import("api"), ("jobhooks.portal",)) == []


# Loaded by neither event function at import because few executions run them: the notifier
# (built by the first notification: only an endpoint's change of state or an owed notification
# sends one) and its models, the spill path (only a failed write after the webhooks), and the
# classes only the management API's operations build: quarantined messages (a rejected message),
# event and delivery pages, re-fan-out results, a subscription page or issued secret, a test
# send's webhook. The ports are Protocols for the type checker: no execution uses them. The
# settings take a parsed retry schedule, so pydantic builds no dataclass validator for it, and
# Powertools' LambdaContext is an annotation (Lambda passes its own context). Neither builds the
# outcome's validated models: ingest serializes the outcome's data and writes its analytics row
# from that data (`inbound.outcome`), and test sends are the management API's.
EVENT_FUNCTION_LEAVES = (
    "jobhooks.inbound.outcome_models",
    "jobhooks.notifications.wiring",
    "jobhooks.notifications.notifier",
    "jobhooks.notifications.model",
    "jobhooks.notifications.operations_topic",
    "jobhooks.spill.messages",
    "jobhooks.ingest.quarantined",
    "jobhooks.ingest.reads",
    "jobhooks.delivery.pages",
    "jobhooks.subscriptions.results",
    "jobhooks.delivery.sent_webhook",
    "jobhooks.ingest.ports",
    "jobhooks.delivery.ports",
    "pydantic.dataclasses",
    "aws_lambda_powertools.utilities.typing",
)
# Ingest's first attempts settle through the delivery package, but park nothing (a delivery's
# first attempt is hardly ever its last) and read no record of the delivery queue. It writes
# first-attempt pages and claims but reads neither back: a page as read (`StoredPage`) and a
# claim as read (`ClaimedEvent`) are the deliver function's and the management API's. A delayed
# task is a failed first attempt's retry. Ingest reads its own settings, not the deliver
# function's (`delivery.settings`) nor the analytics queries' (`analytics.query_settings`); it
# writes analytics rows without the column catalogue, and is given derived Fetcher keys (no
# HKDF: cryptography's hashes and KDFs are `jobhooks keys derive`'s). Re-fan-outs are the
# management API's.
INGEST_LEAVES = (
    "jobhooks.delivery.parking",
    "jobhooks.delivery.batch",
    "jobhooks.delivery.stored_page",
    "jobhooks.storage.claimed_event",
    "jobhooks.named_delivery",
    "jobhooks.queued_task",
    "jobhooks.delivery.settings",
    "jobhooks.analytics.query_settings",
    "cryptography.hazmat.primitives.hashes",
    "cryptography.hazmat.primitives.kdf",
    "jobhooks.ingest.refan_out",
)
# The deliver function reads tasks and enqueues none: a delayed task is ingest's. Neither event
# function reads a delivery id back (the management API's history does, `parse_delivery_id`):
# deliver finds a first attempt by its event and subscription. It parks a message only when a
# delivery's last attempt failed or the message is not a task.
DELIVER_LEAVES = ("jobhooks.queued_task", "jobhooks.named_delivery", "jobhooks.delivery.parking")


@pytest.mark.parametrize("function", ["ingest", "deliver"])
def test_the_event_functions_leave_notifications_and_spills_to_the_executions_that_send_them(
    function: str,
) -> None:
    assert loaded(modules_after_import(function), EVENT_FUNCTION_LEAVES) == []


def test_ingest_leaves_parking_and_the_deliver_functions_records_to_deliver() -> None:
    assert loaded(modules_after_import("ingest"), INGEST_LEAVES) == []


def test_ingest_loads_the_cipher_of_the_secrets_its_first_attempts_open() -> None:
    # Not HKDF (above), but AES-GCM: every batch with a subscriber opens signing secrets with
    # it, so it is the cold start's to load, not the first batch's.
    assert "cryptography.hazmat.primitives.ciphers.aead" in modules_after_import("ingest")


def test_deliver_leaves_the_queued_task_to_ingest_reads_no_delivery_id_and_parks_later() -> None:
    assert loaded(modules_after_import("deliver"), DELIVER_LEAVES) == []


# A dataclass costs about 1.1 ms of the cold start to define (Python 3.12 compiles its generated
# methods then): the event functions' records are `FrozenRecord`s, but for the HMAC key (`field()`
# options) and the inbound pipeline's mutable records.
INGEST_DATACLASSES = [
    "jobhooks.inbound.envelope.ForwardedMessage",
    "jobhooks.inbound.event.JobEvent",
    "jobhooks.inbound.keys.HmacKey",
]


def test_the_event_functions_define_no_frozen_dataclass_but_the_hmac_key() -> None:
    assert after_import("ingest", OUR_DATACLASSES) == INGEST_DATACLASSES
    assert after_import("deliver", OUR_DATACLASSES) == []


# Neither HTTP function checks a webhook URL at import: the network policy (its address tables)
# is made when a subscription is first created or its URL changed. The portal serves none of
# the operators' routes, so it defines none of their models (`management.operator_models`).
def test_the_http_functions_load_the_network_policy_with_the_first_url_they_check() -> None:
    for function in ("api", "portal"):
        assert loaded(modules_after_import(function), ("jobhooks.delivery.network_policy",)) == []


def test_the_portal_defines_none_of_the_operator_routes_models() -> None:
    assert loaded(modules_after_import("portal"), ("jobhooks.management.operator_models",)) == []


# The management API includes a resource's router when a request first names it; at import,
# only the subscriptions' (most requests name a subscription).
OTHER_RESOURCES = tuple(name for name in RESOURCES if name != "subscriptions")


def test_the_api_loads_the_subscription_routes_alone_at_import() -> None:
    modules = modules_after_import("api")
    assert "jobhooks.management.routes.subscriptions" in modules
    others = tuple(f"jobhooks.management.routes.{name}" for name in OTHER_RESOURCES)
    assert loaded(modules, (*others, "jobhooks.management.operator_models")) == []


# The old import paths of the classes that moved still work, on first use.
MOVED = (
    ("jobhooks.delivery_task", "DelayedTask", "jobhooks.queued_task"),
    ("jobhooks.delivery_task", "QueuedTask", "jobhooks.queued_task"),
    ("jobhooks.delivery_task", "NamedDelivery", "jobhooks.named_delivery"),
    ("jobhooks.delivery.first_attempts", "StoredPage", "jobhooks.delivery.stored_page"),
    ("jobhooks.storage.claim_reader", "ClaimedEvent", "jobhooks.storage.claimed_event"),
    ("jobhooks.management.models", "DeadLetterQueue", "jobhooks.management.operator_models"),
    ("jobhooks.management.models", "GrantList", "jobhooks.management.operator_models"),
    ("jobhooks.management.models", "EventReplay", "jobhooks.management.operator_models"),
    ("jobhooks.delivery.network_policy", "MAX_URL_LENGTH", "jobhooks.delivery.limits"),
    ("jobhooks.delivery.settings", "WebhookPostSettings", "jobhooks.delivery.post_settings"),
    ("jobhooks.analytics.settings", "AnalyticsQuerySettings", "jobhooks.analytics.query_settings"),
    ("jobhooks.delivery.batch", "SentWebhook", "jobhooks.delivery.sent_webhook"),
    ("jobhooks.delivery.model", "SentWebhook", "jobhooks.delivery.sent_webhook"),
)


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_a_moved_class_is_still_exported_by_its_old_module(old: str, name: str, new: str) -> None:
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    assert getattr(old_module, name) is getattr(new_module, name)
