"""Shapes under broadcasting: broadcast_shapes, and array_equiv (equal after broadcasting)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, reductions


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that arrays of ``shapes`` broadcast to (integers count as 1-D shapes)."""
    normal = [
        (operator.index(s),) if np.ndim(s) == 0 else tuple(map(operator.index, s)) for s in shapes
    ]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*normal))
    except ValueError:
        shown = ", ".join(str(s) for s in normal)
        raise ValueError(
            f"broadcast_shapes: incompatible shapes for broadcasting: {shown}{errors.where()}"
        ) from None


def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether ``a1`` and ``a2`` are equal element-wise after broadcasting (False when they
    do not broadcast together)."""
    a1, a2 = creation.asarray(a1), creation.asarray(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return creation.asarray(False)
    return reductions.all(enp.equal(a1, a2))
