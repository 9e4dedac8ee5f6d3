"""Reading the static ``indexer`` parameter of Ref accesses, and the operands of the masked
ones.

The ``indexer`` of ``get``/``swap``/``addupdate`` (and Pallas' masked accesses) describes one
entry per Ref dimension: ``("index", k)`` (``k`` an int, or None: the next dynamic operand),
``("slice", start, size, stride)`` (``start`` an int, or None: the next dynamic operand) or
``("array",)`` (an integer array operand). The dynamic operands follow the Ref (and the value)
in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SliceEntry:
    """``start + stride * [0, size)`` along one dimension; ``start`` an int or a Value."""

    start: Any
    size: int
    stride: int = 1


def entries(indexer: Any, dynamic: Sequence[Any], shape: Sequence[int]) -> list[Any]:
    """The indexer's entries with their dynamic parts filled in: a ``SliceEntry``, a scalar
    index (an int or a Value) or an integer array (a Value) per Ref dimension."""
    if tuple(indexer.shape) != tuple(shape):
        raise ValueError(f"an indexer for shape {indexer.shape} used on a Ref of shape {shape}")
    values = iter(dynamic)
    result: list[Any] = []
    for entry in indexer.entries:
        kind = entry[0]
        if kind == "index":
            result.append(next(values) if entry[1] is None else entry[1])
        elif kind == "slice":
            _, start, size, stride = entry
            result.append(SliceEntry(next(values) if start is None else start, size, stride))
        else:  # ("array",): an integer array, a gather or scatter
            result.append(next(values))
    return result


@dataclass(frozen=True)
class MaskedAccess:
    """The operands of ``masked_load``/``masked_swap``/``atomic_rmw``, by role."""

    ref: Any
    value: Any  # None for a load
    mask: Any  # None: every element
    other: Any  # a load's value where masked off; None: zeros
    dynamic: list[Any]


def masked_operands(primitive: str, params: dict, operands: Sequence[Any]) -> MaskedAccess:
    """Split the operands of a masked access: ``ref, [value], [mask], [other],
    *index_values``, where ``value`` is present except for ``masked_load``, ``mask`` when
    ``has_mask`` and ``other`` (loads only) when ``has_other``."""
    rest = list(operands)
    ref = rest.pop(0)
    value = None if primitive == "masked_load" else rest.pop(0)
    mask = rest.pop(0) if params.get("has_mask") else None
    other = rest.pop(0) if params.get("has_other") else None
    return MaskedAccess(ref, value, mask, other, rest)
