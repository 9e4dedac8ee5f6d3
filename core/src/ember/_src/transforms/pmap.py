"""``pmap``: map a function over devices, one slice of the mapped axis per device.

Kept for programs written that way; it is ``shard_map`` over a one-axis mesh of the first
``n`` devices (``n`` being the mapped axis's size), with the mapped axis split over it, under
``jit``. Collectives inside name ``axis_name``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.execution.devices import devices as all_devices
from ember._src.primitives.shape import expand_dims, move_axis, squeeze
from ember._src.runtime.mesh import Mesh
from ember._src.runtime.sharding import PartitionSpec
from ember._src.transforms.arguments import flatten_axes, leaf_aval
from ember._src.transforms.jit import jit
from ember._src.transforms.shard_map import shard_map
from ember._src.tree.util import flatten_fun, tree_flatten, tree_unflatten

_ANONYMOUS = "_pmap_axis"


def pmap(
    fun: Callable[..., Any],
    axis_name: Any = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | Sequence[int] = (),
    devices: Sequence[Any] | None = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | Sequence[int] = (),
) -> Callable[..., Any]:
    """Run ``fun`` on each device with that device's slice of the ``in_axes`` axes."""
    name = _ANONYMOUS if axis_name is None else axis_name
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    statics = (
        (static_broadcasted_argnums,)
        if isinstance(static_broadcasted_argnums, int)
        else tuple(static_broadcasted_argnums)
    )

    def mapped(*args: Any) -> Any:
        static_args = {i: args[i] for i in statics if i < len(args)}
        dynamic = tuple(a for i, a in enumerate(args) if i not in static_args)
        leaves, tree = tree_flatten(dynamic)
        axes_spec = in_axes
        if isinstance(in_axes, tuple) and static_args:
            axes_spec = tuple(a for i, a in enumerate(in_axes) if i not in static_args)
        dims = flatten_axes("pmap in_axes", tree, axes_spec, dynamic)
        size = _mapped_size(leaves, dims, axis_size, fun)
        pool = list(devices) if devices is not None else all_devices(backend)
        if size > len(pool):
            raise ValueError(
                f"pmap of {_name(fun)}: the mapped axis has size {size} but only {len(pool)} "
                f"devices are available{errors.where()}"
            )
        mesh = Mesh(np.array(pool[:size], dtype=object), (name,))
        fronts = [x if d is None else move_axis(x, d, 0) for x, d in zip(leaves, dims)]

        def call(*dynamic_args: Any) -> Any:
            rebuilt = list(dynamic_args)
            for i in sorted(static_args):
                rebuilt.insert(i, static_args[i])
            return fun(*rebuilt)

        flat_fun = flatten_fun(call, tree, keep_output=True)

        def per_device(*blocks: Any) -> list[Any]:
            xs = [b if d is None else squeeze(b, (0,)) for b, d in zip(blocks, dims)]
            return [expand_dims(o, (0,)) for o in flat_fun(*xs)]

        specs = [PartitionSpec() if d is None else PartitionSpec(name) for d in dims]
        outs = shard_map(
            per_device, mesh=mesh, in_specs=tuple(specs), out_specs=PartitionSpec(name)
        )(*fronts)
        out_value, out_tree = flat_fun.output, flat_fun.out_tree
        wanted = flatten_axes("pmap out_axes", out_tree, out_axes, out_value)
        results = []
        for o, w in zip(outs, wanted):
            if w is None:
                raise NotImplementedError(f"pmap out_axes=None{errors.where()}")
            results.append(move_axis(o, 0, w) if w else o)
        return tree_unflatten(out_tree, results)

    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    compiled = jit(mapped, static_argnums=statics, donate_argnums=donate)
    return functools.wraps(fun)(lambda *args: compiled(*args))


def _mapped_size(leaves: list[Any], dims: list[Any], axis_size: int | None, fun) -> int:
    sizes = set()
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is not None:
            sizes.add(leaf_aval(x, f"pmapped argument leaf #{i}").shape[d])
    if axis_size is not None:
        sizes.add(axis_size)
    if len(sizes) != 1:
        raise ValueError(
            f"pmap of {_name(fun)}: the mapped axes have sizes {sorted(sizes)}; they must all "
            f"be equal (and at least one argument mapped){errors.where()}"
        )
    return sizes.pop()


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)
