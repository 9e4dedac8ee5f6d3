"""lax functions that are compositions rather than primitives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src.core import get_aval
from ember._src.ops.elementwise import select_n, stop_gradient_p
from ember._src.ops.shape import broadcast_in_dim
from ember._src.tree_util import tree_map


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of the given sizes."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, sizes + aval.shape, dims)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` holds, else ``on_false`` (shapes must match)."""
    return select_n(pred, on_false, on_true)


def stop_gradient(x: Any) -> Any:
    """Identity on a pytree, with a zero derivative."""
    return tree_map(stop_gradient_p.bind, x)
