"""Grants and operators: which IAM callers may act for which tenants, and how an ARN is matched.

A grant maps an IAM principal ARN pattern to the tenants its callers may act for; the
deployment's operator patterns (`OperatorPrincipals`, read as `JOBHOOKS_OPERATOR_PRINCIPALS`)
name the callers who may act on every tenant. A caller's ARN
(`requestContext.authorizer.iam.userArn`, as API Gateway verified it) that matches any grant is
**tenant-bound** to the union of the tenants of every grant it matches; one that matches no grant
but an operator pattern is an **operator**; any other is refused (docs/api.md, "Who may call").
Access fails closed: removing a grant never promotes anyone.

Patterns use IAM's wildcards (`StringLike`): `*` matches any run of characters (none included),
`?` exactly one, over the whole ARN. IAM names users and roles case-insensitively (`Acme-CI` and
`acme-ci` are one user), so matching ignores case. An IAM user's ARN carries its path
(`user/ci/acme-ci`) while its name alone is unique in its account, so a caller is matched with
and without its path. A user's `GetFederationToken` sessions (`sts::...:federated-user/NAME`)
are matched against grants as the user NAME, never against operator patterns (an operator
pattern names `federated-user/...` itself to admit them). API Gateway reports a role's callers
by their *session* ARN (`arn:aws:sts::123456789012:assumed-role/ROLE/SESSION`), never by the
role's ARN, so a pattern in the role's form (`arn:aws:iam::...:role/ROLE`) would never match
anyone: such a pattern is refused with the form to use.
"""

from __future__ import annotations

import functools
import re
import secrets
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

from jobhooks.access.access_store import StoredGrant
from jobhooks.access.exceptions import InvalidGrantTenantsError, InvalidPrincipalPatternError

MAX_PATTERN_LENGTH: Final = 2048  # IAM's own limit on an ARN
MAX_TENANTS_PER_GRANT: Final = 100
MAX_DESCRIPTION_LENGTH: Final = 256
MAX_TENANT_ID_LENGTH: Final = 256  # as a subscription's tenant id
GRANT_ID_PATTERN: Final = r"^grt_[0-9a-f]{16}$"
_ARN_PREFIX: Final = re.compile(r"arn:aws[a-z-]*:(iam|sts)::(\d{12}|\*|\?+|[\d*?]+):")
_ROLE_FORM: Final = re.compile(r"arn:aws[a-z-]*:iam::[^:]*:role/(.+)")
_USER_ARN: Final = re.compile(
    r"(?P<prefix>arn:[^:]+:iam::[^:]*:user/)(?P<path>.*/)?(?P<name>[^/]+)", re.IGNORECASE
)
_FEDERATED_ARN: Final = re.compile(
    r"arn:(?P<partition>[^:]+):sts::(?P<account>[^:]*):federated-user/(?P<name>[^/]+)",
    re.IGNORECASE,
)


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
    """IAM `StringLike` over the whole ARN, case ignored: `*` any run of characters, `?` one."""
    return _compiled(pattern).fullmatch(principal_arn) is not None


def grant_matches(pattern: str, principal_arn: str) -> bool:
    """Whether a grant's pattern binds the caller `principal_arn` (module docstring)."""
    return _matches_any(pattern, caller_forms(principal_arn, federated_as_user=True))


def operator_matches(pattern: str, principal_arn: str) -> bool:
    """Whether an operator pattern names the caller `principal_arn` (module docstring)."""
    return _matches_any(pattern, caller_forms(principal_arn, federated_as_user=False))


def caller_forms(principal_arn: str, *, federated_as_user: bool) -> tuple[str, ...]:
    """The ARNs a caller is matched as: its own; an IAM user's without its path; and, when
    `federated_as_user`, a federated user's as the IAM user of its name."""
    forms = [principal_arn]
    user = _USER_ARN.fullmatch(principal_arn)
    if user is not None and user.group("path"):
        forms.append(user.group("prefix") + user.group("name"))
    federated = _FEDERATED_ARN.fullmatch(principal_arn) if federated_as_user else None
    if federated is not None:
        partition, account, name = federated.group("partition", "account", "name")
        forms.append(f"arn:{partition}:iam::{account}:user/{name}")
    return tuple(forms)


def _matches_any(pattern: str, forms: Sequence[str]) -> bool:
    patterns = [pattern]
    # A user named with its path and no wildcard is that one user whatever its path.
    user = _USER_ARN.fullmatch(pattern)
    if user is not None and user.group("path") and not any(c in pattern for c in "*?"):
        patterns.append(user.group("prefix") + user.group("name"))
    return any(principal_matches(each, form) for each in patterns for form in forms)


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = (".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.compile("".join(parts), re.DOTALL | re.IGNORECASE)


def tenants_of(principal_arn: str, grants: Sequence[StoredGrant]) -> frozenset[str]:
    """The tenants `principal_arn` is bound to: empty when no grant matches."""
    bound: set[str] = set()
    for grant in grants:
        if grant_matches(grant.principal_pattern, principal_arn):
            bound.update(grant.tenants)
    return frozenset(bound)


def is_operator(principal_arn: str, operator_patterns: Sequence[str]) -> bool:
    return any(operator_matches(pattern, principal_arn) for pattern in operator_patterns)


def parse_operator_principals(text: str) -> tuple[str, ...]:
    """The operator patterns of `JOBHOOKS_OPERATOR_PRINCIPALS` (comma-separated ARN patterns,
    each checked like a grant's); `InvalidPrincipalPatternError` names the bad one."""
    patterns: list[str] = []
    for part in text.split(","):
        pattern = part.strip()
        if not pattern:
            continue
        try:
            validate_principal_pattern(pattern)
        except InvalidPrincipalPatternError as error:
            raise InvalidPrincipalPatternError(f"{pattern}: {error.message}") from None
        patterns.append(pattern)
    return tuple(patterns)
