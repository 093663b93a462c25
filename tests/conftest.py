"""Shared fixtures. Each real component has its own plugin module under tests/fixtures/."""

import pytest
from hypothesis import settings
from jobhooks_tools.local.analytics import install_local_backend

# Property tests assert behaviour, not speed: on a loaded 2-core CI machine a single example can
# exceed hypothesis's default 200 ms deadline, which would turn load into a test failure.
settings.register_profile("jobhooks", deadline=None, print_blob=True)
settings.load_profile("jobhooks")

pytest_plugins = [
    "tests.fixtures.aws",
    "tests.fixtures.stack",
    "tests.fixtures.rabbitmq",
]


def pytest_configure(config: pytest.Config) -> None:
    # The test process hosts the functions as `jobhooks dev` does: JOBHOOKS_ANALYTICS_DIR means
    # the local files and DuckDB (jobhooks.analytics.local_backend).
    install_local_backend()
