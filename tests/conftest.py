"""Shared fixtures. Each real component has its own plugin module under tests/fixtures/."""

pytest_plugins = [
    "tests.fixtures.aws",
    "tests.fixtures.stack",
    "tests.fixtures.rabbitmq",
]
