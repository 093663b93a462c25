"""DynamoDB expressions: reserved words, and placeholders defined and used consistently.

DynamoDB refuses an expression that uses a reserved word as a bare attribute name, a `#name` or
`:value` placeholder the request does not define, and a definition no expression of the request
uses ("Value provided in ExpressionAttributeNames unused in expressions"). moto checks only part
of this. The expressions are read token by token, not parsed: enough to tell an attribute name
from a keyword of the expression's grammar or a function name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from jobhooks_tools.local.aws_limits.dynamodb_reserved_words import RESERVED_WORDS
from jobhooks_tools.local.aws_limits.violations import Violation

MAX_EXPRESSION_BYTES: Final = 4096

# Words of each expression grammar that are syntax, not attribute names (they are reserved
# words too, which is why a bare attribute of that name needs a placeholder).
_CONDITION_KEYWORDS: Final = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN"})
_UPDATE_KEYWORDS: Final = frozenset({"SET", "REMOVE", "ADD", "DELETE"})
_KEYWORDS: Final = {
    "ConditionExpression": _CONDITION_KEYWORDS,
    "FilterExpression": _CONDITION_KEYWORDS,
    "KeyConditionExpression": _CONDITION_KEYWORDS,
    "UpdateExpression": _UPDATE_KEYWORDS,
    "ProjectionExpression": frozenset(),
}
EXPRESSION_FIELDS: Final = tuple(_KEYWORDS)

_TOKEN = re.compile(
    r"""
      (?P<name>\#[A-Za-z0-9_]+)
    | (?P<value>:[A-Za-z0-9_]+)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<open>\()
    | (?P<other>\S)
    """,
    re.VERBOSE,
)


@dataclass
class ExpressionUse:
    """The placeholders a request's expressions use, and the values its key condition uses."""

    names: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    key_condition_values: set[str] = field(default_factory=set)


def check_expressions(
    where: str, request: Mapping[str, Any], fields: Sequence[str]
) -> tuple[list[Violation], ExpressionUse]:
    """The reserved-word, length and placeholder violations of `request`'s expressions among
    `fields`; `where` prefixes each detail (`TransactItems[2].Update.`)."""
    violations: list[Violation] = []
    use = ExpressionUse()
    for field_name in fields:
        text = request.get(field_name)
        if not isinstance(text, str):
            continue
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_EXPRESSION_BYTES:
            violations.append(
                Violation(
                    "dynamodb.expression_length",
                    f"{where}{field_name} is {size} bytes; DynamoDB takes at most "
                    f"{MAX_EXPRESSION_BYTES}",
                )
            )
        for word in bare_attribute_names(text, _KEYWORDS[field_name]):
            if word.upper() in RESERVED_WORDS:
                violations.append(
                    Violation(
                        "dynamodb.reserved_words",
                        f"{where}{field_name} uses the reserved word {word!r} as an attribute "
                        f"name: write it as an expression attribute name (#{word.lower()})",
                    )
                )
        names, values = placeholders(text)
        use.names |= names
        use.values |= values
        if field_name == "KeyConditionExpression":
            use.key_condition_values |= values
    violations.extend(_consistency(where, request, use))
    return violations, use


def bare_attribute_names(text: str, keywords: frozenset[str]) -> Iterator[str]:
    """The words of `text` that stand for attribute names (path elements included)."""
    tokens = [(match.lastgroup, match.group()) for match in _TOKEN.finditer(text)]
    for n, (kind, token) in enumerate(tokens):
        if kind != "word":
            continue
        followed_by = tokens[n + 1][0] if n + 1 < len(tokens) else None
        if followed_by == "open":  # a function: attribute_exists(...), if_not_exists(...)
            continue
        if token.upper() in keywords:
            continue
        yield token


def placeholders(text: str) -> tuple[set[str], set[str]]:
    """The `#name` and `:value` placeholders `text` uses."""
    names: set[str] = set()
    values: set[str] = set()
    for match in _TOKEN.finditer(text):
        if match.lastgroup == "name":
            names.add(match.group())
        elif match.lastgroup == "value":
            values.add(match.group())
    return names, values


def _consistency(where: str, request: Mapping[str, Any], use: ExpressionUse) -> Iterator[Violation]:
    for parameter, rule, used in (
        ("ExpressionAttributeNames", "dynamodb.expression_names", use.names),
        ("ExpressionAttributeValues", "dynamodb.expression_values", use.values),
    ):
        defined = request.get(parameter)
        if defined is not None and not isinstance(defined, Mapping):
            continue
        if defined is not None and not defined:
            yield Violation(rule, f"{where}{parameter} is empty: leave it out instead")
        defined_keys = set(defined or {})
        for unused in sorted(defined_keys - used):
            yield Violation(
                rule, f"{where}{parameter} defines {unused!r}, which no expression uses"
            )
        for undefined in sorted(used - defined_keys):
            yield Violation(
                rule, f"{where}an expression uses {undefined!r}, which {parameter} does not define"
            )
