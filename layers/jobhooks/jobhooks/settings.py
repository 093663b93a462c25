"""Configuration: one pydantic model per process, read once from the environment at start.

Every field `name` of a settings model is read from `JOBHOOKS_<NAME>` (upper case). A missing or
bad value stops the process with a `ConfigurationError` naming the variable and what it needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from jobhooks.exceptions import JobhooksError

PREFIX = "JOBHOOKS_"
SettingsT = TypeVar("SettingsT", bound="Settings")


class ConfigurationError(JobhooksError, ValueError):
    """The process cannot start: a variable is missing or invalid (the message says which)."""

    code = "configuration_error"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __str__(self) -> str:
        # What the cold start's traceback shows: the variable's name first.
        return self.message


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    @classmethod
    def from_env(cls: type[SettingsT], environ: Mapping[str, str] | None = None) -> SettingsT:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            variable = PREFIX + name.upper()
            if variable in environ and environ[variable] != "":
                values[name] = environ[variable]
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            problems = []
            for item in error.errors():
                field = str(item["loc"][0]) if item["loc"] else "?"
                problems.append(f"{PREFIX}{field.upper()}: {item['msg']}")
            raise ConfigurationError("; ".join(problems)) from None
