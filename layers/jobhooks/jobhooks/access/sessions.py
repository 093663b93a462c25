"""Portal links and sessions: issue, verify, exchange, revoke.

The life of a portal visit (docs/portal.md, "Security model"):

1. an operator asks for a link (`jobhooks portal link --tenant T`): a link token for T, valid
   `ttl` (15 minutes by default), carrying T's current revocation epoch;
2. the page reads the token from the URL's fragment (never sent to a server), removes it from
   the address bar, and sends it in a header to `POST /portal/session`. The authorizer verifies
   it (`verify`); the handler consumes it with a conditional write, so it opens one session only
   (`open_session`), and sets the session token as an HttpOnly cookie;
3. every portal API request carries the cookie; the authorizer verifies it (`verify`): MAC,
   expiry, the tenant's epoch and the session's own revocation;
4. `jobhooks portal revoke --tenant T` moves T to a new epoch, which ends every link and session
   of T at its next request; `--session ID` (or the page's "Sign out") ends one session.

This module reads the access table and the key ring; it never logs or returns a token except to
the one caller it issued it for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from jobhooks.access.access_store import AccessStore
from jobhooks.access.callers import PortalPass
from jobhooks.access.exceptions import (
    InvalidSessionIdError,
    InvalidTokenError,
    TokenRevokedError,
)
from jobhooks.access.keys import KeyRing
from jobhooks.access.limits import DEFAULT_LINK_TTL as DEFAULT_LINK_TTL
from jobhooks.access.limits import MAX_LINK_TTL as MAX_LINK_TTL
from jobhooks.access.limits import MIN_LINK_TTL as MIN_LINK_TTL
from jobhooks.access.limits import SESSION_ID_PATTERN as SESSION_ID_PATTERN
from jobhooks.access.tokens import TokenClaims, TokenKind, new_token_id, open_token, seal

DEFAULT_SESSION: Final = timedelta(hours=1)
MAX_SESSION: Final = timedelta(hours=12)
_SESSION_ID: Final = re.compile(SESSION_ID_PATTERN)


@dataclass(frozen=True)
class IssuedToken:
    tenant_id: str
    token_id: str
    expires_at: datetime
    token: str = field(repr=False)


class PortalSessions:
    def __init__(
        self,
        store: AccessStore,
        keys: KeyRing,
        *,
        session_lifetime: timedelta = DEFAULT_SESSION,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.keys = keys
        self.session_lifetime = session_lifetime
        self.clock = clock

    def issue_link(self, tenant_id: str, ttl: timedelta = DEFAULT_LINK_TTL) -> IssuedToken:
        """A one-time link token for `tenant_id`, valid `ttl` (the caller checked the bounds)."""
        # Here, not at import: the authorizer never issues and need not load pydantic.
        from jobhooks.subscriptions.model import validate_tenant_id

        validate_tenant_id(tenant_id)
        epoch = self.store.revocation_epoch(tenant_id)
        return self._issue(TokenKind.LINK, tenant_id, epoch, ttl)

    def verify(self, token: str, kind: TokenKind) -> TokenClaims:
        """The claims of a token that may open what it claims now: genuine, unexpired, issued
        under the tenant's current epoch and (a session) not ended early."""
        claims = open_token(self.keys.keys(), token, kind=kind, now=self.clock().timestamp())
        state = self.store.session_state(
            claims.tenant_id, claims.token_id if kind is TokenKind.SESSION else None
        )
        if claims.epoch != state.epoch or state.revoked:
            raise TokenRevokedError()
        return claims

    def open_session(self, link: PortalPass) -> IssuedToken:
        """Consume the verified link (`LinkAlreadyUsedError` the second time) for a session."""
        if link.kind != TokenKind.LINK.value:
            raise InvalidTokenError()
        session_id = new_token_id(TokenKind.SESSION)
        self.store.consume_link(
            link.token_id,
            tenant_id=link.tenant_id,
            session_id=session_id,
            expires_at=link.expires_at,
        )
        return self._issue(
            TokenKind.SESSION, link.tenant_id, link.epoch, self.session_lifetime, session_id
        )

    def end_session(self, session: PortalPass) -> None:
        """The session's owner signs out: it is over at once, everywhere."""
        self.store.revoke_session(
            session.token_id, tenant_id=session.tenant_id, until=session.expires_at
        )

    def revoke_tenant(self, tenant_id: str) -> int:
        """End every link and session of `tenant_id`; the tenant's new epoch."""
        from jobhooks.subscriptions.model import validate_tenant_id

        validate_tenant_id(tenant_id)
        return self.store.revoke_tenant(tenant_id)

    def revoke_session(self, session_id: str) -> None:
        """End one session by its id (the access log names sessions, never their tokens)."""
        if not _SESSION_ID.fullmatch(session_id):
            raise InvalidSessionIdError()
        # The longest any session could still run: after that its own expiry ends it.
        until = self.clock() + MAX_SESSION
        self.store.revoke_session(session_id, tenant_id=None, until=int(until.timestamp()))

    def _issue(
        self,
        kind: TokenKind,
        tenant_id: str,
        epoch: int,
        lifetime: timedelta,
        token_id: str | None = None,
    ) -> IssuedToken:
        expires_at = (self.clock() + lifetime).replace(microsecond=0)
        claims = TokenClaims(
            kind=kind,
            tenant_id=tenant_id,
            token_id=token_id or new_token_id(kind),
            expires_at=int(expires_at.timestamp()),
            epoch=epoch,
        )
        signing_key = self.keys.keys()[0]
        return IssuedToken(tenant_id, claims.token_id, expires_at, seal(signing_key, claims))
