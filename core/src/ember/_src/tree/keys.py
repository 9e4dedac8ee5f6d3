"""Key paths: how a leaf is reached from the root of a pytree.

A key path is a tuple of key entries, one per container on the way down: ``DictKey`` for dict
keys, ``SequenceKey`` for list and tuple positions, ``GetAttrKey`` for namedtuple and dataclass
fields and ``FlattenedIndexKey`` for the children of registered classes that name none.
"""

from __future__ import annotations

from typing import Any, TypeVar

KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]


class _Key:
    """One step of a key path: an immutable, comparable, hashable record of one value."""

    __slots__ = ()
    _field: str

    def _value(self) -> Any:
        return getattr(self, self._field)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._value() == other._value()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._value()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._field}={self._value()!r})"

    def __reduce__(self) -> tuple:
        return type(self), (self._value(),)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


class DictKey(_Key):
    """The key of a dict entry; prints as ``['a']``."""

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: Any) -> None:
        object.__setattr__(self, "key", key)

    def __str__(self) -> str:
        return f"[{self.key!r}]"


class SequenceKey(_Key):
    """A position in a list or tuple; prints as ``[0]``."""

    __slots__ = ("idx",)
    __match_args__ = ("idx",)
    _field = "idx"

    def __init__(self, idx: int) -> None:
        object.__setattr__(self, "idx", _check_int(idx, "SequenceKey", "idx"))

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


class GetAttrKey(_Key):
    """A named field (namedtuple, dataclass, attribute); prints as ``.name``."""

    __slots__ = ("name",)
    __match_args__ = ("name",)
    _field = "name"

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"GetAttrKey(name) needs a str, got {type(name).__name__}")
        object.__setattr__(self, "name", name)

    def __str__(self) -> str:
        return f".{self.name}"


class FlattenedIndexKey(_Key):
    """The position of a child of a registered class that gives its children no keys."""

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: int) -> None:
        object.__setattr__(self, "key", _check_int(key, "FlattenedIndexKey", "key"))

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def _check_int(value: Any, cls: str, field: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{cls}({field}) needs an int, got {type(value).__name__}")
    return value.__index__()


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """The key path ``keys`` as text: ``['a'][0].x``, or with ``simple=True`` the bare keys
    (``a0x``, ambiguous but compact), joined by ``separator``."""
    to_text = _simple_text if simple else str
    return separator.join(map(to_text, keys))


def _simple_text(key: Any) -> str:
    if isinstance(key, _Key):
        return str(key._value())
    return str(key)
