"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter, axis_index,
ppermute and all_to_all, each with its rules beside it.

A collective names one or more axes (``axis_name="i"`` or ``("i", "j")``) bound by an
enclosing ``vmap(axis_name=...)`` (and, with sharding, ``shard_map``). Under ``vmap`` each
collective is batched by its own rule: the part of it that names the vmap's axis becomes an
ordinary reduction or reshuffle of the batch axis, and the rest is bound again for the
enclosing axes. Binding a collective with no enclosing binder of its axis is an
``UnboundAxisError`` at the user's line.

Inside a shard_map body traced with ``check_vma=True``, values are typed by the mesh axes they
vary over (``ShapedArray.vma``). ``pvary`` (``pcast(..., to='varying')``) makes a value typed
as the same on every device varying; the collectives first pvary an operand over the axes
they name that it does not vary over (psum of an invariant value sums its copies), psum,
pmax and pmin make their result invariant along their axes, and the others keep it varying.
Transposition follows the types: pvary transposes to psum and psum of a varying value to
pvary, so ``grad`` inside the body differentiates what each device computes exactly.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, axis_size, get_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives.arithmetic import div, mul
from ember._src.primitives.collective_rules import (
    all_reduce_lowering,
    axis_names_of,
    collective_attrs,
    combiner,
    dense_i64,
    device_groups,
    implemented_by_plugin,
    linear_jvp,
    made_invariant,
    no_index_groups,
    reduction_batch,
    same_type,
    scalar_like,
    split_axes,
    total_size,
    unbound,
    vma_of,
)
from ember._src.primitives.indexing import dynamic_slice_op
from ember._src.primitives.reduce import reduce_max, reduce_min
from ember._src.primitives.shape import (
    bdim_to_front,
    expand_dims,
    iota_along,
    move_axis,
    reduce_sum,
    reshape,
    squeeze,
)
from ember._src.primitives.slicing import concatenate, slice_op
from ember._src.tree.util import tree_map

# --------------------------------------------------------------------------------------------
# Typing an operand as varying over a collective's axes


def _varying_over(leaf: Any, names: tuple) -> Any:
    """``leaf`` pvaried over the manual axes among ``names`` it is typed as the same along
    (a collective over an axis acts on values that may differ along it, as in JAX)."""
    checked = core.vma_axes()
    if not checked:
        return leaf
    missing = [n for n in names if n in checked and n not in vma_of(leaf)]
    return pvary_p.bind(leaf, axes=core.ordered_axes(missing)) if missing else leaf


# --------------------------------------------------------------------------------------------
# pvary and pcast: a value the same on every device along axes, typed as varying along them


def _pvary_abstract_eval(x, *, axes):
    return x.update(vma=x.vma | frozenset(axes))


def _pvary_transpose(ct, x, *, axes):
    # Every device's cotangent flows back to the one value they all started from: summed.
    return [ct if type(ct) is Zero else psum_p.bind(ct, axes=axes)]


def _pvary_batch(axis_name, size, vals, dims, *, axes):
    (x,), (d,) = vals, dims
    _, rest = split_axes(axes, axis_name)  # over this vmap's axis, a cast that does nothing
    return (pvary_p.bind(x, axes=rest) if rest else x), d


def _identity_lowering(ctx, x, *, axes):
    return x


def _identity(x, *, axes):
    return x


pvary_p = rules.define_primitive(
    "pvary",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=_pvary_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_pvary_transpose,
    lowering=_identity_lowering,
    reference=_identity,
    collective_batch=_pvary_batch,
    own_vma=True,
)
core.set_pvary(lambda x, axes: pvary_p.bind(x, axes=axes))

