"""The Fetcher external HMAC key: the only key the bridge ever holds.

Operators get it either as 64 hex characters (the producer's key tool prints
`External HMAC Key (hex): <hex>`) or derive it from the producer's master key `APP_ENC_KEY`
with HKDF-SHA256. The master key also protects the producer's stored results, so the bridge
derives once (`jobhooks keys derive`) and stores only the derived key.

A bad key is a configuration error raised at start-up, never a per-message failure.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from _hashlib import HASH  # the type of hashlib.sha256(), for the prepared states
from collections.abc import Iterable
from dataclasses import dataclass, field

# The producer derives several keys from one master key; only this label signs job events.
# (`fetcher-internal-hmac-v1` signs internal work messages and must never verify job events.)
EXTERNAL_HMAC_INFO = b"fetcher-external-hmac-v1"
KEY_BYTES = 32
MIN_MASTER_KEY_BYTES = 32
_HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")


class KeyConfigurationError(ValueError):
    """A configured key is unusable; the message says which and how to fix it."""


# HMAC-SHA256 (RFC 2104): SHA-256((K ^ opad) || SHA-256((K ^ ipad) || message)), K zero-padded
# to SHA-256's 64-byte block. A key of KEY_BYTES is never longer than a block, so it is never
# hashed first.
_BLOCK_BYTES = 64
_IPAD = bytes(byte ^ 0x36 for byte in range(256))
_OPAD = bytes(byte ^ 0x5C for byte in range(256))


@dataclass(frozen=True, slots=True)
class HmacKey:
    """One 32-byte external HMAC key. `fingerprint` identifies it in logs without revealing it."""

    secret: bytes = field(repr=False)
    fingerprint: str = ""
    # The SHA-256 states after the keyed inner and outer blocks, computed once per key: `sign`
    # copies them, where `hmac.new` hashes both blocks again, with OpenSSL's set-up, for every
    # message (more than half of its cost on a Fetcher event's few hundred signed bytes).
    _inner: HASH = field(init=False, repr=False, compare=False)
    _outer: HASH = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise KeyConfigurationError(
                f"an external HMAC key must be {KEY_BYTES} bytes, got {len(self.secret)}"
            )
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", hashlib.sha256(self.secret).hexdigest()[:12])
        block = self.secret.ljust(_BLOCK_BYTES, b"\0")
        object.__setattr__(self, "_inner", hashlib.sha256(block.translate(_IPAD)))
        object.__setattr__(self, "_outer", hashlib.sha256(block.translate(_OPAD)))

    def __reduce__(self) -> tuple[type[HmacKey], tuple[bytes, str]]:
        # Copied and pickled as what it is made of: hash states cannot be pickled.
        return (HmacKey, (self.secret, self.fingerprint))

    @property
    def hex(self) -> str:
        return self.secret.hex()

    def sign(self, message: bytes) -> str:
        """HMAC-SHA256 of `message` under this key, as lower-case hex: exactly
        `hmac.new(secret, message, hashlib.sha256).hexdigest()`."""
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()


def key_from_hex(text: str) -> HmacKey:
    candidate = text.strip()
    if not _HEX_KEY.fullmatch(candidate):
        raise KeyConfigurationError(
            f"an external HMAC key must be exactly 64 hex characters, got {len(candidate)} "
            "characters; derive one from APP_ENC_KEY with `jobhooks keys derive`"
        )
    return HmacKey(bytes.fromhex(candidate))


def decode_master_key(app_enc_key: str) -> bytes:
    """`APP_ENC_KEY` as the producer reads it: standard base64 with padding, >= 32 bytes."""
    try:
        master = base64.b64decode(app_enc_key.strip().encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise KeyConfigurationError(
            "APP_ENC_KEY is not standard base64 with padding (A-Z a-z 0-9 + / =)"
        ) from None
    if len(master) < MIN_MASTER_KEY_BYTES:
        raise KeyConfigurationError(
            f"APP_ENC_KEY decodes to {len(master)} bytes; the producer requires at least "
            f"{MIN_MASTER_KEY_BYTES}"
        )
    return master


def derive_key(app_enc_key: str, info: bytes = EXTERNAL_HMAC_INFO) -> bytes:
    """HKDF-SHA256 over the whole decoded master key, no salt, 32 bytes out."""
    # Only `jobhooks keys derive` and the tests derive: the functions are given derived keys,
    # so their cold start does not load cryptography's hashes and KDFs.
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    master = decode_master_key(app_enc_key)
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(master)


def derive_external_key(app_enc_key: str) -> HmacKey:
    return HmacKey(derive_key(app_enc_key, EXTERNAL_HMAC_INFO))


def parse_key_list(text: str) -> tuple[HmacKey, ...]:
    """A comma- or whitespace-separated list of hex keys, current first (rotation)."""
    parts = [part for part in re.split(r"[\s,]+", text) if part]
    if not parts:
        raise KeyConfigurationError(
            "no external HMAC key is configured; set JOBHOOKS_FETCHER_HMAC_KEYS "
            "(64 hex characters, comma-separated, current first)"
        )
    return unique_keys(key_from_hex(part) for part in parts)


def unique_keys(keys: Iterable[HmacKey]) -> tuple[HmacKey, ...]:
    seen: set[bytes] = set()
    ordered = []
    for key in keys:
        if key.secret not in seen:
            seen.add(key.secret)
            ordered.append(key)
    return tuple(ordered)
