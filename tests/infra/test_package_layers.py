"""Which packages of the layer may import which: no arrow points up from a capability into ingest.

Ingest is the use case that writes claims and makes first attempts; delivery owns an attempt end
to end, and storage, subscriptions, notifications and the shared task modules sit below both.
An import from any of them into `jobhooks.ingest` would make ingest's changes theirs (and its
modules part of their cold start), so every import statement of theirs is read here, those
inside functions included, since a deferred import is still a dependency. The management API is
the operators' composition root and may use ingest's stores.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "jobhooks" / "jobhooks"
BELOW_INGEST = (
    "delivery",
    "storage",
    "subscriptions",
    "endpoint_health",
    "notifications",
    "alerts",
    "analytics",
    "delivery_task.py",
    "queued_task.py",
    "delivery_queue.py",
    "webhook_signature.py",
)


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """Every module an import statement of `path` names, with its line."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def modules_of(entry: str) -> list[Path]:
    path = PACKAGE / entry
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


@pytest.mark.parametrize("entry", BELOW_INGEST)
def test_nothing_below_ingest_imports_it(entry: str) -> None:
    files = modules_of(entry)
    assert files, f"{entry} is gone: update BELOW_INGEST"
    upward = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in files
        for line, module in imported_modules(path)
        if module == "jobhooks.ingest" or module.startswith("jobhooks.ingest.")
    ]
    assert upward == []


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "lazy.py"
    source.write_text("def later():\n    from jobhooks.ingest.claims import ClaimStore\n")
    assert "jobhooks.ingest.claims" in {module for _, module in imported_modules(source)}