_PCAST_TO = ("varying", "reduced", "unreduced")


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Cast ``x`` to vary over the named manual axes (``to='varying'``): a value typed as
    the same on every device along them becomes typed as differing. It computes nothing; its
    transpose sums over the axes. Outside a body that checks types (``check_vma=False``) it
    returns ``x``."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
    if not axis_name:
        return x
    names = axis_names_of(axis_name)
    if to not in _PCAST_TO:
        raise ValueError(
            f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TO)}{errors.where()}"
        )
    if to != "varying":
        raise NotImplementedError(
            f"pcast: to={to!r} is not supported (ember has no reduced or unreduced types); "
            f"only to='varying'{errors.where()}"
        )
    if not core.vma_axes():
        return x

    def cast(leaf: Any) -> Any:
        aval = get_aval(leaf)
        varying = [n for n in names if n in aval.vma]
        if len(varying) == len(names):
            raise ValueError(f"Unsupported pcast from=varying, to={to!r}{errors.where()}")
        if varying:
            raise ValueError(
                f"pcast: {aval} varies over {varying} but not over the other axes of "
                f"{names}; name only axes it is the same along{errors.where()}"
            )
        return pvary_p.bind(leaf, axes=core.ordered_axes(names))

    return tree_map(cast, x)


def vary_like(x: Any, like: Any) -> Any:
    """``x`` pvaried over the manual axes ``like`` varies over and it does not: a value made
    in the image of ``like`` (``full_like``, ``zeros_like``) is typed as varying as it is,
    as in JAX."""
    if not core.vma_axes():
        return x
    missing = vma_of(like) - vma_of(x)
    return pvary_p.bind(x, axes=core.ordered_axes(missing)) if missing else x


def pvary(x: Any, axis_name: Any) -> Any:
    """``pcast(x, axis_name, to='varying')`` (JAX's older name)."""
    return pcast(x, axis_name, to="varying")


# --------------------------------------------------------------------------------------------
# psum and pmean


def _psum_transpose(ct, x, *, axes):
    if type(ct) is Zero:
        return [ct]
    # Typed: psum of a varying value is psum then a copy to every device, so its transpose
    # is a cast to varying. Untyped (check_vma=False), psum's transpose stays psum.
    varying = tuple(a for a in axes if a in x.aval.vma)
    rest = tuple(a for a in axes if a not in x.aval.vma)
    if varying:
        ct = pvary_p.bind(ct, axes=varying)
    return [psum_p.bind(ct, axes=rest) if rest else ct]


def _sum_unbatched(x: Any, size: int) -> Any:
    return mul(x, scalar_like(size, x))


