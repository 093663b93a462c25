"""Packages whose `__init__` imports far more than a function uses, registered so it does not.

Powertools' `aws_lambda_powertools.event_handler` imports every resolver it has (AppSync's pulls
in asyncio, then Bedrock's, VPC Lattice's, ...) and `aws_lambda_powertools.utilities.data_classes`
every event class of every AWS service, whichever one a function uses: about 45 ms of CPU in
the management API's and the portal's cold start, for the HTTP API resolver and its event class.

`defer_package_init(name)` registers the package without running its `__init__`: a submodule is
imported as usual (`name.api_gateway` loads `api_gateway` and what it imports, nothing else), and
a name the `__init__` re-exports (`from name import Response`) is imported from the submodule
that defines it, on first use: the same object the full `__init__` would give. Only an
`__init__` made of imports, a docstring and `__all__` is deferred; any other is left to run.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from typing import Any

__all__ = ["HEAVY_POWERTOOLS_PACKAGES", "defer_package_init"]

HEAVY_POWERTOOLS_PACKAGES = (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.data_classes",
)


def defer_package_init(name: str) -> None:
    """Register package `name` so that its `__init__` never runs (see the module docstring).

    Does nothing when the package is already imported or its `__init__` is not pure re-exports.
    """
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return
    with open(spec.origin, encoding="utf-8") as source:
        exported = _re_exports(ast.parse(source.read(), spec.origin), name)
    if exported is None:
        return
    sources, names = exported
    package = importlib.util.module_from_spec(spec)

    def __getattr__(attribute: str) -> Any:
        if attribute not in sources:
            # A submodule not yet imported: `from name import submodule` imports it next.
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        module_name, original = sources[attribute]
        value = getattr(importlib.import_module(module_name), original)
        setattr(package, attribute, value)
        return value

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    if names is not None:
        package.__all__ = names  # type: ignore[attr-defined]
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, package)


def _re_exports(
    tree: ast.Module, package: str
) -> tuple[dict[str, tuple[str, str]], list[str] | None] | None:
    """{exported name: (module, name in it)} and `__all__`, or None if the `__init__` does more."""
    sources: dict[str, tuple[str, str]] = {}
    names: list[str] | None = None
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module and node.level in (0, 1):
            module = f"{package}.{node.module}" if node.level else node.module
            if not module.startswith(package + "."):
                return None
            for alias in node.names:
                sources[alias.asname or alias.name] = (module, alias.name)
        elif (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["__all__"]
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            names = [ast.literal_eval(item) for item in node.value.elts]
        elif not (
            index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            return None  # not only re-exports: let the package initialize itself
    return sources, names
