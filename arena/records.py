"""Records as plain dicts and back: the one serialisation of the Arena's dataclasses.

Every record the Arena writes or answers with (the match record, the status log's events,
the audit and incident logs, the model-card ledger, a match's logs, `evaluate --json`, the
pages' API) is a dataclass, and its dict form is read off its fields, by one rule:

- **written** (`to_dict`): enums as their values, tuples and lists as lists, mappings as
  dicts with string keys (as JSON has them), nested dataclasses as their own dicts;
- **read** (`from_dict`): each value as its field's type says (`int`, `float`, `str` and
  `bool` converted; enums, tuples, mappings, nested dataclasses, `X | None`). A missing key
  reads as the field's default (`MissingFieldError`, a `KeyError`, if it has none), a null
  as the default of a field that cannot be None, and keys no field names are ignored: a
  record written by a newer Arena still reads.

A class gets both as methods by subclassing `Record`; where its form differs from its
fields on purpose, it says so once, in `FORMAT = Format(...)`.

Only the standard library (and `arena.errors`) here: the sandboxed team processes import
this module too.

Example:
    >>> @dataclass(frozen=True)
    ... class Seat(Record):
    ...     slot: int
    ...     players: tuple[str, ...] = ()
    >>> Seat(3, ("a/b@1",)).to_dict()
    {'slot': 3, 'players': ['a/b@1']}
    >>> Seat.from_dict({"slot": "4", "written_by_a_newer_arena": True})
    Seat(slot=4, players=())
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from enum import Enum
from typing import Any, ClassVar, TypeVar

from arena.errors import InvalidArgumentError, MissingFieldError

R = TypeVar("R")


@dataclass(frozen=True)
class Format:
    """How a record's dict differs from its fields, declared once per class (`FORMAT`).

    Attributes:
        keys (`Mapping[str, str | tuple[str, ...]]`): a field (or a `layout` name) written
            under another key; a tuple spreads a nested record's fields into that many keys
            of this one, in order (`{"id": ("repo_id", "revision")}`).
        layout (`tuple[str, ...]`, *optional*): the names written, in order, where that is
            not the fields' order. A name that is no field is a derived value, a property
            or a method without arguments: written, never read.
        omit_none (`bool`): leave out the keys whose value is None (read back as None).
        defaults (`Mapping[str, Any]`): what a field without a default reads as when its
            key is missing (records written before it existed).
        row (`bool`): the record is written as the list of its fields' values, in order
            (a log's lines, an observation layout's arrays).
    """

    keys: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    layout: tuple[str, ...] | None = None
    omit_none: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    row: bool = False


#: The form of a record that declares none: its fields, as they are.
PLAIN = Format()

_ABSENT: Any = object()


class Record:
    """A dataclass with `to_dict` and `from_dict` (this module's rule, and its `FORMAT`)."""

    FORMAT: ClassVar[Format] = PLAIN

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict, ready for `json.dumps`."""
        return to_dict(self)

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """Read what `to_dict` wrote, or an older Arena (see `from_dict` for what it raises)."""
        return from_dict(cls, data)


def to_dict(record: Any) -> dict[str, Any]:
    """A dataclass as a plain dict (see the module's docstring)."""
    plan = _plan(type(record))
    out: dict[str, Any] = {}
    for entry in plan.written:
        value = getattr(record, entry.name)
        if entry.call:
            value = value()
        if value is None and plan.format.omit_none:
            continue
        value = _written(value)
        if len(entry.keys) == 1:
            out[entry.keys[0]] = value
        else:
            out.update(zip(entry.keys, value.values()))
    return out


def from_dict(cls: type[R], data: Any) -> R:
    """A dataclass read from a plain dict (a list for a `row` record).

    Raises:
        `MissingFieldError` (a `KeyError`): a field without a default is missing.
            `ValueError`, `TypeError`: a value is not of its field's type.
    """
    plan = _plan(cls)
    make: Any = cls
    if plan.format.row:
        return make(*(entry.read(value) for entry, value in zip(plan.read, data)))
    values: dict[str, Any] = {}
    for entry in plan.read:
        if entry.nested:
            present = all(key in data for key in entry.keys)
            raw = {name: data[key] for name, key in zip(entry.nested, entry.keys)} if present else _ABSENT
        else:
            raw = data.get(entry.keys[0], _ABSENT)
        if raw is not _ABSENT and (raw is not None or entry.nullable):
            values[entry.name] = entry.read(raw)
        elif entry.name in plan.format.defaults:
            values[entry.name] = plan.format.defaults[entry.name]
        elif not entry.has_default:
            if raw is _ABSENT:
                key = next(key for key in entry.keys if key not in data)
                raise MissingFieldError(f"{cls.__name__} record without its {key!r} key: {sorted(data)[:12]} given.")
            values[entry.name] = entry.read(raw)  # a null where none may be: the field's type refuses it
    return make(**values)


# -- the plan of one class, made once ----------------------------------------------------

def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class _Entry:
    name: str
    keys: tuple[str, ...]
    call: bool = False
    """A derived value that is a method: called."""
    read: Callable[[Any], Any] = _same
    nested: tuple[str, ...] = ()
    """For keys spread from a nested record: its fields' names."""
    nullable: bool = True
    has_default: bool = False


@dataclass(frozen=True)
class _Plan:
    format: Format
    written: tuple[_Entry, ...]
    read: tuple[_Entry, ...]


_plans: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    """The class's plan, made on first use (two threads may both make it: the same one)."""
    plan = _plans.get(cls)
    if plan is None:
        plan = _plans[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> _Plan:
    if not is_dataclass(cls):
        raise InvalidArgumentError(f"{cls.__name__} is not a dataclass: arena.records reads and writes dataclasses only.")
    form: Format = getattr(cls, "FORMAT", PLAIN)
    hints = typing.get_type_hints(cls)
    own = {f.name: f for f in fields(cls)}
    for name in (*form.keys, *form.defaults, *(form.layout or ())):
        if name not in own and not isinstance(inspect.getattr_static(cls, name, None), (property, types.FunctionType)):
            raise InvalidArgumentError(f"{cls.__name__}.FORMAT names {name!r}, which is no field, property or method of "
                                       "it: correct the name.")

    def keys(name: str) -> tuple[str, ...]:
        key = form.keys.get(name, name)
        return (key,) if isinstance(key, str) else tuple(key)

    def method(name: str) -> bool:  # a derived value to call, not a property to read
        return name not in own and not isinstance(inspect.getattr_static(cls, name), property)

    written = tuple(_Entry(name, keys(name), call=method(name)) for name in (form.layout or own))
    read = []
    for f in own.values():
        if not f.init:
            continue
        hint = hints[f.name]
        nested = tuple(g.name for g in fields(hint)) if len(keys(f.name)) > 1 else ()
        read.append(_Entry(f.name, keys(f.name), read=_reader(hint), nested=nested, nullable=_nullable(hint),
                           has_default=f.default is not MISSING or f.default_factory is not MISSING))
    return _Plan(form, written, tuple(read))


def _nullable(hint: Any) -> bool:
    return hint is Any or (typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint))


def _reader(hint: Any) -> Callable[[Any], Any]:
    """How a JSON value becomes a value of type `hint`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return _same
        one = _reader(inner[0])
        return lambda value: None if value is None else one(value)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _reader(args[0])
        return lambda value: tuple(item(v) for v in value)
    if origin is tuple and args:
        items = [_reader(a) for a in args]
        return lambda value: tuple(read(v) for read, v in zip(items, value))
    if origin is list:
        item = _reader(args[0]) if args else _same
        return lambda value: [item(v) for v in value]
    if origin in (dict, Mapping):
        key, item = (_reader(args[0]), _reader(args[1])) if args else (_same, _same)
        return lambda value: {key(k): item(v) for k, v in value.items()}
    if hint in (int, float, str, bool, tuple) or (isinstance(hint, type) and issubclass(hint, Enum)):
        return hint
    if isinstance(hint, type) and is_dataclass(hint):
        if issubclass(hint, Record):
            return hint.from_dict
        return functools.partial(from_dict, hint)
    return _same


def _written(value: Any) -> Any:
    """A value as JSON has it (see the module's docstring)."""
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        if _plan(type(value)).format.row:
            return [_written(getattr(value, f.name)) for f in fields(value)]
        return value.to_dict() if isinstance(value, Record) else to_dict(value)
    if isinstance(value, (tuple, list)):
        return [_written(v) for v in value]
    if isinstance(value, Mapping):
        return {_key(k): _written(v) for k, v in value.items()}
    return value


def _key(key: Any) -> str:
    return key if isinstance(key, str) else str(key.value if isinstance(key, Enum) else key)
