"""The portal's configuration (docs/architecture.md, "Environment"), read by the API function and
the portal authorizer:

- `JOBHOOKS_ACCESS_TABLE`: the access table (grants, used links, revocations);
- `JOBHOOKS_PORTAL_KEY_SECRET_ARN`: the secret holding the token key(s) (the stack creates it);
  `JOBHOOKS_PORTAL_KEY` gives the key(s) directly instead (local use only);
- `JOBHOOKS_PORTAL_SESSION_MINUTES`: how long a portal session lasts (default 60, at most 720);
- `JOBHOOKS_PORTAL_URL`: the base URL links point at, when the API is reached through another
  name (a custom domain); default: the host the operator's request came to.

This model deliberately avoids pydantic: the authorizer reads it on every cold start and must
stay small (pydantic alone would double its import time).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from jobhooks.access.exceptions import PortalNotConfiguredError, PortalSettingsError

MIN_SESSION_MINUTES: Final = 5
MAX_SESSION_MINUTES: Final = 720
DEFAULT_SESSION_MINUTES: Final = 60


@dataclass(frozen=True)
class PortalSettings:
    access_table: str = ""
    portal_key_secret_arn: str = ""
    portal_key: str = field(default="", repr=False)
    portal_session_minutes: int = DEFAULT_SESSION_MINUTES
    portal_url: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PortalSettings:
        environ = os.environ if environ is None else environ
        minutes_text = environ.get("JOBHOOKS_PORTAL_SESSION_MINUTES") or str(
            DEFAULT_SESSION_MINUTES
        )
        try:
            minutes = int(minutes_text)
        except ValueError:
            minutes = -1
        if not MIN_SESSION_MINUTES <= minutes <= MAX_SESSION_MINUTES:
            raise PortalSettingsError(
                "JOBHOOKS_PORTAL_SESSION_MINUTES: a whole number of minutes from "
                f"{MIN_SESSION_MINUTES} to {MAX_SESSION_MINUTES}"
            )
        url = environ.get("JOBHOOKS_PORTAL_URL", "").rstrip("/")
        if url and not url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
            raise PortalSettingsError("JOBHOOKS_PORTAL_URL: an https:// URL")
        return cls(
            access_table=environ.get("JOBHOOKS_ACCESS_TABLE", ""),
            portal_key_secret_arn=environ.get("JOBHOOKS_PORTAL_KEY_SECRET_ARN", ""),
            portal_key=environ.get("JOBHOOKS_PORTAL_KEY", ""),
            portal_session_minutes=minutes,
            portal_url=url,
        )

    @property
    def session_lifetime(self) -> timedelta:
        return timedelta(minutes=self.portal_session_minutes)

    def require_configured(self) -> None:
        if not self.access_table:
            raise PortalNotConfiguredError("JOBHOOKS_ACCESS_TABLE")
        if not (self.portal_key_secret_arn or self.portal_key):
            raise PortalNotConfiguredError("JOBHOOKS_PORTAL_KEY_SECRET_ARN")
