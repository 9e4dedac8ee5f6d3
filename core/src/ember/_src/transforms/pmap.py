"""``pmap``: map a function over devices, one slice of the mapped axis per device.

Kept for programs written that way; it is ``shard_map`` over a one-axis mesh of the first
``n`` devices (``n`` being the mapped axis's size), with the mapped axis split over it, under
``jit``. Collectives inside name ``axis_name``.

Under ``debug_nans``/``debug_infs`` the outputs of a top-level call are checked; when one holds
a value checked for, the function runs again op by op as ``vmap`` over the mapped axis (the
same program, one device, collectives by the same axis name), so that the eager check names
the first primitive that produced it and the user's line, and the error notes which devices'
outputs held it. The checked call never donates its arguments: the re-run needs them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.execution import float_checks
from ember._src.execution.devices import devices as all_devices
from ember._src.primitives.shape import expand_dims, move_axis, squeeze
from ember._src.runtime.mesh import Mesh
from ember._src.runtime.sharding import PartitionSpec
from ember._src.transforms.arguments import flatten_axes, leaf_aval
from ember._src.transforms.jit import disable_jit, jit
from ember._src.transforms.shard_map import shard_map
from ember._src.transforms.vmap import vmap
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
            per_device,
            mesh=mesh,
            in_specs=tuple(specs),
            out_specs=PartitionSpec(name),
            check_vma=False,  # as JAX: pmap keeps its untyped transposition
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
    undonated = jit(mapped, static_argnums=statics) if donate else compiled

    def op_by_op(*args: Any) -> Any:
        """``fun`` on ``args`` as ``vmap`` over the mapped axis, run eagerly."""
        static_args = {i: args[i] for i in statics if i < len(args)}
        dynamic = [a for i, a in enumerate(args) if i not in static_args]
        axes = in_axes
        if isinstance(in_axes, tuple) and static_args:
            axes = tuple(a for i, a in enumerate(in_axes) if i not in static_args)

        def with_statics(*dynamic_args: Any) -> Any:
            rebuilt = list(dynamic_args)
            for i in sorted(static_args):
                rebuilt.insert(i, static_args[i])
            return fun(*rebuilt)

        batched = vmap(with_statics, axes, out_axes, name)
        with disable_jit():
            return batched(*dynamic)

    def call(*args: Any) -> Any:
        if float_checks.armed and float_checks.active() and core.eval_trace_is_current():
            return _call_checked(undonated, op_by_op, args, out_axes, _name(fun))
        return compiled(*args)

    return functools.wraps(fun)(call)


def _call_checked(compiled, op_by_op, args: tuple, out_axes: Any, name: str) -> Any:
    """A top-level call under debug_nans/debug_infs: run the program, check its outputs and,
    when one holds a value checked for, run the function again op by op (``op_by_op``) so that
    the eager check raises at the first primitive producing it, noting the devices whose
    outputs held it."""
    with float_checks.unchecked():
        out = compiled(*args)
    leaves, out_tree = tree_flatten(out)
    found = float_checks.first_invalid(leaves)
    if found is None:
        return out
    wanted = flatten_axes("pmap out_axes", out_tree, out_axes, out)
    devices = _devices_holding(leaves, wanted, found)
    held = f"the outputs of device(s) {devices} (by index along the mapped axis)"
    try:
        op_by_op(*args)
    except FloatingPointError as e:
        e.add_note(f"pmap({name}): {held} held it")
        raise
    raise FloatingPointError(
        f"invalid value ({found}) encountered in pmap({name}), in {held}{errors.where()}; "
        f"run op by op (as vmap) the function produced none: the compiled "
        f"program's optimisations, or a NaN/inf constant among its outputs, made it"
    )


def _devices_holding(leaves: list[Any], axes: list[Any], found: str) -> list[int]:
    """The indices along the mapped axis of the devices whose outputs hold ``found``."""
    test = np.isnan if found == "nan" else np.isinf
    devices: set[int] = set()
    for leaf, axis in zip(leaves, axes):
        if not dtypes.is_inexact(get_aval(leaf).dtype):
            continue
        host = np.asarray(leaf)
        per_device = np.moveaxis(test(host), axis, 0).reshape(host.shape[axis], -1)
        devices.update(int(i) for i in np.flatnonzero(per_device.any(axis=1)))
    return sorted(devices)


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
