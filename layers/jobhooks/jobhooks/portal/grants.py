"""Grants: which IAM callers are bound to which tenants, and how a caller's ARN is matched.

A grant maps an IAM principal ARN pattern to the tenants its callers may act for. A caller whose
ARN (`requestContext.authorizer.iam.userArn`, as API Gateway verified it) matches any grant is
**tenant-bound** to the union of the tenants of every grant it matches; a caller matching no
grant is an **operator**, as before grants existed (docs/api.md, "Who may call").

Patterns use IAM's wildcards (`StringLike`): `*` matches any run of characters (none included),
`?` exactly one; matching is case-sensitive and covers the whole ARN. API Gateway reports a
role's callers by their *session* ARN (`arn:aws:sts::123456789012:assumed-role/ROLE/SESSION`),
never by the role's ARN, so a pattern in the role's form (`arn:aws:iam::…:role/ROLE`) would never
match anyone and leave those callers operators: such a pattern is refused with the form to use.
"""

from __future__ import annotations

import functools
import re
import secrets
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

from jobhooks.portal.access_store import StoredGrant
from jobhooks.portal.exceptions import InvalidGrantTenantsError, InvalidPrincipalPatternError

MAX_PATTERN_LENGTH: Final = 2048  # IAM's own limit on an ARN
MAX_TENANTS_PER_GRANT: Final = 100
MAX_DESCRIPTION_LENGTH: Final = 256
MAX_TENANT_ID_LENGTH: Final = 256  # as a subscription's tenant id
GRANT_ID_PATTERN: Final = r"^grt_[0-9a-f]{16}$"
_ARN_PREFIX: Final = re.compile(r"arn:aws[a-z-]*:(iam|sts)::(\d{12}|\*|\?+|[\d*?]+):")
_ROLE_FORM: Final = re.compile(r"arn:aws[a-z-]*:iam::[^:]*:role/(.+)")


def new_grant_id() -> str:
    return f"grt_{secrets.token_hex(8)}"


def validate_principal_pattern(pattern: str) -> str:
    if not pattern or len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidPrincipalPatternError(
            f"give an IAM principal ARN pattern of 1 to {MAX_PATTERN_LENGTH} characters"
        )
    if not pattern.isascii() or any(char.isspace() or not char.isprintable() for char in pattern):
        raise InvalidPrincipalPatternError(
            "an ARN pattern holds printable ASCII characters only, no spaces"
        )
    role = _ROLE_FORM.fullmatch(pattern)
    if role is not None:
        account = pattern.split(":")[4]
        raise InvalidPrincipalPatternError(
            "API Gateway names a role's callers by their session ARN, never the role's ARN, so "
            "this pattern would match no one; use "
            f"arn:aws:sts::{account}:assumed-role/{role.group(1)}/*"
        )
    if not _ARN_PREFIX.match(pattern):
        raise InvalidPrincipalPatternError(
            "the pattern must be an IAM user or STS assumed-role ARN, e.g. "
            "arn:aws:sts::123456789012:assumed-role/acme-webhooks/* or "
            "arn:aws:iam::123456789012:user/acme-ci"
        )
    return pattern


def validate_tenants(tenants: Iterable[str]) -> tuple[str, ...]:
    unique: list[str] = []
    for tenant in tenants:
        if not isinstance(tenant, str) or not tenant or len(tenant) > MAX_TENANT_ID_LENGTH:
            raise InvalidGrantTenantsError(
                f"every tenant id has 1 to {MAX_TENANT_ID_LENGTH} characters"
            )
        if any(unicodedata.category(char).startswith("C") for char in tenant):
            raise InvalidGrantTenantsError("a tenant id contains control characters")
        if tenant not in unique:
            unique.append(tenant)
    if not unique or len(unique) > MAX_TENANTS_PER_GRANT:
        raise InvalidGrantTenantsError(f"a grant names 1 to {MAX_TENANTS_PER_GRANT} tenants")
    return tuple(unique)


def principal_matches(pattern: str, principal_arn: str) -> bool:
    """IAM `StringLike`: `*` any run of characters, `?` one character, whole string, case kept."""
    return _compiled(pattern).fullmatch(principal_arn) is not None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = (".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.compile("".join(parts), re.DOTALL)


def tenants_of(principal_arn: str, grants: Sequence[StoredGrant]) -> frozenset[str]:
    """The tenants `principal_arn` is bound to: empty when no grant matches (an operator)."""
    bound: set[str] = set()
    for grant in grants:
        if principal_matches(grant.principal_pattern, principal_arn):
            bound.update(grant.tenants)
    return frozenset(bound)
