"""Portal tokens: only a genuine, unexpired token of the right kind opens anything."""

from __future__ import annotations

import base64
import json

import pytest
from jobhooks.access.exceptions import InvalidTokenError, PortalKeyError, TokenExpiredError
from jobhooks.access.keys import StaticKeyRing, parse_keys
from jobhooks.access.tokens import (
    MAX_TOKEN_CHARS,
    TokenClaims,
    TokenKind,
    new_token_id,
    open_token,
    seal,
)

KEY = b"k" * 40
OTHER_KEY = b"o" * 40
NOW = 1_800_000_000


def claims(kind: TokenKind = TokenKind.LINK, **changes: object) -> TokenClaims:
    values: dict[str, object] = {
        "kind": kind,
        "tenant_id": "acme",
        "token_id": new_token_id(kind),
        "expires_at": NOW + 900,
        "epoch": 0,
    }
    values.update(changes)
    return TokenClaims(**values)  # type: ignore[arg-type]


def test_a_sealed_token_opens_to_its_claims() -> None:
    issued = claims(tenant_id="ácme/ünïcode tenant", epoch=3)
    token = seal(KEY, issued)
    assert open_token([KEY], token, kind=TokenKind.LINK, now=NOW) == issued


def test_rejects_a_token_signed_with_another_key() -> None:
    token = seal(OTHER_KEY, claims())
    with pytest.raises(InvalidTokenError):
        open_token([KEY], token, kind=TokenKind.LINK, now=NOW)


def test_a_previous_key_still_verifies_during_a_rotation() -> None:
    token = seal(OTHER_KEY, claims())
    assert open_token([KEY, OTHER_KEY], token, kind=TokenKind.LINK, now=NOW).tenant_id == "acme"


def test_rejects_a_link_used_as_a_session_and_a_session_used_as_a_link() -> None:
    link = seal(KEY, claims(TokenKind.LINK))
    session = seal(KEY, claims(TokenKind.SESSION))
    with pytest.raises(InvalidTokenError):
        open_token([KEY], link, kind=TokenKind.SESSION, now=NOW)
    with pytest.raises(InvalidTokenError):
        open_token([KEY], session, kind=TokenKind.LINK, now=NOW)


def test_rejects_a_token_whose_claims_were_changed() -> None:
    token = seal(KEY, claims())
    version, encoded, mac = token.split(".")
    document = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    for field, value in (("t", "globex"), ("e", NOW + 10**6), ("r", 0), ("k", "session")):
        forged = {**document, field: value} if document.get(field) != value else document
        if forged is document:
            continue
        text = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
        with pytest.raises(InvalidTokenError):
            open_token([KEY], f"{version}.{text}.{mac}", kind=TokenKind.LINK, now=NOW)


def test_rejects_an_expired_token_at_its_expiry() -> None:
    token = seal(KEY, claims(expires_at=NOW))
    with pytest.raises(TokenExpiredError):
        open_token([KEY], token, kind=TokenKind.LINK, now=NOW)
    assert open_token([KEY], token, kind=TokenKind.LINK, now=NOW - 1).expires_at == NOW


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: "",
        lambda t: t[:-1],
        lambda t: t + "A",
        lambda t: t.replace("v1.", "v2.", 1),
        lambda t: t.replace(".", "..", 1),
        lambda t: t + "\u00e9",
        lambda t: t.split(".")[0] + "." + t.split(".")[2],
        lambda t: "x" * (MAX_TOKEN_CHARS + 1),
        lambda t: t[:10] + "+" + t[11:],
    ],
)
def test_rejects_malformed_tokens(mangle: object) -> None:
    token = seal(KEY, claims())
    with pytest.raises(InvalidTokenError):
        open_token([KEY], mangle(token), kind=TokenKind.LINK, now=NOW)  # type: ignore[operator]


def test_a_genuine_mac_over_claims_of_the_wrong_shape_is_still_refused() -> None:
    # Even a key holder cannot make the parser accept a tenant that is not a string.
    token = seal(KEY, claims())
    import hashlib
    import hmac as hmac_module

    for document in ({"k": "link", "t": 5, "i": "x", "e": NOW + 9, "r": 0}, {"k": "link"}):
        encoded = base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()
        mac = hmac_module.new(
            KEY, b"jobhooks.portal.v1\x00link\x00" + encoded.encode(), hashlib.sha256
        ).digest()
        forged = f"v1.{encoded}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
        with pytest.raises(InvalidTokenError):
            open_token([KEY], forged, kind=TokenKind.LINK, now=NOW)
    assert token


def test_key_ring_needs_long_keys_and_names_the_short_one_without_showing_it() -> None:
    assert StaticKeyRing("a" * 32 + "," + "b" * 40).keys() == (b"a" * 32, b"b" * 40)
    with pytest.raises(PortalKeyError) as refused:
        parse_keys("a" * 32 + ",short-secret")
    assert "key 2 has 12 characters" in str(refused.value)
    assert "short-secret" not in str(refused.value)
    with pytest.raises(PortalKeyError):
        parse_keys(" , ")


def test_token_ids_are_distinct_and_typed() -> None:
    ids = {new_token_id(TokenKind.SESSION) for _ in range(100)}
    assert len(ids) == 100 and all(i.startswith("ses_") and len(i) == 36 for i in ids)
    assert new_token_id(TokenKind.LINK).startswith("lnk_")


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_rejects_a_second_spelling_of_a_genuine_mac() -> None:
    token = seal(KEY, claims())
    head, _, mac = token.rpartition(".")
    # 43 characters carry 258 bits for the MAC's 256: the last character's 2 low bits are
    # unused, so flipping one decodes to the same MAC (a lenient decoder would accept it).
    other = ALPHABET[ALPHABET.index(mac[-1]) ^ 1]
    respelled = f"{head}.{mac[:-1]}{other}"
    pad = "=" * (-len(mac) % 4)
    assert base64.urlsafe_b64decode(respelled.rpartition(".")[2] + pad) == (
        base64.urlsafe_b64decode(mac + pad)
    )
    with pytest.raises(InvalidTokenError):
        open_token([KEY], respelled, kind=TokenKind.LINK, now=NOW)
    assert open_token([KEY], token, kind=TokenKind.LINK, now=NOW).tenant_id == "acme"
