"""Shared fixtures. Each real component has its own plugin module under tests/fixtures/.

The suite runs in parallel workers (pytest-xdist, `scripts/test.sh`): each worker is its own
pytest session, so session fixtures (moto's server, the RabbitMQ node) are one per worker and
nothing is shared between workers but the machine. docs/development.md says how to write a test
that stays safe that way.
"""

import pytest
from hypothesis import settings
from jobhooks_tools.local.analytics import install_local_backend

from tests.depth import DEEP, examples

# Property tests assert behaviour, not speed: on a loaded 2-core CI machine a single example can
# exceed hypothesis's default 200 ms deadline, which would turn load into a test failure.
settings.register_profile(
    "jobhooks", deadline=None, print_blob=True, max_examples=examples(settings.default.max_examples)
)
settings.load_profile("jobhooks")

pytest_plugins = [
    "tests.fixtures.workers",
    "tests.fixtures.aws",
    "tests.fixtures.stack",
    "tests.fixtures.rabbitmq",
]


def pytest_configure(config: pytest.Config) -> None:
    # The test process hosts the functions as `jobhooks dev` does: JOBHOOKS_ANALYTICS_DIR means
    # the local files and DuckDB (jobhooks.analytics.local_backend).
    install_local_backend()


def pytest_report_header(config: pytest.Config) -> str:
    return f"jobhooks: {'deep' if DEEP else 'default'} run (examples x{examples(1)})"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keeps the tests that share a package-scoped fixture (the e2e bridge, the browser's
    stack: each takes 10-20 s to start) on one worker, so each starts once; every other test
    goes to whichever worker is free (`--dist loadgroup`). A new test using such a fixture
    joins its group by itself."""
    for item in items:
        group = _package_fixture_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _package_fixture_of(item: pytest.Item) -> str | None:
    """The package whose package-scoped fixture the test uses, if any."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in sorted(info.name2fixturedefs):
        definitions = info.name2fixturedefs[name]
        if definitions and definitions[-1].scope == "package":
            # One group per package: its tests share whichever of its stacks they use.
            return definitions[-1].baseid or "."
    return None
