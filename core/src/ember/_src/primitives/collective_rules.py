"""What every collective shares (collectives.py defines them): axis names and sizes, the
jvp of the linear ones, batching of the reductions, the reference rule that reports an unbound
axis, and the lowering inside a shard_map to StableHLO collectives over the mesh's device
groups (or to a plugin's own implementation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import Primitive, ShapedArray, Zero, axis_size, get_aval
from ember._src.interpreters.batching import not_mapped

# --------------------------------------------------------------------------------------------
# Shared by every collective: axis names, and the rules they have in common


def axis_names_of(axis_name: Any) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in names:
        axis_size(name)  # raises UnboundAxisError at the user's line
    return names


def total_size(names: tuple) -> int:
    return int(np.prod([axis_size(n) for n in names], dtype=np.int64))


def no_index_groups(what: str, axis_index_groups: Any) -> None:
    """Collectives here always span the whole named axis (JAX's shard_map also refuses
    groups)."""
    if axis_index_groups is not None:
        raise NotImplementedError(
            f"{what}: axis_index_groups={axis_index_groups!r} is not supported; only None"
            f"{errors.where()}"
        )


def scalar_like(value: int, like: Any) -> Any:
    dtype = like.dtype if hasattr(like, "dtype") else np.result_type(like)
    return np.asarray(value, dtype)


def axis_size_of(axis_name: Any) -> int:
    """The size of the named axis (``lax.axis_size``)."""
    return total_size(axis_names_of(axis_name))


def same_type(x: ShapedArray, **params: Any) -> ShapedArray:
    return x


def made_invariant(x: ShapedArray, *, axes: tuple) -> ShapedArray:
    """psum, pmax and pmin: the result is the same along the axes reduced over."""
    return x.update(vma=x.vma - frozenset(axes)) if x.vma else x


def vma_of(x: Any) -> frozenset:
    return get_aval(x).vma


def linear_jvp(primitive: Primitive):
    """The collectives linear in their operand differentiate as themselves."""

    def jvp(primals, tangents, **params):
        (t,) = tangents
        out = primitive.bind(*primals, **params)
        return out, t if type(t) is Zero else primitive.bind(t, **params)

    return jvp


def split_axes(axes: tuple, name: Any) -> tuple[bool, tuple]:
    return name in axes, tuple(a for a in axes if a != name)


def reduction_batch(primitive: Primitive, reduce, unbatched):
    """Batching of psum/pmax/pmin: over this vmap's axis they reduce the batch axis (an
    unbatched operand: ``unbatched(x, size)``); the other axes are reduced again."""

    def batch(axis_name, size, vals, dims, *, axes):
        (x,), (d,) = vals, dims
        mine, rest = split_axes(axes, axis_name)
        if not mine:
            return primitive.bind(x, axes=axes), d
        out = unbatched(x, size) if d is not_mapped else reduce(x, (d,))
        if rest:
            out = primitive.bind(out, axes=rest)
        return out, not_mapped

    return batch


def unbound(primitive: Primitive):
    """The reference rule of every collective: one left over after batching is unbound."""

    def rule(*args, axes, **params):
        raise errors.UnboundAxisError(
            f"{primitive.name} over axis {axes} is being run outside any vmap or shard_map "
            "binding it"
        )

    return rule


# --------------------------------------------------------------------------------------------
# Lowering inside a shard_map: StableHLO collectives over the mesh's device groups


def device_groups(mesh: Any, axes: tuple) -> np.ndarray:
    """(groups, members): positions of devices that differ only along ``axes``, members
    ordered by their coordinates on ``axes`` (the first axis major)."""
    names = list(mesh.axis_names)
    positions = np.arange(mesh.size).reshape(mesh.axis_sizes)
    others = [i for i, n in enumerate(names) if n not in axes]
    order = others + [names.index(a) for a in axes]
    members = int(np.prod([mesh.axis_size(a) for a in axes], dtype=np.int64))
    return np.transpose(positions, order).reshape(-1, members)


def dense_i64(array: np.ndarray) -> str:
    rows = ", ".join("[" + ", ".join(str(int(v)) for v in row) + "]" for row in array)
    shape = "x".join(str(n) for n in array.shape)
    return f"dense<[{rows}]> : tensor<{shape}xi64>"


def collective_attrs(ctx, axes: tuple, groups: bool = True) -> dict[str, str]:
    mesh = ctx.module.mesh
    if mesh is None:
        raise errors.UnboundAxisError(
            f"collective over {axes} outside any vmap or shard_map binding it"
        )
    attrs = {
        "channel_handle": f"#stablehlo.channel_handle<handle = {ctx.module.next_channel()}, "
        f"type = 1>"
    }
    if groups:
        attrs["replica_groups"] = dense_i64(device_groups(mesh, axes))
        attrs["use_global_device_ids"] = "unit"
    return attrs


def combiner(ctx, dtype, op: str) -> str:
    scalar = ShapedArray((), dtype)
    return ctx.region([scalar, scalar], lambda c, a, b: [c.op(op, [a, b], scalar)])


def implemented_by_plugin(collective: str, **extra: Any):
    """Wrap the StableHLO lowering of ``collective``: a platform whose plugin declared its own
    implementation (``ember_register_collectives``) gets that implementation's ``lower``
    instead, called with the device groups the collective runs over."""

    def wrap(standard):
        def lower(ctx, *operands, **params):
            implementation = ctx.module.collective_implementation(collective)
            if implementation == "xla":
                return standard(ctx, *operands, **params)
            groups = device_groups(ctx.module.mesh, params["axes"])
            return implementation.lower(
                ctx, *operands, collective=collective, device_groups=groups, **extra, **params
            )

        return lower

    return wrap


def all_reduce_lowering(op: str):
    def lower(ctx, x, *, axes):
        aval = ctx.avals_out[0]
        region = combiner(ctx, aval.dtype, op)
        return ctx.op(
            "stablehlo.all_reduce", [x], aval, collective_attrs(ctx, axes), regions=[region]
        )

    return lower
