"""Frozen, slotted, typed records without `dataclasses.dataclass`.

`@dataclass(frozen=True, slots=True)` writes each class's methods as source and compiles them
(~0.7 ms a class on this VM, at every import, with or without cached bytecode): core/meta.py's
ten classes were ~8 ms of a binding's first call. `Record` gives the same contract (keyword or
positional construction in field order, defaults, equality and hash by value, a readable repr,
`dataclasses.FrozenInstanceError` on assignment, `_replace`, pickling and copying) from generic methods that
read the class's field list, built once when the class is created from its annotations.

    class Row(Record):
        families: tuple[str, ...]
        since: str | None = None
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError

__all__ = ["Record", "FrozenInstanceError"]

_MISSING = object()


class _RecordType(type):
    """Turns the annotated names of a class body into its slots, in order; a value given in the
    body becomes that field's default (slots and class attributes cannot share a name)."""

    def __new__(mcls, name, bases, namespace):
        if "__slots__" in namespace:  # the base class itself
            return super().__new__(mcls, name, bases, namespace)
        fields = tuple(namespace.get("__annotations__", ()))
        defaults = {f: namespace.pop(f) for f in fields if f in namespace}
        for base in bases:
            inherited = getattr(base, "_fields", ())
            if inherited:
                raise TypeError(f"{name}: a record does not extend another record's fields")
        namespace["__slots__"] = fields
        namespace["_fields"] = fields
        namespace["_defaults"] = defaults
        seen_default = False
        for f in fields:
            if f in defaults:
                seen_default = True
            elif seen_default:
                raise TypeError(f"{name}: field {f!r} without a default follows one with a default")
        return super().__new__(mcls, name, bases, namespace)


class Record(metaclass=_RecordType):
    """A frozen record; see the module docstring."""

    __slots__ = ()
    _fields = ()  # tuple[str, ...], set by _RecordType per class
    _defaults = {}  # dict[str, Any]: field -> default

    def __init__(self, *args, **kwargs):
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} fields, got {len(args)} positional")
        put = object.__setattr__
        for f, value in zip(fields, args):
            put(self, f, value)
        for f in fields[len(args) :]:
            value = kwargs.pop(f, _MISSING)
            if value is _MISSING:
                value = self._defaults.get(f, _MISSING)
                if value is _MISSING:
                    raise TypeError(f"{type(self).__name__}() is missing field {f!r}")
            put(self, f, value)
        if kwargs:
            taken = [k for k in kwargs if k in fields]
            what = "given twice" if taken else "unknown"
            raise TypeError(f"{type(self).__name__}(): {what} field(s) {', '.join(map(repr, taken or kwargs))}")

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self._fields)

    def _replace(self, **changes):
        """A copy with `changes` (field name -> value), as dataclasses.replace makes one."""
        values = {f: changes.pop(f) if f in changes else getattr(self, f) for f in self._fields}
        return type(self)(**values, **changes)  # a name left in `changes` is no field: TypeError

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self):
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self._fields)})"

    def __reduce__(self):
        # the default reduction of a slotted object restores its state with setattr, which a
        # frozen record refuses: rebuild it from its values instead (pickle, copy, deepcopy)
        return (type(self), self._values())