psum_p = rules.define_primitive(
    "psum",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=made_invariant,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_psum_transpose,
    lowering=implemented_by_plugin("all_reduce", reduction="sum")(
        all_reduce_lowering("stablehlo.add")
    ),
    reference=rules.per_primitive(unbound),
    collective_batch=rules.per_primitive(
        functools.partial(reduction_batch, reduce=reduce_sum, unbatched=_sum_unbatched)
    ),
)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of ``x`` over the named axis (or axes); every member gets the total."""
    no_index_groups("psum", axis_index_groups)
    names = axis_names_of(axis_name)
    return tree_map(lambda leaf: psum_p.bind(_varying_over(leaf, names), axes=names), x)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    no_index_groups("pmean", axis_index_groups)
    names = axis_names_of(axis_name)
    size = total_size(names)
    return tree_map(
        lambda leaf: div(
            psum_p.bind(_varying_over(leaf, names), axes=names), scalar_like(size, leaf)
        ),
        x,
    )


# --------------------------------------------------------------------------------------------
# pmax and pmin


def _extreme_unbatched(x: Any, size: int) -> Any:
    return x


pmax_p = rules.define_primitive(
    "pmax",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=made_invariant,
    lowering=implemented_by_plugin("all_reduce", reduction="max")(
        all_reduce_lowering("stablehlo.maximum")
    ),
    reference=rules.per_primitive(unbound),
    collective_batch=rules.per_primitive(
        functools.partial(reduction_batch, reduce=reduce_max, unbatched=_extreme_unbatched)
    ),
)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    no_index_groups("pmax", axis_index_groups)
    names = axis_names_of(axis_name)
    return tree_map(lambda leaf: pmax_p.bind(_varying_over(leaf, names), axes=names), x)


pmin_p = rules.define_primitive(
    "pmin",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=made_invariant,
    lowering=implemented_by_plugin("all_reduce", reduction="min")(
        all_reduce_lowering("stablehlo.minimum")
    ),
    reference=rules.per_primitive(unbound),
    collective_batch=rules.per_primitive(
        functools.partial(reduction_batch, reduce=reduce_min, unbatched=_extreme_unbatched)
    ),
)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    no_index_groups("pmin", axis_index_groups)
    names = axis_names_of(axis_name)
    return tree_map(lambda leaf: pmin_p.bind(_varying_over(leaf, names), axes=names), x)


# --------------------------------------------------------------------------------------------
# all_gather


def _all_gather_abstract_eval(x, *, axes, axis, tiled, size):
    shape = list(x.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return x.update(shape=tuple(shape))


def _all_gather_transpose(ct, x, *, axes, axis, tiled, size):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [psum_scatter_p.bind(ct, axes=axes, dimension=axis, tiled=tiled, size=size)]


def _all_gather_batch(primitive: Primitive):
    return functools.partial(_gather_batch, primitive)


def _gather_batch(primitive, axis_name, vmap_size, vals, dims, *, axes, axis, tiled, size):
    (x,), (d,) = vals, dims
    if axis_name not in axes:  # gather along the shifted axis, the batch axis in front
        if d is not_mapped:
            return primitive.bind(x, axes=axes, axis=axis, tiled=tiled, size=size), d
        x = move_axis(x, d, 0)
        return primitive.bind(x, axes=axes, axis=axis + 1, tiled=tiled, size=size), 0
    x = bdim_to_front(x, d, vmap_size)  # (members, *shape): every member sees all of them
    gathered = move_axis(x, 0, axis)
    if tiled:  # merge the members' axis into the one after it
        shape = list(get_aval(gathered).shape)
        merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2 :]
        gathered = reshape(gathered, tuple(merged))
    return gathered, not_mapped


def _all_gather_lowering(ctx, x, *, axes, axis, tiled, size):
    aval = ctx.avals_in[0]
    if not tiled:
        shape = list(aval.shape)
        shape.insert(axis, 1)
        aval = aval.update(shape=tuple(shape))
        x = ctx.op("stablehlo.reshape", [x], aval)
    attrs = {"all_gather_dim": f"{axis} : i64", **collective_attrs(ctx, axes)}
    return ctx.op("stablehlo.all_gather", [x], ctx.avals_out[0], attrs)


all_gather_p = rules.define_primitive(
    "all_gather",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=_all_gather_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_all_gather_transpose,
    lowering=implemented_by_plugin("all_gather")(_all_gather_lowering),
    reference=rules.per_primitive(unbound),
    collective_batch=rules.per_primitive(_all_gather_batch),
)


def _all_gather_invariant_abstract_eval(x, *, axes, axis, tiled, size):
    gathered = _all_gather_abstract_eval(x, axes=axes, axis=axis, tiled=tiled, size=size)
    return made_invariant(gathered, axes=axes)


def _all_gather_invariant_transpose(ct, x, *, axes, axis, tiled, size):
    """Every device holds the whole: the cotangent of a device's piece is its own slice."""
    if type(ct) is Zero:
        return [Zero(x.aval)]
    shape = list(get_aval(ct).shape)
    part = shape[axis] // size if tiled else 1
    start = mul(axis_index_p.bind(axes=axes), np.asarray(part, np.int32))
    starts = [start if d == axis else np.int32(0) for d in range(len(shape))]
    sizes = [part if d == axis else n for d, n in enumerate(shape)]
    piece = dynamic_slice_op(ct, starts, sizes)
    return [piece if tiled else squeeze(piece, (axis,))]


all_gather_invariant_p = rules.define_primitive(
    "all_gather_invariant",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=_all_gather_invariant_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_all_gather_invariant_transpose,
    lowering=implemented_by_plugin("all_gather")(_all_gather_lowering),
    reference=rules.per_primitive(unbound),
    collective_batch=rules.per_primitive(_all_gather_batch),
)
_GATHER_TO = {"varying": all_gather_p, "invarying": all_gather_invariant_p}


