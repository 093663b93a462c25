"""The local AWS server's dispatcher: each host's backend found once, and found as moto finds it."""

from __future__ import annotations

from typing import Any

import pytest
from jobhooks_tools.local.moto_main import BackendsByHost
from moto import backends
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


class Dispatcher(BackendsByHost, DomainDispatcherApplication):  # type: ignore[misc]
    pass


HOSTS = ("dynamodb", "sqs.us-east-1.amazonaws.com", "kms.eu-west-1.amazonaws.com", "moto_api")


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_resolves_to_the_backend_moto_gives_it(host: str) -> None:
    assert Dispatcher(create_backend_app).get_backend_for_host(host) == (
        DomainDispatcherApplication(create_backend_app).get_backend_for_host(host)
    )


def test_each_host_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    listings: list[int] = []
    list_modules = backends.list_of_moto_modules

    def counted() -> Any:
        listings.append(1)
        return list_modules()

    monkeypatch.setattr(backends, "list_of_moto_modules", counted)
    dispatcher = Dispatcher(create_backend_app)
    for _ in range(3):
        for host in HOSTS:
            dispatcher.get_backend_for_host(host)
    # moto_api is answered before the listing; the three others list moto's package once each.
    assert len(listings) == 3
    assert dispatcher.get_backend_for_host("dynamodb") == "dynamodb"
