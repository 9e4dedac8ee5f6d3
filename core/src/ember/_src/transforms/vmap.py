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
from ember._src.primitives.sharding_constraint import with_sharding_constraint
from ember._src.runtime.mesh import current_mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.transforms.arguments import flatten_axes, leaf_aval
from ember._src.tree.util import flatten_fun, tree_flatten, tree_unflatten


def vmap(
    fun: Callable[..., Any],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
) -> Callable[..., Any]:
    """Vectorise ``fun`` over the axes ``in_axes`` of its arguments. With
    ``spmd_axis_name`` (mesh axis names), the mapped dimension is split over those axes of
    the mesh in scope, in the arguments and the results (under Explicit axes the sharding
    rules carry it through every intermediate)."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @functools.wraps(fun)
    def batched_fun(*args: Any, **kwargs: Any) -> Any:
        leaves, tree = tree_flatten((args, kwargs))
        dims = flatten_axes("vmap in_axes", tree, (in_axes, 0), (args, kwargs))
        size = _axis_size(leaves, dims, axis_size, fun)
        if spmd_axis_name is not None:
            leaves = [_split_mapped(x, d, spmd_axis_name) for x, d in zip(leaves, dims)]
        flat_fun = flatten_fun(_call_with_kwargs(fun), tree, keep_output=True)
        outs, out_dims = batching.batch_flat(flat_fun, leaves, dims, size, axis_name)
        out_value, out_tree = flat_fun.output, flat_fun.out_tree
        wanted = flatten_axes("vmap out_axes", out_tree, out_axes, out_value)
        results = [_place_axis(x, d, w, size, fun) for x, d, w in zip(outs, out_dims, wanted)]
        if spmd_axis_name is not None:
            results = [_split_mapped(x, w, spmd_axis_name) for x, w in zip(results, wanted)]
        return tree_unflatten(out_tree, results)

    return batched_fun


def _split_mapped(x: Any, dim: int | None, names: Any) -> Any:
    """``x`` with its mapped dimension ``dim`` split over mesh axes ``names`` (its other
    dimensions as its type says)."""
    if dim is None:
        return x
    mesh = current_mesh()
    if mesh is None:
        raise ValueError(
            f"vmap(spmd_axis_name={names!r}) needs a mesh in scope: ember.set_mesh(mesh) or "
            f"`with ember.sharding.use_mesh(mesh):`{errors.where()}"
        )
    aval = get_aval(x)
    typed = aval.typed_sharding
    entries = list(typed.spec) if typed is not None else []
    entries += [None] * (aval.ndim - len(entries))
    entries[dim % aval.ndim] = names
    return with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec(*entries)))


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
