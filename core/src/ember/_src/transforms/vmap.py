"""``vmap``: vectorise a function over an axis of its arguments.

It flattens its pytree arguments, runs ``ember._src.interpreters.batching`` on the flat
function and puts each output's batch axis where ``out_axes`` says.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember._src import errors
from ember._src.core import get_aval
from ember._src.interpreters import batching
from ember._src.primitives.shape import broadcast_in_dim, move_axis
from ember._src.transforms.arguments import flatten_axes, leaf_aval
from ember._src.tree.util import flatten_fun, tree_flatten, tree_unflatten


def vmap(
    fun: Callable[..., Any],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
) -> Callable[..., Any]:
    """Vectorise ``fun`` over the axes ``in_axes`` of its arguments."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @functools.wraps(fun)
    def batched_fun(*args: Any, **kwargs: Any) -> Any:
        leaves, tree = tree_flatten((args, kwargs))
        dims = flatten_axes("vmap in_axes", tree, (in_axes, 0), (args, kwargs))
        size = _axis_size(leaves, dims, axis_size, fun)
        flat_fun = flatten_fun(_call_with_kwargs(fun), tree, keep_output=True)
        outs, out_dims = batching.batch_flat(flat_fun, leaves, dims, size, axis_name)
        out_value, out_tree = flat_fun.output, flat_fun.out_tree
        wanted = flatten_axes("vmap out_axes", out_tree, out_axes, out_value)
        results = [_place_axis(x, d, w, size, fun) for x, d, w in zip(outs, out_dims, wanted)]
        return tree_unflatten(out_tree, results)

    return batched_fun


def _call_with_kwargs(fun: Callable[..., Any]) -> Callable[[tuple, dict], Any]:
    """``fun`` taking its positional and keyword arguments as two values (the pytree
    ``(args, kwargs)`` that vmap flattens)."""
    return lambda args, kwargs: fun(*args, **kwargs)


def _axis_size(leaves: list[Any], dims: list[Any], axis_size: int | None, fun) -> int:
    sizes = {}
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        shape = leaf_aval(x, f"vmapped argument leaf #{i}").shape
        if not -len(shape) <= d < len(shape):
            raise ValueError(
                f"vmap in_axes={d} is out of range for argument leaf #{i} of shape {shape}"
                f"{errors.where()}"
            )
        sizes[i] = shape[d]
    if axis_size is not None:
        if any(s != axis_size for s in sizes.values()):
            raise ValueError(f"vmap axis_size={axis_size} differs from argument sizes {sizes}")
        return axis_size
    if not sizes:
        raise ValueError(
            f"vmap of {_name(fun)} needs at least one mapped argument (in_axes not all None) or "
            f"an explicit axis_size{errors.where()}"
        )
    distinct = set(sizes.values())
    if len(distinct) > 1:
        detail = ", ".join(f"leaf #{i}: {s}" for i, s in sizes.items())
        raise ValueError(
            f"vmap got inconsistent sizes for the mapped axis ({detail}){errors.where()}"
        )
    return distinct.pop()


def _place_axis(x: Any, current: int | None, wanted: int | None, size: int, fun) -> Any:
    if wanted is None:
        if current is not None:
            raise ValueError(
                f"vmap out_axes=None for an output of {_name(fun)} that varies over the mapped "
                f"axis{errors.where()}"
            )
        return x
    aval = get_aval(x)
    if current is None:
        out_ndim = aval.ndim + 1
        wanted %= out_ndim
        dims = tuple(i for i in range(out_ndim) if i != wanted)
        return broadcast_in_dim(x, aval.shape[:wanted] + (size,) + aval.shape[wanted:], dims)
    return move_axis(x, current, wanted % aval.ndim)


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)