def all_gather(
    x: Any,
    axis_name: Any,
    *,
    axis_index_groups: Any = None,
    axis: int = 0,
    tiled: bool = False,
    to: str = "varying",
) -> Any:
    """Every member's ``x``, stacked along a new axis ``axis`` (concatenated if ``tiled``).
    Typed inside shard_map, the result varies over the axes (``to='varying'``), or is the
    same on every member of them (``to='invarying'``: its transpose slices instead of
    summing)."""
    no_index_groups("all_gather", axis_index_groups)
    if to == "reduced":
        raise NotImplementedError(
            f"all_gather: to={to!r} is not supported (ember has no reduced types); "
            f"to='varying' or 'invarying'{errors.where()}"
        )
    if to not in _GATHER_TO:
        raise ValueError(
            f"Got unexpected `to` value for `all_gather`. Allowed `to` values are: "
            f"{{'varying', 'reduced', 'invarying'}}{errors.where()}"
        )
    names = axis_names_of(axis_name)
    if len(names) > 1:
        # Over several axes the members are ordered major axis first: gather the minor axis,
        # then the rest around it (tiled, so the pieces stay in that order), then stack.
        if not tiled:  # stacked: a new axis of size one, then gathered as tiles
            x = tree_map(lambda leaf: expand_dims(leaf, (axis % (get_aval(leaf).ndim + 1),)), x)
        gathered = all_gather(x, names[-1], axis=axis, tiled=True, to=to)
        return all_gather(gathered, names[:-1], axis=axis, tiled=True, to=to)
    size = axis_size(names[0])
    primitive = _GATHER_TO[to]

    def one(leaf: Any) -> Any:
        ndim = np.ndim(leaf) if not hasattr(leaf, "aval") else leaf.aval.ndim
        where = axis % (ndim + (0 if tiled else 1))
        leaf = _varying_over(leaf, names)
        return primitive.bind(leaf, axes=names, axis=where, tiled=bool(tiled), size=size)

    return tree_map(one, x)


# --------------------------------------------------------------------------------------------
# psum_scatter


def _psum_scatter_abstract_eval(x, *, axes, dimension, tiled, size):
    shape = list(x.shape)
    if tiled:
        if shape[dimension] % size:
            raise errors.EmberTypeError(
                f"psum_scatter: dimension {dimension} of {x.str_short()} is not divisible by the "
                f"axis size {size}{errors.where()}"
            )
        shape[dimension] //= size
    else:
        if shape[dimension] != size:
            raise errors.EmberTypeError(
                f"psum_scatter: dimension {dimension} of {x.str_short()} must equal the axis "
                f"size {size} (or pass tiled=True){errors.where()}"
            )
        del shape[dimension]
    return x.update(shape=tuple(shape))


def _psum_scatter_transpose(ct, x, *, axes, dimension, tiled, size):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [all_gather_p.bind(ct, axes=axes, axis=dimension, tiled=tiled, size=size)]


