"""The Lambda layer holds only what the functions import (docs/architecture.md, "The tree").

`layers/jobhooks/` is the layer's ContentUri: every module in it ships to every function and
costs each one's cold start and package size. The CLI, the shovel and the local stack live in
`tools/jobhooks_tools` and must stay out. The closure is read statically from the handlers'
import statements (those inside functions too), so a module imported only lazily still counts,
and so does a submodule a package imports by name from a tuple of its names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "jobhooks"
PACKAGE = LAYER / "jobhooks"
# Host-only dependencies: never importable on Lambda (not in the layer's requirements.txt).
HOST_ONLY = ("jobhooks_tools", "pika", "yaml", "duckdb", "moto", "sqlglot")


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def handler_files() -> list[Path]:
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=_Loader)
    files = []
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            code_uri = resource["Properties"]["CodeUri"]
            handler = resource["Properties"]["Handler"]
            files.append(ROOT / code_uri / (handler.rsplit(".", 1)[0] + ".py"))
    return files


def module_file(name: str) -> Path | None:
    relative = Path(*name.split("."))
    for candidate in (LAYER / relative / "__init__.py", LAYER / relative.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def imported_names(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            # `from jobhooks.x import y` may name the submodule jobhooks.x.y
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def submodules_imported_by_name(module: str, path: Path) -> Iterator[str]:
    """The submodules a package imports by name (`importlib.import_module(f"{__name__}.{x}")`,
    as `jobhooks.management.routes` imports a resource's router on its first request): every
    string of its module-level tuples that names one of its submodules."""
    tree = ast.parse(path.read_text(), filename=str(path))
    by_name = any(
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "importlib.import_module"
        and node.args
        and isinstance(node.args[0], ast.JoinedStr)
        and ast.unparse(node.args[0]).startswith("f'{__name__}.")
        for node in ast.walk(tree)
    )
    if not by_name:
        return
    for statement in tree.body:
        value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Tuple):
            for item in value.elts:
                name = item.value if isinstance(item, ast.Constant) else None
                if isinstance(name, str) and module_file(f"{module}.{name}") is not None:
                    yield f"{module}.{name}"


def closure() -> dict[str, set[str]]:
    """Every jobhooks module the handlers reach, with the top-level names each one imports."""
    seen: dict[str, set[str]] = {}
    pending = [(f"<handler {path}>", path) for path in handler_files()]
    while pending:
        name, path = pending.pop()
        if name in seen:
            continue
        imports = set(imported_names(path)) | set(submodules_imported_by_name(name, path))
        seen[name] = {imported.split(".")[0] for imported in imports}
        for imported in imports:
            parts = imported.split(".")
            # a package's __init__ runs before any of its modules
            for end in range(1, len(parts) + 1):
                prefix = ".".join(parts[:end])
                if prefix.split(".")[0] == "jobhooks" and prefix not in seen:
                    found = module_file(prefix)
                    if found is not None:
                        pending.append((prefix, found))
    return {name: names for name, names in seen.items() if not name.startswith("<")}


def layer_modules() -> set[str]:
    modules = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(LAYER).with_suffix("").parts
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_every_module_in_the_layer_is_imported_by_a_function() -> None:
    unused = sorted(layer_modules() - set(closure()))
    assert unused == [], (
        f"the layer ships {unused}, which no function imports: move host-only code to "
        "tools/jobhooks_tools"
    )


def test_nothing_a_function_imports_needs_a_host_only_package() -> None:
    offenders = {
        module: sorted(names & set(HOST_ONLY))
        for module, names in closure().items()
        if names & set(HOST_ONLY)
    }
    assert offenders == {}


def test_the_layer_requirements_leave_host_only_packages_out() -> None:
    requirements = (LAYER / "requirements.txt").read_text().lower()
    listed = {
        line.split(">")[0].split("=")[0].split("[")[0].strip()
        for line in requirements.splitlines()
        if line and not line.startswith("#")
    }
    assert listed.isdisjoint({"pika", "pyyaml", "duckdb", "moto", "sqlglot"})
