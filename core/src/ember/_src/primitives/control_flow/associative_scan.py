"""``associative_scan``: an inclusive parallel prefix scan with any associative operator.

The classic odd/even recursion (as JAX does it): combine neighbouring pairs, scan the half as
long result, then fill in the remaining positions with one more combine. It needs about
``2 n`` applications of ``fn`` in ``2 log2 n`` sequential rounds, so it is the right tool on
parallel hardware where ``scan`` would run ``n`` steps one after another. It is built from
slices, concatenation and reshapes, so every transformation applies to it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._src import errors
from ember._src.core import get_aval
from ember._src.primitives.shape import expand_dims, move_axis, reshape
from ember._src.primitives.slicing import concatenate, rev, slice_op
from ember._src.tree.util import tree_flatten, tree_unflatten


def associative_scan(
    fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False, axis: int = 0
) -> Any:
    """Prefix "sums" of ``elems`` along ``axis`` under the associative ``fn``.

    ``fn(a, b)`` combines two pytrees shaped like ``elems`` (with any length along ``axis``)
    elementwise; ``result[i] = fn(... fn(elems[0], elems[1]) ..., elems[i])``.
    """
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    ndim = get_aval(leaves[0]).ndim
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"associative_scan: axis {axis} out of range for rank {ndim}")
    axis %= ndim
    lengths = {get_aval(x).shape[axis] for x in leaves}
    if len(lengths) != 1:
        raise ValueError(
            f"associative_scan: the leaves of elems have different lengths {sorted(lengths)} "
            f"along axis {axis}{errors.where()}"
        )
    leaves = [move_axis(x, axis, 0) for x in leaves]
    if reverse:
        leaves = [rev(x, (0,)) for x in leaves]

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise ValueError(
                f"associative_scan: fn must return the structure of elems ({tree}), got "
                f"{out_tree}{errors.where()}"
            )
        return out_leaves

    result = _scan(combine, leaves)
    if reverse:
        result = [rev(x, (0,)) for x in result]
    return tree_unflatten(tree, [move_axis(x, 0, axis) for x in result])


def _scan(combine, elems: list[Any]) -> list[Any]:
    n = get_aval(elems[0]).shape[0]
    if n < 2:
        return elems
    reduced = combine([_take(x, 0, n - 1, 2) for x in elems], [_take(x, 1, n, 2) for x in elems])
    odd = _scan(combine, reduced)
    if n % 2 == 0:
        even = combine(
            [_take(x, 0, len_of(x) - 1, 1) for x in odd], [_take(x, 2, n, 2) for x in elems]
        )
    else:
        even = combine(odd, [_take(x, 2, n, 2) for x in elems])
    even = [concatenate([_take(x, 0, 1, 1), e], 0) for x, e in zip(elems, even)]
    return [_interleave(e, o) for e, o in zip(even, odd)]


def len_of(x: Any) -> int:
    return get_aval(x).shape[0]


def _take(x: Any, start: int, stop: int, step: int) -> Any:
    """``x[start:stop:step]`` along the leading axis."""
    shape = get_aval(x).shape
    return slice_op(
        x,
        (start,) + (0,) * (len(shape) - 1),
        (max(stop, start),) + shape[1:],
        (step,) + (1,) * (len(shape) - 1),
    )


def _interleave(a: Any, b: Any) -> Any:
    """``a[0], b[0], a[1], b[1], ...`` along the leading axis (``a`` may be one longer)."""
    na, nb = len_of(a), len_of(b)
    rest = get_aval(b).shape[1:]
    head = _take(a, 0, nb, 1)
    pairs = concatenate([expand_dims(head, (1,)), expand_dims(b, (1,))], 1)
    woven = reshape(pairs, (2 * nb, *rest))
    if na > nb:
        woven = concatenate([woven, _take(a, nb, na, 1)], 0)
    return woven
