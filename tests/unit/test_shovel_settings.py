"""The shovel's settings: flags over environment over defaults, and errors that say what to do."""

from __future__ import annotations

import pytest
from jobhooks_tools.cli.main import main
from jobhooks_tools.shovel import QueueType, ShovelSettingsError, load_settings
from jobhooks_tools.shovel.topology import queue_arguments

AMQP_URL = "amqp://shovel:s3cret@rabbit.internal:5672/%2F"
QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobhooks-ingest"
REQUIRED = {"JOBHOOKS_AMQP_URL": AMQP_URL, "JOBHOOKS_INGEST_QUEUE_URL": QUEUE_URL}


def problems_of(flags: dict[str, object], environ: dict[str, str]) -> str:
    with pytest.raises(ShovelSettingsError) as raised:
        load_settings(flags, environ)
    return str(raised.value)


def test_defaults_follow_the_producer_and_sqs() -> None:
    settings = load_settings({}, REQUIRED)

    assert settings.exchange == "fetcher.job.events"
    assert settings.routing_keys == ("job.completed", "job.failed")
    assert settings.queue_type is QueueType.QUORUM
    # The queue names are deployed state: a shovel upgraded in place must consume the queue its
    # predecessor declared (a renamed default would strand its messages in a queue still bound
    # to the exchange, filling up with no consumer).
    assert (settings.queue, settings.parking_queue) == ("jobhooks.shovel", "jobhooks.shovel.parked")
    assert settings.vhosts == ("/",)
    assert settings.region == "eu-west-1"
    assert settings.max_message_bytes == 1_048_576
    assert settings.health_port == 8081


def test_a_flag_wins_over_its_environment_variable() -> None:
    environ = {**REQUIRED, "JOBHOOKS_SHOVEL_PREFETCH": "50", "JOBHOOKS_AMQP_VHOSTS": "a, b"}

    settings = load_settings({"prefetch": "75"}, environ)

    assert settings.prefetch == 75
    assert settings.vhosts == ("a", "b")


def test_legacy_bindings_add_the_three_word_pattern() -> None:
    settings = load_settings({"legacy_bindings": True}, REQUIRED)

    assert settings.routing_keys == ("job.completed", "job.failed", "job.*.*")


def test_health_port_off_disables_the_endpoint_and_zero_picks_one() -> None:
    assert load_settings({"health_port": "off"}, REQUIRED).health_port is None
    assert load_settings({"health_port": "0"}, REQUIRED).health_port == 0


def test_missing_urls_name_both_the_flag_and_the_variable() -> None:
    message = problems_of({}, {})

    assert "--amqp-url (or JOBHOOKS_AMQP_URL) is required" in message
    assert "--queue-url (or JOBHOOKS_INGEST_QUEUE_URL) is required" in message


def test_a_bad_value_names_where_it_came_from_and_what_it_must_be() -> None:
    message = problems_of({"senders": "0"}, {**REQUIRED, "JOBHOOKS_SHOVEL_PREFETCH": "many"})

    assert "JOBHOOKS_SHOVEL_PREFETCH must be a whole number, got 'many'" in message
    assert "--senders must be at least 1, got '0'" in message


def test_the_amqp_password_never_appears_in_an_error() -> None:
    message = problems_of({"amqp_url": "http://user:hunter2@host/"}, REQUIRED)

    assert "--amqp-url must look like amqp://" in message
    assert "hunter2" not in message


def test_a_queue_url_without_a_region_needs_one() -> None:
    local_queue = "http://127.0.0.1:5000/123456789012/jobhooks-ingest"

    assert "--region (or AWS_REGION)" in problems_of({"queue_url": local_queue}, REQUIRED)
    assert load_settings({"queue_url": local_queue, "region": "us-east-1"}, REQUIRED).region


def test_sqs_messages_cannot_be_configured_larger_than_sqs_takes() -> None:
    message = problems_of({"max_message_bytes": "2000000"}, REQUIRED)

    assert "--max-message-bytes must be at most 1048576" in message


def test_the_delivery_limit_is_a_setting_and_a_quorum_queue_argument() -> None:
    default = load_settings({}, REQUIRED)
    lower = load_settings({}, {**REQUIRED, "JOBHOOKS_SHOVEL_DELIVERY_LIMIT": "5"})
    classic = load_settings({"delivery_limit": "7", "queue_type": "classic"}, REQUIRED)

    assert default.delivery_limit == 20
    assert queue_arguments(default)["x-delivery-limit"] == 20
    assert queue_arguments(lower)["x-delivery-limit"] == 5
    assert "x-delivery-limit" not in queue_arguments(default, delivery_limit=False)
    # Classic queues have none: the shovel counts redeliveries itself.
    assert classic.delivery_limit == 7 and "x-delivery-limit" not in queue_arguments(classic)
    assert queue_arguments(classic)["x-dead-letter-routing-key"] == classic.parking_queue
    assert "--delivery-limit must be at least 1, got '0'" in problems_of(
        {"delivery_limit": "0"}, REQUIRED
    )


def test_the_redacted_url_keeps_user_host_and_vhost_only() -> None:
    settings = load_settings({}, REQUIRED)

    assert settings.redacted_amqp_url() == "amqp://shovel@rabbit.internal:5672/%2F"
    assert (
        settings.amqp_url_for("tenant a") == "amqp://shovel:s3cret@rabbit.internal:5672/tenant%20a"
    )


def test_the_command_exits_2_with_one_line_on_bad_configuration(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBHOOKS_AMQP_URL", raising=False)
    monkeypatch.delenv("JOBHOOKS_INGEST_QUEUE_URL", raising=False)

    assert main(["shovel"]) == 2

    error = capsys.readouterr().err
    assert error.startswith("jobhooks: shovel: --amqp-url (or JOBHOOKS_AMQP_URL) is required")
    assert error.count("\n") == 1
