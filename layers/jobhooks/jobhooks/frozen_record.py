"""Frozen records that cost nothing to define: what `@dataclass(frozen=True, slots=True)` makes
of a class, less the code it compiles when the class is defined.

On Python 3.12 (the runtime template.yaml names), `@dataclass(frozen=True)` writes the source
of six methods (`__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`) and
compiles each with `exec` when the module is imported: about 1.1 ms of CPU per class, paid by
every cold start that defines it, where the class statement alone takes microseconds. A
`FrozenRecord` subclass declares its fields (annotations, in order), lists them in `__slots__`
and writes its `__init__`, which sets each field with `object.__setattr__`; this base gives it
the rest, with a frozen dataclass's behaviour:

- `==` compares two records of the same class field by field, in declaration order (another
  class: `NotImplemented`), and `hash` is the hash of the fields' tuple;
- `repr` is `Name(field=value, ...)`;
- assigning or deleting an attribute raises `dataclasses.FrozenInstanceError` (for a name that
  is not a field, Python 3.12's slotted frozen dataclass raised `TypeError` instead: its
  `__setattr__` names the class as it was before `slots=True` replaced it);
- `copy`, `deepcopy` and `pickle` rebuild a record from its fields' values; `__match_args__`
  lists the fields for `match`.

A record has `__slots__`, so no `__dict__`. It is not a dataclass: `dataclasses.fields` and
`asdict` do not accept one, and a copy with changes is this module's `replace`, which makes it
as `dataclasses.replace` makes a dataclass's. A record whose fields need `field()` options stays
a dataclass (`HmacKey`). `tests/unit/test_frozen_record.py` holds every
subclass to the frozen dataclass of the same fields and defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform


@dataclass_transform(frozen_default=True)
class FrozenRecord:
    """A frozen record (see the module): subclasses declare fields, `__slots__` and `__init__`."""

    __slots__ = ()

    # The fields in declaration order, and a getter of their values as a tuple (per subclass).
    _fields: ClassVar[tuple[str, ...]] = ()
    _values: ClassVar[Callable[[Any], tuple[Any, ...]]]
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = tuple(cls.__annotations__)
        if not fields or set(fields) != set(cls.__dict__.get("__slots__", ())):
            raise TypeError(f"{cls.__qualname__}: __slots__ must list its annotated fields")
        cls._fields = fields
        cls.__match_args__ = fields  # type: ignore[misc]  # mypy holds it final; a dataclass sets it
        if len(fields) == 1:
            (name,) = fields
            cls._values = staticmethod(lambda record: (getattr(record, name),))
        else:
            cls._values = staticmethod(attrgetter(*fields))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            values = type(self)._values
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(type(self)._values(self))

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{self.__class__.__qualname__}({values})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> list[Any]:
        return list(type(self)._values(self))

    def __setstate__(self, state: list[Any]) -> None:
        for name, value in zip(self._fields, state, strict=True):
            object.__setattr__(self, name, value)


Record = TypeVar("Record", bound=FrozenRecord)


def replace(record: Record, /, **changes: Any) -> Record:
    """A new record of `record`'s class: its fields, but for `changes` (`dataclasses.replace`)."""
    values = dict(zip(record._fields, type(record)._values(record), strict=True))
    return type(record)(**{**values, **changes})
