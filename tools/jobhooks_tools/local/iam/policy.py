"""IAM's evaluation of identity-based policies: does a principal's policy allow one request?

The rules are AWS's, as "Policy evaluation logic" documents them for a principal of the same
account with identity-based policies only (no SCPs, boundaries or resource policies here):

- a statement applies when the request's action matches its Action (or no NotAction entry),
  its resource matches its Resource (or no NotResource entry), and every Condition holds;
- an applicable Deny wins over everything; else an applicable Allow allows; else the request is
  denied implicitly;
- action names are case-insensitive; resource ARNs are case-sensitive; in both `*` matches any
  run of characters and `?` one character; in a resource, a wildcard stays inside its ARN
  segment, except a `*` that ends the pattern's last segment, which may run across colons;
- a condition key that is absent from the request makes its condition false, except for
  `...IfExists` operators and `Null`; every operator of a condition block must hold, any value of
  a key may match (unless `ForAllValues:`), any value of a condition may match.

What this module cannot judge, it refuses rather than guesses (fail closed): an operator it does
not implement, a condition key the request mapping does not produce (`requests.py` lists the ones
it does), a policy variable. `Decision.undecidable` then says which.
"""

from __future__ import annotations

import fnmatch
import functools
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

# Condition keys whose value the request mapping (`requests.py`) computes, besides the
# service-specific ones it returns per request. A key outside both is refused, not ignored.
GLOBAL_CONDITION_KEYS: Final = frozenset(
    {"aws:principalarn", "aws:principalaccount", "aws:requestedregion", "aws:securetransport"}
)


@dataclass(frozen=True, slots=True)
class Grant:
    """One (action pattern, resource pattern) pair of an Allow statement: the unit of the
    least-privilege report (`jobhooks_tools.local.iam.grants`)."""

    principal: str
    sid: str
    action: str
    resource: str

    def __str__(self) -> str:
        return f"{self.principal} {self.sid}: {self.action} on {self.resource}"


@dataclass(frozen=True, slots=True)
class Statement:
    sid: str
    effect: str  # "Allow" | "Deny"
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] | None = None
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] | None = None
    condition: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    # How the report names each resource: stable across local stacks (a logical id rather than
    # an ARN with a random suffix). Same order as `resources`.
    labels: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls, raw: Mapping[str, Any], index: int, label: Callable[[str], str] | None = None
    ) -> Statement:
        effect = str(raw.get("Effect", ""))
        if effect not in ("Allow", "Deny"):
            raise PolicyError(f"statement {index}: Effect must be Allow or Deny, not {effect!r}")
        if ("Action" in raw) == ("NotAction" in raw):
            raise PolicyError(f"statement {index}: exactly one of Action and NotAction")
        if ("Resource" in raw) == ("NotResource" in raw):
            raise PolicyError(f"statement {index}: exactly one of Resource and NotResource")
        if "Principal" in raw or "NotPrincipal" in raw:
            raise PolicyError(f"statement {index}: an identity policy names no Principal")
        condition = {
            str(operator): {str(key): _strings(values) for key, values in block.items()}
            for operator, block in (raw.get("Condition") or {}).items()
        }
        resources = _strings(raw.get("Resource"))
        return cls(
            labels=tuple(label(r) for r in resources) if label else resources,
            sid=str(raw.get("Sid") or f"#{index}"),
            effect=effect,
            actions=_strings(raw.get("Action")),
            not_actions=_strings(raw["NotAction"]) if "NotAction" in raw else None,
            resources=resources,
            not_resources=_strings(raw["NotResource"]) if "NotResource" in raw else None,
            condition=condition,
        )

    def matches_action(self, action: str) -> bool:
        if self.not_actions is not None:
            return not any(action_matches(pattern, action) for pattern in self.not_actions)
        return any(action_matches(pattern, action) for pattern in self.actions)

    def matches_resource(self, resource: str) -> bool:
        if self.not_resources is not None:
            return not any(resource_matches(pattern, resource) for pattern in self.not_resources)
        return any(resource_matches(pattern, resource) for pattern in self.resources)


