"""Configuration: one pydantic model per process, read once from the environment at start.

Every field `name` of a settings model is read from `JOBHOOKS_<NAME>` (upper case). A missing or
bad value stops the process with a `ConfigurationError` naming the variable and what it needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jobhooks.exceptions import JobhooksError
from jobhooks.inbound.cross_checks import parse_source_list
from jobhooks.inbound.job_events import VerificationPolicy
from jobhooks.inbound.keys import HmacKey, KeyConfigurationError, parse_key_list

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


class VerificationSettings(Settings):
    """How inbound Fetcher events are verified (ingest, `jobhooks inspect`)."""

    fetcher_hmac_keys: str = Field(
        "", description="external HMAC keys, 64 hex each, comma-separated, current first"
    )
    dedup_retention_days: float = Field(7, gt=0, le=365)
    future_skew_seconds: float = Field(30, ge=0, le=3600)
    allow_legacy_signatures: bool = False
    producer_release: str = ""
    allowed_sources: str = Field(
        "",
        description="ce-source values accepted, comma-separated; empty: ce-source is not checked",
    )

    @field_validator("fetcher_hmac_keys")
    @classmethod
    def _keys_parse(cls, value: str) -> str:
        if value:
            try:
                parse_key_list(value)
            except KeyConfigurationError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("allowed_sources")
    @classmethod
    def _sources_parse(cls, value: str) -> str:
        parse_source_list(value)
        return value

    def verification_policy(self, keys: tuple[HmacKey, ...] | None = None) -> VerificationPolicy:
        """The policy for verifying events; `keys` overrides the directly configured ones."""
        if keys is None:
            keys = parse_key_list(self.fetcher_hmac_keys)
        retention = self.dedup_retention_days * 86400
        return VerificationPolicy(
            keys=keys,
            max_age_seconds=retention,
            max_future_seconds=self.future_skew_seconds,
            allow_legacy_signatures=self.allow_legacy_signatures,
            allowed_sources=parse_source_list(self.allowed_sources),
            max_emission_lag_seconds=retention,
        )