def _psum_scatter_batch(axis_name, vmap_size, vals, dims, *, axes, dimension, tiled, size):
    (x,), (d,) = vals, dims
    if axis_name not in axes:
        if d is not_mapped:
            out = psum_scatter_p.bind(x, axes=axes, dimension=dimension, tiled=tiled, size=size)
            return out, d
        x = move_axis(x, d, 0)
        out = psum_scatter_p.bind(x, axes=axes, dimension=dimension + 1, tiled=tiled, size=size)
        return out, 0
    total = reduce_sum(x, (d,)) if d is not not_mapped else mul(x, scalar_like(vmap_size, x))
    if tiled:  # split `dimension` into (members, part) and hand part k to member k
        shape = list(get_aval(total).shape)
        parts = [vmap_size, shape[dimension] // vmap_size]
        total = reshape(total, tuple(shape[:dimension] + parts + shape[dimension + 1 :]))
    return total, dimension


def _psum_scatter_lowering(ctx, x, *, axes, dimension, tiled, size):
    aval = ctx.avals_in[0]
    shape = list(aval.shape)
    shape[dimension] //= size
    scattered = aval.update(shape=tuple(shape))
    attrs = {"scatter_dimension": f"{dimension} : i64", **collective_attrs(ctx, axes)}
    region = combiner(ctx, aval.dtype, "stablehlo.add")
    out = ctx.op("stablehlo.reduce_scatter", [x], scattered, attrs, regions=[region])
    if not tiled:
        out = ctx.op("stablehlo.reshape", [out], ctx.avals_out[0])
    return out


psum_scatter_p = rules.define_primitive(
    "psum_scatter",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=_psum_scatter_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_psum_scatter_transpose,
    lowering=implemented_by_plugin("reduce_scatter")(_psum_scatter_lowering),
    reference=rules.per_primitive(unbound),
    collective_batch=_psum_scatter_batch,
)


def psum_scatter(
    x: Any,
    axis_name: Any,
    *,
    scatter_dimension: int = 0,
    axis_index_groups: Any = None,
    tiled: bool = False,
) -> Any:
    """``psum`` whose result is split along ``scatter_dimension``: member k keeps part k."""
    no_index_groups("psum_scatter", axis_index_groups)
    names = axis_names_of(axis_name)
    if len(names) > 1:
        # Member (i, j) keeps part i * size_j + j: scatter over the major axes, then the rest.
        # Untiled, the dimension holds one part per member: scattered as tiles of size one.
        major = psum_scatter(x, names[:-1], scatter_dimension=scatter_dimension, tiled=True)
        out = psum_scatter(major, names[-1], scatter_dimension=scatter_dimension, tiled=True)
        if tiled:
            return out
        return tree_map(lambda leaf: squeeze(leaf, (scatter_dimension % get_aval(leaf).ndim,)), out)
    size = axis_size(names[0])
    return tree_map(
        lambda leaf: psum_scatter_p.bind(
            _varying_over(leaf, names),
            axes=names,
            dimension=scatter_dimension,
            tiled=bool(tiled),
            size=size,
        ),
        x,
    )


# --------------------------------------------------------------------------------------------
# axis_index


def _axis_index_abstract_eval(*, axes):
    # Each device's own position: varying along the axis, where types track that.
    return ShapedArray((), dtypes.int32, vma=frozenset(axes) & core.vma_axes())


def _axis_index_batch(axis_name, size, vals, dims, *, axes):
    if axis_name not in axes:
        return axis_index_p.bind(axes=axes), not_mapped
    return iota_along(dtypes.int32, (size,), 0), 0


def _axis_index_lowering(ctx, *, axes):
    (name,) = axes
    mesh = ctx.module.mesh
    if mesh is None:
        raise errors.UnboundAxisError(f"axis_index({name!r}) outside any shard_map binding it")
    out = ctx.avals_out[0]
    automatic = ctx.module.automatic_axes
    if not automatic:
        return _position_along(ctx, mesh, name, out)
    # In a partial-manual body the partitioner refuses partition_id (it cannot tell what a
    # device's id means along the automatic axes): read it in a region manual over those
    # axes too, whose scalar result is the same on all of them (as JAX does).
    module = ctx.module
    manual = ", ".join(f'"{a}"' for a in automatic)
    attrs = {
        "in_shardings": "#sdy.sharding_per_value<[]>",
        "out_shardings": "#sdy.sharding_per_value<[<@mesh, []>]>",
        "manual_axes": f"#sdy<manual_axes{{{manual}}}>",
    }
    module.automatic_axes = ()
    try:
        region = ctx.region(
            [], lambda c: [_position_along(c, mesh, name, out)], terminator="sdy.return"
        )
    finally:
        module.automatic_axes = automatic
    return ctx.op("sdy.manual_computation", [], [out], attrs, [region])[0]


def _position_along(ctx, mesh: Any, name: str, out: ShapedArray) -> str:
    """This device's coordinate along mesh axis ``name``, from its partition id."""
    names = list(mesh.axis_names)
    stride = int(np.prod(mesh.axis_sizes[names.index(name) + 1 :], dtype=np.int64))
    u32 = ShapedArray((), np.dtype(np.uint32))
    pid = ctx.op("stablehlo.partition_id", [], u32)
    index = ctx.convert(pid, out)
    if stride > 1:
        index = ctx.op("stablehlo.divide", [index, ctx.constant(stride, out)], out)
    return ctx.op("stablehlo.remainder", [index, ctx.constant(mesh.axis_size(name), out)], out)


axis_index_p = rules.define_primitive(
    "axis_index",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=_axis_index_abstract_eval,
    lowering=_axis_index_lowering,
    reference=rules.per_primitive(unbound),
    collective_batch=_axis_index_batch,
)


def axis_index(axis_name: Any) -> Any:
    """This member's position along the named axis, as an int32 scalar."""
    (name,) = axis_names_of(axis_name)
    return axis_index_p.bind(axes=(name,))


# --------------------------------------------------------------------------------------------
# ppermute


def _ppermute_transpose(ct, x, *, axes, perm):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [ppermute_p.bind(ct, axes=axes, perm=tuple((d, s) for s, d in perm))]


def _ppermute_batch(axis_name, size, vals, dims, *, axes, perm):
    (x,), (d,) = vals, dims
    if axis_name not in axes:
        return ppermute_p.bind(x, axes=axes, perm=perm), d
    x = bdim_to_front(x, d, size)
    # Member dst takes member src's value; members nobody sends to get zeros.
    sources = dict((dst, src) for src, dst in perm)
    parts = [
        _member(x, sources[i]) if i in sources else mul(_member(x, 0), scalar_like(0, x))
        for i in range(size)
    ]
    return concatenate([expand_dims(p, (0,)) for p in parts], 0), 0


def _member(x: Any, i: int) -> Any:
    shape = get_aval(x).shape
    start = [i] + [0] * (len(shape) - 1)
    limit = [i + 1, *shape[1:]]
    return reshape(slice_op(x, start, limit), shape[1:])


def _ppermute_lowering(ctx, x, *, axes, perm):
    mesh = ctx.module.mesh
    attrs = collective_attrs(ctx, axes, groups=False)
    pairs = [(group[src], group[dst]) for group in device_groups(mesh, axes) for src, dst in perm]
    attrs["source_target_pairs"] = dense_i64(np.array(pairs, dtype=np.int64).reshape(-1, 2))
    return ctx.op("stablehlo.collective_permute", [x], ctx.avals_out[0], attrs)


ppermute_p = rules.define_primitive(
    "ppermute",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=same_type,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_ppermute_transpose,
    lowering=implemented_by_plugin("collective_permute")(_ppermute_lowering),
    reference=rules.per_primitive(unbound),
    collective_batch=_ppermute_batch,
)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Send member ``src``'s ``x`` to member ``dst`` for each ``(src, dst)`` in ``perm``;
    members that receive nothing get zeros."""
    (name,) = axis_names_of(axis_name)
    size = axis_size(name)
    pairs = tuple((int(s), int(d)) for s, d in perm)
    for src, dst in pairs:
        if not (0 <= src < size and 0 <= dst < size):
            raise ValueError(
                f"ppermute: pair ({src}, {dst}) is outside axis {name!r} of size {size}"
                f"{errors.where()}"
            )
    if len({s for s, _ in pairs}) != len(pairs) or len({d for _, d in pairs}) != len(pairs):
        raise ValueError(f"ppermute: {pairs} sends from or to a member twice{errors.where()}")
    return tree_map(
        lambda leaf: ppermute_p.bind(_varying_over(leaf, (name,)), axes=(name,), perm=pairs), x
    )


# --------------------------------------------------------------------------------------------
# all_to_all


def _all_to_all_abstract_eval(x, *, axes, split_axis, concat_axis, tiled, size):
    shape = list(x.shape)
    if tiled:
        shape[split_axis] //= size
        shape[concat_axis] *= size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, size)
    return x.update(shape=tuple(shape))


def _all_to_all_transpose(ct, x, *, axes, split_axis, concat_axis, tiled, size):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [
        all_to_all_p.bind(
            ct, axes=axes, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled, size=size
        )
    ]


def _all_to_all_stacked(stacked: Any, split_axis: int, concat_axis: int) -> Any:
    """Non-tiled all_to_all of every member at once (members on axis 0): member j's result is
    part j of each member, so the split axis becomes the member axis and the members go to the
    concat axis."""
    out = move_axis(stacked, split_axis + 1, 0)
    return move_axis(out, 1, concat_axis + 1)


def _all_to_all_batch(axis_name, vmap_size, vals, dims, *, split_axis, concat_axis, **params):
    (x,), (d,) = vals, dims
    axes, tiled = params["axes"], params["tiled"]
    if axis_name not in axes:
        if d is not_mapped:
            return all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis, **params), d
        x = move_axis(x, d, 0)
        out = all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1, **params)
        return out, 0
    x = bdim_to_front(x, d, vmap_size)
    if not tiled:
        return _all_to_all_stacked(x, split_axis, concat_axis), 0
    # Tiled: split the split axis into (members, part), exchange, then merge the members into
    # the concat axis (member-major, as concatenation orders them).
    shape = list(get_aval(x).shape)
    s = split_axis + 1
    split_shape = shape[:s] + [vmap_size, shape[s] // vmap_size] + shape[s + 1 :]
    exchanged = _all_to_all_stacked(reshape(x, tuple(split_shape)), split_axis, concat_axis)
    shape = list(get_aval(exchanged).shape)
    c = concat_axis + 1
    merged = shape[:c] + [shape[c] * shape[c + 1]] + shape[c + 2 :]
    return reshape(exchanged, tuple(merged)), 0


def _all_to_all_lowering(ctx, x, *, axes, split_axis, concat_axis, tiled, size):
    aval = ctx.avals_in[0]
    split, concat = split_axis, concat_axis
    if not tiled:  # exchange along a new unit axis at the concat position, then drop `split`
        at = concat if concat <= split else concat + 1
        shape = list(aval.shape)
        shape.insert(at, 1)
        aval = aval.update(shape=tuple(shape))
        x = ctx.op("stablehlo.reshape", [x], aval)
        split, concat = (split + 1 if at <= split else split), at
    shape = list(aval.shape)
    shape[split] //= size
    shape[concat] *= size
    exchanged = aval.update(shape=tuple(shape))
    attrs = {
        "split_dimension": f"{split} : i64",
        "concat_dimension": f"{concat} : i64",
        "split_count": f"{size} : i64",
        **collective_attrs(ctx, axes),
    }
    del attrs["use_global_device_ids"]  # all_to_all's replica groups are device ids already
    out = ctx.op("stablehlo.all_to_all", [x], exchanged, attrs)
    if not tiled:
        out = ctx.op("stablehlo.reshape", [out], ctx.avals_out[0])
    return out


all_to_all_p = rules.define_primitive(
    "all_to_all",
    sharding=rules.NOT_SHARDABLE,
    own_vma=True,
    abstract_eval=_all_to_all_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_all_to_all_transpose,
    lowering=implemented_by_plugin("all_to_all")(_all_to_all_lowering),
    reference=rules.per_primitive(unbound),
    collective_batch=_all_to_all_batch,
)


def all_to_all(
    x: Any,
    axis_name: Any,
    split_axis: int,
    concat_axis: int,
    *,
    axis_index_groups: Any = None,
    tiled: bool = False,
) -> Any:
    """Member j gets part j of every member's ``x`` (split along ``split_axis``), stacked
    along ``concat_axis`` in member order (concatenated if ``tiled``)."""
    no_index_groups("all_to_all", axis_index_groups)
    (name,) = axis_names_of(axis_name)
    size = axis_size(name)

    def one(leaf: Any) -> Any:
        aval = get_aval(leaf)
        split = split_axis % aval.ndim
        concat = concat_axis % (aval.ndim if tiled else aval.ndim)
        have = aval.shape[split]
        if (tiled and have % size) or (not tiled and have != size):
            need = f"a multiple of {size}" if tiled else f"{size}"
            raise ValueError(
                f"all_to_all: split_axis {split} of {aval.str_short()} has size {have}; it must "
                f"be {need} (the size of axis {name!r}){errors.where()}"
            )
        return all_to_all_p.bind(
            _varying_over(leaf, (name,)),
            axes=(name,),
            split_axis=split,
            concat_axis=concat,
            tiled=bool(tiled),
            size=size,
        )

    return tree_map(one, x)
