"""The demo receiver's outage is a real one, also for a sender that keeps connections alive."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest
from jobhooks_tools.local.demo_receiver import DemoReceiver

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def receiver() -> Iterator[DemoReceiver]:
    with DemoReceiver() as started:
        started.add_endpoint("hooks")
        yield started


def test_going_down_drops_the_connections_it_kept_open(receiver: DemoReceiver) -> None:
    sender = http.client.HTTPConnection(receiver.host, receiver.port, timeout=5)
    sender.request("POST", "/hooks", body=b"{}")
    first = sender.getresponse()
    first.read()
    assert first.status == 401  # unsigned; what matters is that the connection stays open
    assert not first.will_close

    receiver.go_down()

    with pytest.raises((ConnectionError, http.client.HTTPException)):
        sender.request("POST", "/hooks", body=b"{}")
        sender.getresponse()
    sender.close()
    assert len(receiver.received("hooks")) == 1


def test_comes_back_on_the_same_port(receiver: DemoReceiver) -> None:
    port = receiver.port
    receiver.go_down()
    receiver.come_back()

    sender = http.client.HTTPConnection(receiver.host, port, timeout=5)
    sender.request("POST", "/hooks", body=b"{}")
    assert sender.getresponse().status == 401
    sender.close()
