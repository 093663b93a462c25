"""What the deployment guide and files state agrees with what they deploy: the parameter defaults
docs/deploy.md lists, the layer's dependency floors, and the Python the shovel is installed with.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LAYER_REQUIREMENTS = ROOT / "layers" / "jobhooks" / "requirements.txt"
SHOVEL_UNIT = ROOT / "deploy" / "shovel" / "jobhooks-shovel.service"
SHOVEL_IMAGE = ROOT / "deploy" / "shovel" / "Dockerfile"
DEPLOY_GUIDE = ROOT / "docs" / "deploy.md"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cfn_yaml.load(str(ROOT / "template.yaml"))
    return loaded


def requirements(lines: list[str]) -> dict[str, Requirement]:
    parsed = [Requirement(line) for line in lines]
    return {canonicalize_name(requirement.name): requirement for requirement in parsed}


def layer_requirements() -> dict[str, Requirement]:
    text = LAYER_REQUIREMENTS.read_text(encoding="utf-8")
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return requirements([line for line in lines if line])


def test_the_layer_pins_its_dependencies_as_pyproject_does() -> None:
    # The layer is what runs on Lambda; pyproject.toml is what the tests ran against. A looser
    # floor in the layer would let `sam build` ship a version the suite never saw.
    declared = requirements(PYPROJECT["project"]["dependencies"])
    layer = layer_requirements()
    assert layer, "layers/jobhooks/requirements.txt lists nothing"
    for name, requirement in layer.items():
        assert name in declared, f"{name} is in the layer but not in pyproject.toml"
        assert requirement.specifier == declared[name].specifier, name
        assert requirement.extras == declared[name].extras, name


def declared_python() -> SpecifierSet:
    return SpecifierSet(PYPROJECT["project"]["requires-python"])


def test_the_shovel_unit_installs_with_the_python_of_its_image() -> None:
    # A bare `python3` is 3.9 or 3.10 on many hosts: pip would refuse the package.
    [unit_version] = re.findall(r"\bpython(3\.\d+) -m venv\b", SHOVEL_UNIT.read_text())
    [image_version] = set(re.findall(r"^FROM python:(3\.\d+)", SHOVEL_IMAGE.read_text(), re.M))
    assert unit_version == image_version
    assert Version(unit_version) in declared_python()


def documented_defaults() -> dict[str, str]:
    """Parameter -> default as docs/deploy.md's parameter table states it."""
    text = DEPLOY_GUIDE.read_text(encoding="utf-8")
    table = text[text.index("| Parameter | Default |") :].split("\n\n", 1)[0]
    defaults: dict[str, str] = {}
    for row in re.findall(r"^\| (`\w+`(?: / `\w+`)*) \| ([^|]+) \|", table, re.M):
        names = re.findall(r"`(\w+)`", row[0])
        values = [value.strip().strip("`") for value in row[1].split(" / ")]
        assert len(values) == len(names), row
        defaults.update(zip(names, values, strict=True))
    return defaults


def test_the_deploy_guide_states_the_template_defaults(template: dict[str, Any]) -> None:
    documented = documented_defaults()
    assert "ProducerRelease" in documented
    for name, stated in documented.items():
        default = template["Parameters"][name]["Default"]
        assert stated == ("empty" if default == "" else str(default)), name
