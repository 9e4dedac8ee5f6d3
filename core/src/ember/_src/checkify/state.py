"""The error state checkify threads through a program while it interprets it.

The state is an int32 ``code`` (0: no check has failed yet; otherwise the code of the first
that failed) and one *slot* of payload arrays per payload type. A failing check writes its
code and its payload only if no earlier check failed, so the first failure, in the order the
program runs, wins, and its payload is the one kept. Sites whose payloads have the same types
share a slot (only the first failure's payload is ever read), which keeps the state small
however many checks a program has.

Loops and ``cond`` need a state of the same structure going in and coming out: ``pad`` adds
empty slots, filled with zeros, for the slots their bodies will add.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src.checkify.error import Error, ErrorSite, SlotKey
from ember._src.core import ShapedArray, get_aval
from ember._src.numpy.reductions import argmax
from ember._src.primitives.bits import bitwise_and
from ember._src.primitives.comparisons import eq, ne
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import convert_element_type, reshape


def slot_key(avals: Sequence[ShapedArray]) -> SlotKey:
    return tuple((tuple(a.shape), a.dtype.name) for a in avals)


def _placeholder(entry: tuple[tuple[int, ...], str]) -> np.ndarray:
    shape, dtype = entry
    return np.zeros(shape, np.dtype(dtype))


class ErrorState:
    """The error state while a program is interpreted (mutated by each check)."""

    __slots__ = ("code", "slots", "sites")

    def __init__(self, code: Any, slots: dict[SlotKey, list[Any]], sites: dict[int, ErrorSite]):
        self.code = code
        self.slots = slots
        self.sites = sites

    @classmethod
    def empty(cls) -> ErrorState:
        return cls(np.int32(0), {}, {})

    # -- recording ------------------------------------------------------------------------------

    def record(self, failed: Any, site: ErrorSite, payload: Sequence[Any] = ()) -> None:
        """Record that ``site`` failed where ``failed`` (a bool scalar) is True, unless an
        earlier check failed already."""
        self.sites[site.code] = site
        if failed is False:
            return
        first = bitwise_and(failed, eq(self.code, np.int32(0)))
        self.code = select_n(first, self.code, np.int32(site.code))
        if payload:
            self._write(site.slot, payload, first)

    def merge(self, error: Error) -> None:
        """Take ``error``'s failure (an Error another checkify returned) unless one happened
        here first. A batched error gives the failure of its first failing lane."""
        code, payloads = _first_failing_lane(error)
        first = bitwise_and(ne(code, np.int32(0)), eq(self.code, np.int32(0)))
        self.code = select_n(first, self.code, code)
        for key, payload in zip(error._slots, payloads):
            self._write(key, payload, first)
        self.sites.update(error._sites)

    def _write(self, key: SlotKey, payload: Sequence[Any], first: Any) -> None:
        """Put ``payload`` in slot ``key`` where ``first`` holds."""
        old = self.slots.get(key)
        if old is None:  # no earlier site has this slot: its payload is the only one
            self.slots[key] = list(payload)
        else:
            self.slots[key] = [select_n(first, o, p) for o, p in zip(old, payload)]

    # -- as flat values (the operands and results of loops, conds and calls) -------------------

    def keys(self) -> list[SlotKey]:
        return sorted(self.slots, key=repr)

    def leaves(self) -> list[Any]:
        return [self.code, *(leaf for key in self.keys() for leaf in self.slots[key])]

    def avals(self) -> list[ShapedArray]:
        return [get_aval(x).strip_weak_type() for x in self.leaves()]

    def set_leaves(self, keys: Sequence[SlotKey], leaves: Sequence[Any]) -> None:
        """Take ``leaves`` (as ``leaves()`` orders them for ``keys``) as the new state."""
        self.code = leaves[0]
        self.slots = {}
        start = 1
        for key in keys:
            self.slots[key] = list(leaves[start : start + len(key)])
            start += len(key)

    @classmethod
    def from_leaves(
        cls, keys: Sequence[SlotKey], leaves: Sequence[Any], sites: dict[int, ErrorSite]
    ) -> ErrorState:
        state = cls(None, {}, sites)
        state.set_leaves(keys, leaves)
        return state

    def pad(self, keys: Sequence[SlotKey]) -> None:
        """Add an empty (zero) slot for each of ``keys`` the state lacks."""
        for key in keys:
            if key not in self.slots:
                self.slots[key] = [_placeholder(entry) for entry in key]

    def to_error(self) -> Error:
        keys = self.keys()
        return Error(self.code, [self.slots[k] for k in keys], keys, dict(self.sites))


def _first_failing_lane(error: Error) -> tuple[Any, list[list[Any]]]:
    """The code and payloads of ``error``, or of its first lane that failed (the first of
    all, if none did) when it is batched."""
    code, payloads = error._code, [list(p) for p in error._payloads]
    batch_shape = get_aval(code).shape
    if not batch_shape:
        return code, payloads
    lanes = int(np.prod(batch_shape))
    code = reshape(code, (lanes,))
    lane = argmax(ne(code, np.int32(0)))

    def at_lane(leaf: Any) -> Any:
        return reshape(leaf, (lanes, *get_aval(leaf).shape[len(batch_shape) :]))[lane]

    return code[lane], [[at_lane(leaf) for leaf in p] for p in payloads]


def as_payload(values: Sequence[Any]) -> list[Any]:
    """Payload leaves as strongly typed arrays (a slot's key is their exact types)."""
    out = []
    for x in values:
        aval = get_aval(x)
        out.append(convert_element_type(x, aval.dtype) if aval.weak_type else x)
    return out