@dataclass(frozen=True, slots=True)
class Policy:
    """The statements a principal is allowed or denied by, from all its policies together."""

    principal: str
    statements: tuple[Statement, ...]

    @classmethod
    def parse(
        cls,
        principal: str,
        documents: Iterable[Mapping[str, Any]],
        label: Callable[[str], str] | None = None,
    ) -> Policy:
        """`label` names a resource ARN in the grants report (default: the ARN itself)."""
        statements: list[Statement] = []
        for document in documents:
            raw = document.get("Statement") or []
            for raw_statement in [raw] if isinstance(raw, Mapping) else raw:
                statements.append(Statement.parse(raw_statement, len(statements), label))
        return cls(principal, tuple(statements))

    def grants(self) -> list[Grant]:
        """Every (action, resource) pair an Allow statement names; NotAction/NotResource
        statements count as one grant each."""
        found: list[Grant] = []
        for statement in self.statements:
            if statement.effect != "Allow":
                continue
            actions = statement.actions or tuple(
                f"NotAction {a}" for a in statement.not_actions or ()
            )
            resources = statement.labels or tuple(
                f"NotResource {r}" for r in statement.not_resources or ()
            )
            for action in actions:
                for resource in resources:
                    found.append(Grant(self.principal, statement.sid, action, resource))
        return found


@dataclass(frozen=True, slots=True)
class Request:
    """What IAM authorizes: one action on one resource, with the request's condition keys
    (lower-case names; each a list of values)."""

    action: str
    resource: str
    context: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    # The statement that decided: the Deny, or the Allows that allowed.
    statements: tuple[str, ...] = ()
    # Grants (of the allowing statements) this request exercised.
    exercised: tuple[Grant, ...] = ()
    # What could not be judged, when that decided the refusal.
    undecidable: str | None = None


class PolicyError(Exception):
    """A policy this evaluator cannot read; the message names the statement."""


class UndecidableError(Exception):
    """A part of a statement this evaluator cannot judge for this request (fails closed)."""


def evaluate(policy: Policy, request: Request) -> Decision:
    """Would IAM let `policy`'s principal make `request`? Explicit Deny, then Allow, else deny."""
    allowing: list[Statement] = []
    undecidable: list[str] = []
    for statement in policy.statements:
        if not (statement.matches_action(request.action)):
            continue
        try:
            if not statement.matches_resource(request.resource):
                continue
            holds = conditions_hold(statement.condition, request.context)
        except UndecidableError as error:
            if statement.effect == "Deny":
                # A Deny that might apply: IAM would not guess, nor do we.
                return Decision(
                    False,
                    f"statement {statement.sid} (Deny) cannot be judged: {error}",
                    (statement.sid,),
                    undecidable=str(error),
                )
            undecidable.append(f"statement {statement.sid}: {error}")
            continue
        if not holds:
            continue
        if statement.effect == "Deny":
            return Decision(False, f"explicitly denied by {statement.sid}", (statement.sid,))
        allowing.append(statement)
    if allowing:
        exercised = tuple(
            Grant(policy.principal, statement.sid, action, label)
            for statement in allowing
            for action in (statement.actions or ("NotAction",))
            if statement.not_actions is not None or action_matches(action, request.action)
            for resource, label in (
                zip(statement.resources, statement.labels, strict=True)
                if statement.not_resources is None
                else (("*", "NotResource"),)
            )
            if statement.not_resources is not None or resource_matches(resource, request.resource)
        )
        return Decision(
            True, "allowed", tuple(s.sid for s in allowing), exercised=_unique(exercised)
        )
    if undecidable:
        return Decision(
            False,
            "no statement allows it that could be judged ("
            + "; ".join(undecidable)
            + "): refused, as the evaluator fails closed",
            undecidable="; ".join(undecidable),
        )
    return Decision(False, "no identity-based policy allows it")


# ------------------------------------------------------------------------------ matching


def action_matches(pattern: str, action: str) -> bool:
    """IAM action names: case-insensitive, `*` and `?` wildcards."""
    return _wildcard(pattern.lower()).fullmatch(action.lower()) is not None


def resource_matches(pattern: str, resource: str) -> bool:
    """A resource ARN against a policy's pattern: case-sensitive, wildcards within a segment,
    a `*` ending the pattern's last segment running across the rest of the ARN."""
    if "${" in pattern:
        raise UndecidableError(
            f"policy variable in resource {pattern!r} is not substituted locally"
        )
    if pattern == "*":
        return True
    wanted = pattern.split(":", 5)
    actual = resource.split(":", 5)
    if len(wanted) < len(actual) and wanted[-1].endswith("*"):
        # `arn:aws:s3:::*`, `arn:aws:dynamodb:*`: the trailing star spans the remaining segments.
        head = len(wanted) - 1
        return (
            all(
                _wildcard(w).fullmatch(a) is not None
                for w, a in zip(wanted[:head], actual[:head], strict=True)
            )
            and _wildcard(wanted[-1]).fullmatch(":".join(actual[head:])) is not None
        )
    if len(wanted) != len(actual):
        return False
    return all(_wildcard(w).fullmatch(a) is not None for w, a in zip(wanted, actual, strict=True))


