"""Configuration: one pydantic model per process, read once from the environment at start.

Every field `name` of a settings model is read from `JOBHOOKS_<NAME>` (upper case). A missing or
bad value stops the process with a `ConfigurationError` naming the variable and what it needs.
"""

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from jobhooks.exceptions import ConfigurationError

__all__ = ["ConfigurationError", "Settings"]

PREFIX = "JOBHOOKS_"
SettingsT = TypeVar("SettingsT", bound="Settings")


class Settings(BaseModel):
    # defer_build: a settings class is built when it is first read, not when it is defined. A
    # function reads one (`IngestSettings`, `DeliverSettings`, ...) and imports the classes it
    # derives from with it (`EndpointHealthSettings`, `NotificationSettings`, ...), each a
    # validator and a serializer of its own that no one would use (ingest's cold start built
    # eight settings classes for one).
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

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
