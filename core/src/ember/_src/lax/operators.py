"""lax functions over one primitive each, in JAX's lax forms where the primitive's binder
takes another: ``broadcast``, ``select``, ``stop_gradient`` (on a pytree),
``convert_element_type`` (always strongly typed) and the 1-D ``iota``."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ember._src.core import get_aval
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim as _broadcast_in_dim,
    convert_element_type as _convert_element_type,
    iota_along,
)
from ember._src.primitives.sharding_constraint import laid_out
from ember._src.primitives.stop_gradient import stop_gradient_p
from ember._src.tree.util import tree_map


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Add leading dimensions of the given sizes."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return laid_out(_broadcast_in_dim(operand, sizes + aval.shape, dims), out_sharding)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` holds, else ``on_false`` (shapes must match)."""
    return select_n(pred, on_false, on_true)


def stop_gradient(x: Any) -> Any:
    """Identity on a pytree, with a zero derivative."""
    return tree_map(stop_gradient_p.bind, x)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast ``operand`` to ``new_dtype`` (a strongly typed result)."""
    return _convert_element_type(operand, new_dtype)


def iota(dtype: Any, size: int) -> Any:
    """The 1-D array ``[0, 1, ..., size - 1]`` of ``dtype`` (see broadcasted_iota for n-D)."""
    return iota_along(dtype, (operator.index(size),), 0)