@functools.lru_cache(maxsize=4096)
def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern),
        re.DOTALL,
    )


# ------------------------------------------------------------------------------ conditions


def conditions_hold(
    condition: Mapping[str, Mapping[str, tuple[str, ...]]],
    context: Mapping[str, tuple[str, ...]],
) -> bool:
    """Every operator's every key must hold (AND); a key holds when any of its values matches."""
    for operator_name, block in condition.items():
        qualifier, _, operator = operator_name.rpartition(":")
        if_exists = operator.endswith("IfExists")
        base = operator.removesuffix("IfExists")
        compare = _OPERATORS.get(base)
        if compare is None and base != "Null":
            raise UndecidableError(f"condition operator {operator_name} is not implemented")
        if qualifier not in ("", "ForAnyValue", "ForAllValues"):
            raise UndecidableError(f"condition qualifier {qualifier} is not implemented")
        for key, wanted in block.items():
            lowered = key.lower()
            if "${" in "".join(wanted):
                raise UndecidableError(f"policy variable in condition {key} is not substituted")
            if lowered not in context and not _known_key(lowered):
                raise UndecidableError(
                    f"condition key {key} is not judged locally ({operator_name})"
                )
            actual = context.get(lowered)
            if base == "Null":
                if (actual is None) != (wanted[0].lower() == "true"):
                    return False
                continue
            assert compare is not None
            if actual is None or not actual:
                # A negated operator holds when the key is not there at all (IAM's rule).
                if if_exists or qualifier == "ForAllValues" or "Not" in base:
                    continue
                return False
            if qualifier == "ForAllValues":
                ok = all(any(compare(w, a) for w in wanted) for a in actual)
            else:
                ok = any(compare(w, a) for w in wanted for a in actual)
            if not ok:
                return False
    return True


# Keys the request mapping may produce (absent from a given request means "not in the request",
# which IAM evaluates as such). Anything else is refused as undecidable.
_SERVICE_CONDITION_KEYS: Final = frozenset(
    {"s3:prefix", "s3:delimiter", "s3:max-keys", "sqs:messagegroupid"}
)


def _known_key(key: str) -> bool:
    return key in GLOBAL_CONDITION_KEYS or key in _SERVICE_CONDITION_KEYS


def _string_like(wanted: str, actual: str) -> bool:
    return fnmatch.fnmatchcase(actual, wanted.replace("[", "[[]"))


def _arn_like(wanted: str, actual: str) -> bool:
    return resource_matches(wanted, actual)


def _numeric(op: str) -> Any:
    import operator

    fn = getattr(operator, op)

    def compare(wanted: str, actual: str) -> bool:
        try:
            return bool(fn(float(actual), float(wanted)))
        except ValueError:
            return False

    return compare


def _ip_address(wanted: str, actual: str) -> bool:
    try:
        return ipaddress.ip_address(actual) in ipaddress.ip_network(wanted, strict=False)
    except ValueError:
        return False


_OPERATORS: Final[dict[str, Any]] = {
    "StringEquals": lambda w, a: w == a,
    "StringNotEquals": lambda w, a: w != a,
    "StringEqualsIgnoreCase": lambda w, a: w.lower() == a.lower(),
    "StringNotEqualsIgnoreCase": lambda w, a: w.lower() != a.lower(),
    "StringLike": _string_like,
    "StringNotLike": lambda w, a: not _string_like(w, a),
    "ArnEquals": _arn_like,
    "ArnLike": _arn_like,
    "ArnNotEquals": lambda w, a: not _arn_like(w, a),
    "ArnNotLike": lambda w, a: not _arn_like(w, a),
    "Bool": lambda w, a: w.lower() == a.lower(),
    "NumericEquals": _numeric("eq"),
    "NumericNotEquals": _numeric("ne"),
    "NumericLessThan": _numeric("lt"),
    "NumericLessThanEquals": _numeric("le"),
    "NumericGreaterThan": _numeric("gt"),
    "NumericGreaterThanEquals": _numeric("ge"),
    "IpAddress": _ip_address,
    "NotIpAddress": lambda w, a: not _ip_address(w, a),
}


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | int | float | bool):
        return (str(value).lower() if isinstance(value, bool) else str(value),)
    if isinstance(value, Sequence):
        return tuple(
            str(v).lower() if isinstance(v, bool) else str(v) for v in value if v is not None
        )
    raise PolicyError(f"expected a string or a list of strings, got {value!r}")


def _unique(grants: tuple[Grant, ...]) -> tuple[Grant, ...]:
    return tuple(dict.fromkeys(grants))
