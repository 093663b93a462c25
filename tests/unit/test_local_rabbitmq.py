"""Finding or starting a broker: what happens without one, and without rabbitmq-server."""

from __future__ import annotations

import pytest
from jobhooks_tools.local import rabbitmq
from jobhooks_tools.local.rabbitmq import (
    INSTALL_COMMAND,
    RabbitMQBroker,
    RabbitMQError,
    RabbitMQNotInstalledError,
    find_or_start_rabbitmq,
    with_vhost,
)


def test_without_a_broker_or_rabbitmq_server_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rabbitmq, "is_reachable", lambda url, timeout=3.0: False)
    monkeypatch.setattr(rabbitmq, "rabbitmq_script", lambda name: None)

    with pytest.raises(RabbitMQNotInstalledError) as raised:
        find_or_start_rabbitmq("amqp://guest:guest@127.0.0.1:1/%2F")

    assert INSTALL_COMMAND in str(raised.value)
    assert "sudo apt-get update && sudo apt-get install -y rabbitmq-server" in str(raised.value)


def test_a_reachable_broker_is_used_as_found_and_never_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rabbitmq, "is_reachable", lambda url, timeout=3.0: True)

    broker = find_or_start_rabbitmq("amqp://guest:guest@broker.internal:5672/%2F")

    assert broker.is_private is False
    broker.stop()
    with pytest.raises(RabbitMQError, match="needs a private node"):
        broker.restart()


def test_vhost_urls_keep_credentials_and_encode_the_name() -> None:
    broker = RabbitMQBroker(url="amqp://guest:guest@127.0.0.1:5672/%2F")

    assert broker.vhost_url("tenant a") == "amqp://guest:guest@127.0.0.1:5672/tenant%20a"
    assert with_vhost(broker.url, "/") == broker.url
