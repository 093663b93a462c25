"""Portal tokens: what a one-time link and a session carry, and the MAC that makes them unforgeable.

A token is `v1.<claims>.<mac>`, both parts unpadded base64url:

- `claims`: compact JSON `{"k": kind, "t": tenant id, "i": token id, "e": expiry (Unix
  seconds), "r": the tenant's revocation epoch when it was issued}`. Not encrypted: it holds
  nothing secret (a tenant id the holder may act for, an id, a time), and the portal page reads
  the expiry of a link to say plainly that it expired;
- `mac`: HMAC-SHA256 under the portal key of `jobhooks.portal.v1 NUL kind NUL claims`. The kind
  is inside the MAC: a link is never accepted as a session, nor a session as a link.

`open_token` checks the MAC first (in constant time, under every key of the ring: the current
key signs, a previous one still verifies during a rotation), then the kind, then the expiry;
the revocation epoch and one-time use need the access table (`sessions`). Tokens are secrets:
nothing here logs one, and no error quotes one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from jobhooks.access.exceptions import InvalidTokenError, TokenExpiredError

VERSION: Final = "v1"
# A session travels in a cookie (4 KB per cookie in every browser); a tenant id is at most
# 256 characters, so a real token stays under 1.5 KB.
MAX_TOKEN_CHARS: Final = 4096
_DOMAIN: Final = b"jobhooks.portal.v1"
_ID_BYTES: Final = 16
_SHAPE: Final = re.compile(r"v1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})")


class TokenKind(StrEnum):
    LINK = "link"
    SESSION = "session"


@dataclass(frozen=True, slots=True)
class TokenClaims:
    kind: TokenKind
    tenant_id: str
    token_id: str
    expires_at: int
    """Unix seconds."""
    epoch: int
    """The tenant's revocation epoch at issue: a later `portal revoke --tenant` ends it."""


def new_token_id(kind: TokenKind) -> str:
    prefix = "lnk" if kind is TokenKind.LINK else "ses"
    return f"{prefix}_{secrets.token_hex(_ID_BYTES)}"


def seal(key: bytes, claims: TokenClaims) -> str:
    """The token for `claims`, MACed with `key` (the ring's current key)."""
    document = {
        "k": claims.kind.value,
        "t": claims.tenant_id,
        "i": claims.token_id,
        "e": claims.expires_at,
        "r": claims.epoch,
    }
    encoded = _b64(json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{VERSION}.{encoded}.{_b64(_mac(key, claims.kind, encoded))}"


def open_token(keys: Sequence[bytes], token: str, *, kind: TokenKind, now: float) -> TokenClaims:
    """The claims of a genuine, unexpired token of `kind`.

    Raises `InvalidTokenError` (malformed, wrong MAC, wrong kind) or `TokenExpiredError`.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        raise InvalidTokenError()
    shape = _SHAPE.fullmatch(token)
    if shape is None:
        raise InvalidTokenError()
    encoded, given = shape.group(1), _unb64(shape.group(2))
    # Every key is tried, so the time taken does not say which one matched.
    verified = False
    for key in keys:
        verified |= hmac.compare_digest(_mac(key, kind, encoded), given)
    if not verified:
        raise InvalidTokenError()
    claims = _claims(encoded)
    if claims.kind is not kind:
        raise InvalidTokenError()
    if claims.expires_at <= now:
        raise TokenExpiredError()
    return claims


def _claims(encoded: str) -> TokenClaims:
    try:
        document: Any = json.loads(_unb64(encoded).decode("utf-8"))
        claims = TokenClaims(
            kind=TokenKind(document["k"]),
            tenant_id=document["t"],
            token_id=document["i"],
            expires_at=document["e"],
            epoch=document["r"],
        )
    except (ValueError, KeyError, TypeError):
        raise InvalidTokenError() from None
    if not (
        isinstance(claims.tenant_id, str)
        and claims.tenant_id
        and isinstance(claims.token_id, str)
        and claims.token_id
        and type(claims.expires_at) is int
        and type(claims.epoch) is int
    ):
        raise InvalidTokenError()
    return claims


def _mac(key: bytes, kind: TokenKind, encoded_claims: str) -> bytes:
    message = _DOMAIN + b"\x00" + kind.value.encode() + b"\x00" + encoded_claims.encode("ascii")
    return hmac.new(key, message, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Bytes of canonical unpadded base64url text (the caller matched the alphabet already).

    A decoder ignores the unused low bits of the last character, so `...A` and `...B` can
    decode alike: only the one encoding `seal` writes is accepted, so that no token has a
    second spelling that verifies (and a revocation or log line naming one misses the other).
    """
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidTokenError() from None
    if _b64(data) != text:
        raise InvalidTokenError()
    return data
