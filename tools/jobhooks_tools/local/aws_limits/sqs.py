"""What SQS refuses in a request, as the real service does (moto enforces only some of it).

The limits come from the SQS API reference (SendMessage, SendMessageBatch, ReceiveMessage,
ChangeMessageVisibility, MessageAttributeValue, as shipped in botocore's service model) and the
developer guide's message quotas and message metadata pages. moto accepts, among others, a
U+FFFE or a NUL in a body and an eleventh message attribute; real SQS refuses both.

Each rule is a function named after it that yields a `Violation` per problem; `check` applies
the ones an operation's request is subject to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from jobhooks_tools.local.aws_limits.violations import Violation

# A message is at most 1 MiB: body plus every attribute's name, data type and value. The limit
# was 256 KiB until 2025; the bridge assumes 1 MiB throughout (envelope.SQS_MAX_MESSAGE_BYTES).
MAX_MESSAGE_BYTES: Final = 1_048_576
# A SendMessageBatch call: the sum of its messages' sizes, and at most 10 entries.
MAX_BATCH_BYTES: Final = 1_048_576
MAX_BATCH_ENTRIES: Final = 10
MAX_BATCH_ENTRY_ID_CHARS: Final = 80
MAX_MESSAGE_ATTRIBUTES: Final = 10
MAX_ATTRIBUTE_NAME_CHARS: Final = 256
MAX_DATA_TYPE_CHARS: Final = 256
MAX_NUMBER_DIGITS: Final = 38
MAX_DELAY_SECONDS: Final = 900
MAX_VISIBILITY_TIMEOUT_SECONDS: Final = 43_200
MAX_RECEIVE_MESSAGES: Final = 10
MAX_WAIT_TIME_SECONDS: Final = 20

# Bodies and string attribute values: the XML 1.0 character set, nothing else.
ALLOWED_CHARACTERS: Final = "#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF"
_FORBIDDEN_CHARACTER = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_RESERVED_NAME_PREFIXES: Final = ("aws.", "amazon.")
# String, Number or Binary, optionally with a custom label: `Number.int`, `Binary.gif`.
_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.[A-Za-z0-9_.\-]+)?")
_BATCH_ENTRY_ID = re.compile(r"[A-Za-z0-9_\-]+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

RULES: Final = {
    "sqs.message_characters": f"message bodies hold only {ALLOWED_CHARACTERS}",
    "sqs.message_size": (
        f"a message (body + attribute names, types and values) is 1 to {MAX_MESSAGE_BYTES} bytes"
    ),
    "sqs.batch_entries": f"a batch call has 1 to {MAX_BATCH_ENTRIES} entries",
    "sqs.batch_entry_ids": (
        f"batch entry ids are distinct, 1 to {MAX_BATCH_ENTRY_ID_CHARS} characters of "
        "A-Z a-z 0-9 _ -"
    ),
    "sqs.batch_size": (
        f"a SendMessageBatch call's messages add up to at most {MAX_BATCH_BYTES} bytes"
    ),
    "sqs.attribute_count": f"a message has at most {MAX_MESSAGE_ATTRIBUTES} message attributes",
    "sqs.attribute_name": (
        f"attribute names are 1 to {MAX_ATTRIBUTE_NAME_CHARS} characters of A-Z a-z 0-9 _ - ., "
        "do not start with AWS. or Amazon. (any case), and have no leading, trailing or "
        "consecutive periods"
    ),
    "sqs.attribute_type": (
        "attribute data types are String, Number or Binary, optionally with a .label "
        f"(at most {MAX_DATA_TYPE_CHARS} characters)"
    ),
    "sqs.attribute_value": (
        "attribute values are non-empty and match the data type: String in the body's character "
        f"set, Number a decimal of at most {MAX_NUMBER_DIGITS} digits, Binary bytes"
    ),
    "sqs.delay_seconds": f"DelaySeconds is 0 to {MAX_DELAY_SECONDS}",
    "sqs.visibility_timeout": (
        f"VisibilityTimeout (ReceiveMessage, ChangeMessageVisibility[Batch]) is 0 to "
        f"{MAX_VISIBILITY_TIMEOUT_SECONDS}"
    ),
    "sqs.receive_max_messages": (
        f"ReceiveMessage's MaxNumberOfMessages is 1 to {MAX_RECEIVE_MESSAGES}"
    ),
    "sqs.receive_wait_time": f"ReceiveMessage's WaitTimeSeconds is 0 to {MAX_WAIT_TIME_SECONDS}",
}


def check(operation: str, params: Mapping[str, Any]) -> list[Violation]:
    """Every limit `params` (as passed to the boto3 method) breaks; empty when SQS takes it."""
    checks = _CHECKS.get(operation)
    if checks is None:
        return []
    return [violation for check_ in checks for violation in check_(params)]


# -- the rules -------------------------------------------------------------------------------


def message_characters(where: str, text: object) -> Iterator[Violation]:
    if not isinstance(text, str):
        return
    found = _FORBIDDEN_CHARACTER.search(text)
    if found is not None:
        count = len(_FORBIDDEN_CHARACTER.findall(text))
        yield Violation(
            "sqs.message_characters",
            f"{where} holds U+{ord(found.group()):04X} at character {found.start()} ({count} "
            f"such character(s)); SQS accepts only {ALLOWED_CHARACTERS}",
            "InvalidMessageContents",
        )


def message_size(where: str, message: Mapping[str, Any]) -> Iterator[Violation]:
    body = message.get("MessageBody")
    if isinstance(body, str) and not body:
        yield Violation(
            "sqs.message_size",
            f"{where}MessageBody is empty: SQS needs at least one character",
            "MissingParameter",
        )
    size = message_bytes(message)
    if size > MAX_MESSAGE_BYTES:
        yield Violation(
            "sqs.message_size",
            f"{where.rstrip('.') or 'the message'} is {size} bytes (body + attributes); SQS takes "
            f"at most {MAX_MESSAGE_BYTES}",
            "InvalidParameterValue",
        )


def attribute_count(where: str, attributes: Mapping[str, Any]) -> Iterator[Violation]:
    if len(attributes) > MAX_MESSAGE_ATTRIBUTES:
        yield Violation(
            "sqs.attribute_count",
            f"{where}MessageAttributes has {len(attributes)} attributes; SQS allows at most "
            f"{MAX_MESSAGE_ATTRIBUTES}",
            "InvalidParameterValue",
        )


def attribute_name(where: str, name: str) -> Iterator[Violation]:
    problem = None
    if not name or len(name) > MAX_ATTRIBUTE_NAME_CHARS:
        problem = f"is {len(name)} characters (1 to {MAX_ATTRIBUTE_NAME_CHARS})"
    elif not _ATTRIBUTE_NAME.fullmatch(name):
        problem = "holds a character other than A-Z a-z 0-9 _ - ."
    elif name.lower().startswith(_RESERVED_NAME_PREFIXES):
        problem = "starts with AWS. or Amazon., which SQS reserves"
    elif name.startswith(".") or name.endswith(".") or ".." in name:
        problem = "has a leading, trailing or doubled period"
    if problem is not None:
        yield Violation(
            "sqs.attribute_name",
            f"{where}MessageAttributes name {_shown(name)} {problem}",
            "InvalidAttributeName",
        )


def attribute_type(where: str, data_type: object) -> Iterator[Violation]:
    if (
        not isinstance(data_type, str)
        or len(data_type) > MAX_DATA_TYPE_CHARS
        or not _DATA_TYPE.fullmatch(data_type)
    ):
        yield Violation(
            "sqs.attribute_type",
            f"{where}.DataType {_shown(data_type)} is not String, Number or Binary "
            f"(optionally with a .label, at most {MAX_DATA_TYPE_CHARS} characters)",
            "InvalidParameterValue",
        )


def attribute_value(where: str, attribute: Mapping[str, Any]) -> Iterator[Violation]:
    data_type = attribute.get("DataType")
    if not isinstance(data_type, str):
        return
    base = data_type.split(".", 1)[0]
    string_value = attribute.get("StringValue")
    binary_value = attribute.get("BinaryValue")
    problem = None
    if base in ("String", "Number"):
        if not isinstance(string_value, str) or not string_value:
            problem = f"a {base} attribute needs a non-empty StringValue"
        elif base == "String" and _FORBIDDEN_CHARACTER.search(string_value):
            found = _FORBIDDEN_CHARACTER.search(string_value)
            assert found is not None
            problem = (
                f"StringValue holds U+{ord(found.group()):04X}; SQS accepts only "
                f"{ALLOWED_CHARACTERS}"
            )
        elif base == "Number" and not _is_sqs_number(string_value):
            problem = f"StringValue is not a number of at most {MAX_NUMBER_DIGITS} digits"
    elif base == "Binary" and not binary_value:
        problem = "a Binary attribute needs a non-empty BinaryValue"
    if problem is not None:
        yield Violation("sqs.attribute_value", f"{where}: {problem}", "InvalidParameterValue")


def delay_seconds(where: str, value: object) -> Iterator[Violation]:
    if value is not None and not _in_range(value, 0, MAX_DELAY_SECONDS):
        yield Violation(
            "sqs.delay_seconds",
            f"{where}DelaySeconds is {value!r}; SQS allows 0 to {MAX_DELAY_SECONDS}",
            "InvalidParameterValue",
        )


def visibility_timeout(where: str, value: object) -> Iterator[Violation]:
    if value is not None and not _in_range(value, 0, MAX_VISIBILITY_TIMEOUT_SECONDS):
        yield Violation(
            "sqs.visibility_timeout",
            f"{where}VisibilityTimeout is {value!r}; SQS allows 0 to "
            f"{MAX_VISIBILITY_TIMEOUT_SECONDS} (12 hours)",
            "InvalidParameterValue",
        )


def batch_entries(entries: Sequence[Any]) -> Iterator[Violation]:
    if not entries:
        yield Violation(
            "sqs.batch_entries", "Entries is empty: a batch needs an entry", "EmptyBatchRequest"
        )
    elif len(entries) > MAX_BATCH_ENTRIES:
        yield Violation(
            "sqs.batch_entries",
            f"Entries has {len(entries)} entries; SQS takes at most {MAX_BATCH_ENTRIES}",
            "TooManyEntriesInBatchRequest",
        )


def batch_entry_ids(entries: Sequence[Any]) -> Iterator[Violation]:
    seen: set[str] = set()
    for n, entry in enumerate(entries):
        entry_id = entry.get("Id") if isinstance(entry, Mapping) else None
        if not isinstance(entry_id, str):
            continue
        if len(entry_id) > MAX_BATCH_ENTRY_ID_CHARS or not _BATCH_ENTRY_ID.fullmatch(entry_id):
            yield Violation(
                "sqs.batch_entry_ids",
                f"Entries[{n}].Id {_shown(entry_id)} is not 1 to {MAX_BATCH_ENTRY_ID_CHARS} "
                "characters of A-Z a-z 0-9 _ -",
                "InvalidBatchEntryId",
            )
        elif entry_id in seen:
            yield Violation(
                "sqs.batch_entry_ids",
                f"Entries[{n}].Id {entry_id!r} is used twice in one batch",
                "BatchEntryIdsNotDistinct",
            )
        seen.add(entry_id)


def batch_size(entries: Sequence[Any]) -> Iterator[Violation]:
    total = sum(message_bytes(entry) for entry in entries if isinstance(entry, Mapping))
    if total > MAX_BATCH_BYTES:
        yield Violation(
            "sqs.batch_size",
            f"the batch's messages add up to {total} bytes; SQS takes at most {MAX_BATCH_BYTES} "
            "per SendMessageBatch call",
            "BatchRequestTooLong",
        )


def receive_max_messages(value: object) -> Iterator[Violation]:
    if value is not None and not _in_range(value, 1, MAX_RECEIVE_MESSAGES):
        yield Violation(
            "sqs.receive_max_messages",
            f"MaxNumberOfMessages is {value!r}; SQS allows 1 to {MAX_RECEIVE_MESSAGES}",
            "InvalidParameterValue",
        )


def receive_wait_time(value: object) -> Iterator[Violation]:
    if value is not None and not _in_range(value, 0, MAX_WAIT_TIME_SECONDS):
        yield Violation(
            "sqs.receive_wait_time",
            f"WaitTimeSeconds is {value!r}; SQS allows 0 to {MAX_WAIT_TIME_SECONDS}",
            "InvalidParameterValue",
        )


# -- sizes -----------------------------------------------------------------------------------


def message_bytes(message: Mapping[str, Any]) -> int:
    """What SQS counts against its size limit: the body and every attribute's name, data type
    and value, in bytes."""
    body = message.get("MessageBody")
    size = len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0
    attributes = message.get("MessageAttributes")
    if isinstance(attributes, Mapping):
        for name, attribute in attributes.items():
            size += _text_bytes(name)
            if isinstance(attribute, Mapping):
                size += _text_bytes(attribute.get("DataType"))
                size += _text_bytes(attribute.get("StringValue"))
                size += _binary_bytes(attribute.get("BinaryValue"))
    return size


# -- requests --------------------------------------------------------------------------------


def _message(where: str, message: Mapping[str, Any]) -> Iterator[Violation]:
    """One message of SendMessage (`where` empty) or of a SendMessageBatch entry."""
    yield from message_characters(f"{where}MessageBody", message.get("MessageBody"))
    attributes = message.get("MessageAttributes")
    if isinstance(attributes, Mapping):
        yield from attribute_count(where, attributes)
        for name, attribute in attributes.items():
            at = f"{where}MessageAttributes[{_shown(name)}]"
            yield from attribute_name(where, str(name))
            if isinstance(attribute, Mapping):
                yield from attribute_type(at, attribute.get("DataType"))
                yield from attribute_value(at, attribute)
    yield from message_size(where, message)
    yield from delay_seconds(where, message.get("DelaySeconds"))


def _send_message(params: Mapping[str, Any]) -> Iterator[Violation]:
    yield from _message("", params)


def _send_message_batch(params: Mapping[str, Any]) -> Iterator[Violation]:
    entries = _entries(params)
    yield from batch_entries(entries)
    yield from batch_entry_ids(entries)
    for n, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            yield from _message(f"Entries[{n}].", entry)
    yield from batch_size(entries)


def _receive_message(params: Mapping[str, Any]) -> Iterator[Violation]:
    yield from receive_max_messages(params.get("MaxNumberOfMessages"))
    yield from receive_wait_time(params.get("WaitTimeSeconds"))
    yield from visibility_timeout("", params.get("VisibilityTimeout"))


def _change_message_visibility(params: Mapping[str, Any]) -> Iterator[Violation]:
    yield from visibility_timeout("", params.get("VisibilityTimeout"))


def _change_message_visibility_batch(params: Mapping[str, Any]) -> Iterator[Violation]:
    entries = _entries(params)
    yield from batch_entries(entries)
    yield from batch_entry_ids(entries)
    for n, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            yield from visibility_timeout(f"Entries[{n}].", entry.get("VisibilityTimeout"))


def _delete_message_batch(params: Mapping[str, Any]) -> Iterator[Violation]:
    entries = _entries(params)
    yield from batch_entries(entries)
    yield from batch_entry_ids(entries)


_CHECKS: Final[dict[str, tuple[Callable[[Mapping[str, Any]], Iterator[Violation]], ...]]] = {
    "SendMessage": (_send_message,),
    "SendMessageBatch": (_send_message_batch,),
    "ReceiveMessage": (_receive_message,),
    "ChangeMessageVisibility": (_change_message_visibility,),
    "ChangeMessageVisibilityBatch": (_change_message_visibility_batch,),
    "DeleteMessageBatch": (_delete_message_batch,),
}


# -- helpers ---------------------------------------------------------------------------------


def _entries(params: Mapping[str, Any]) -> Sequence[Any]:
    entries = params.get("Entries")
    return entries if isinstance(entries, list | tuple) else ()


def _in_range(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _is_sqs_number(text: str) -> bool:
    if not _NUMBER.fullmatch(text):
        return False
    # Leading and trailing zeros do not count (SQS trims them).
    digits = re.split("[eE]", text)[0].lstrip("+-").replace(".", "").strip("0")
    return len(digits) <= MAX_NUMBER_DIGITS


def _text_bytes(value: object) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0


def _binary_bytes(value: object) -> int:
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    return _text_bytes(value)


def _shown(value: object, limit: int = 40) -> str:
    """A name as it may appear in an error: quoted, escaped, cut."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
