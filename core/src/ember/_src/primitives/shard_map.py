"""The ``shard_map`` primitive: a per-device jaxpr run on every device of a mesh.

Its parameters are the per-device ``jaxpr``, the ``mesh``, ``manual_axes`` (the mesh axes the
body is mapped over, in the mesh's order: all of them, or some when partial-manual; the others
stay automatic, the body seeing arrays whole along them, laid out by the partitioner), the
``in_specs``/``out_specs`` (``PartitionSpec``s over the manual axes) that split operands into
blocks and put result blocks together, and
``check_vma``: whether the body's values are typed by the mesh axes they vary over (then the
body's own transposition, which follows those types, is exact, and the rules below add no
correction of their own; without types, a replicated output's cotangent is shared out among
its copies and an input's cotangent summed over the devices it was copied to). It
lowers to Shardy's ``sdy.manual_computation`` (the collectives inside lower to StableHLO
collectives over the mesh's device groups). Backends that interpret jaxprs (the reference)
run it as nested batching over the manual axes, which is the same computation, device by
device. Run eagerly (outside any trace), its layout rule lays the operands out by
``in_specs`` and fixes the results' layouts by ``out_specs``. The user-facing transform is
``transforms/shard_map.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import core, errors, rules
from ember._src.core import (
    NO_AXES,
    ShapedArray,
    Zero,
    checking_vma,
    extend_axis_env,
    get_aval,
    tangent_aval,
    vma_axes,
)
from ember._src.interpreters.ad import UndefinedPrimal, backward_pass, is_undefined
from ember._src.interpreters.ad_util import instantiate
from ember._src.interpreters.batching import batch_flat, not_mapped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import PartialEvalTrace, merge, partial_eval_jaxpr
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.primitives import collectives
from ember._src.primitives.jaxpr_transforms import batch_jaxpr, cached, jvp_jaxpr, trace_const_free
from ember._src.primitives.shape import (
    broadcast_in_dim,
    expand_dims,
    move_axis,
    reshape,
    squeeze,
    transpose,
)
from ember._src.primitives.slicing import slice_op
from ember._src.runtime.mesh import Mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec

# --------------------------------------------------------------------------------------------
# Shapes: global <-> per-device


def _factor(mesh: Mesh, spec: PartitionSpec, dim: int) -> int:
    return math.prod(mesh.axis_size(a) for a in spec.axes_of(dim))


def shard_aval(
    mesh: Mesh, spec: PartitionSpec, aval: ShapedArray, what: str, check_vma: bool = False
) -> ShapedArray:
    if len(spec) > aval.ndim:
        raise ValueError(
            f"{what}: spec {spec} has {len(spec)} entries for an array {aval.str_short()} of rank "
            f"{aval.ndim}{errors.where()}"
        )
    shape = []
    for d, size in enumerate(aval.shape):
        factor = _factor(mesh, spec, d)
        if size % factor:
            raise ValueError(
                f"{what}: dimension {d} of {aval.str_short()} (size {size}) is not divisible by "
                f"mesh axes {spec.axes_of(d)} of total size {factor}{errors.where()}"
            )
        shape.append(size // factor)
    # Inside, the manual axes are Manual: a per-device piece is split over none in its type,
    # and (typed) varies over the axes that split it (specs name manual axes only), and over
    # those an enclosing shard_map's body already saw it vary over.
    vma = aval.vma | mentioned(mesh, spec) if check_vma else NO_AXES
    return aval.update(shape=tuple(shape), sharding=None, vma=vma)


def global_aval(
    mesh: Mesh, spec: PartitionSpec, aval: ShapedArray, manual_axes: Sequence[str]
) -> ShapedArray:
    """The whole of a result whose per-device pieces are ``aval``, typed as ``spec`` says
    over the mesh's Explicit axes. It still varies over an enclosing shard_map's manual axes
    that the piece varied over (none outside any shard_map)."""
    shape = tuple(s * _factor(mesh, spec, d) for d, s in enumerate(aval.shape))
    typed = NamedSharding(mesh, spec).typed(aval.ndim)
    return aval.update(shape=shape, sharding=typed, vma=aval.vma - frozenset(manual_axes))


def unmentioned(manual_axes: Sequence[str], spec: PartitionSpec) -> tuple[str, ...]:
    """The manual axes ``spec`` does not split over: a block is the same along them."""
    used = frozenset(a for d in range(len(spec)) for a in spec.axes_of(d))
    return tuple(a for a in manual_axes if a not in used)


def mentioned(mesh: Mesh, spec: PartitionSpec) -> frozenset:
    """The mesh axes ``spec`` splits a dimension over."""
    return frozenset(a for d in range(len(spec)) for a in spec.axes_of(d))


class mesh_axes:  # noqa: N801 - a context manager used like a function
    """Bind the manual mesh axes (default: every one) as named axes while tracing the
    per-device function, values typed by the axes they vary over when ``check_vma``. The
    automatic axes stay unbound: a collective naming one finds no such axis."""

    def __init__(self, mesh: Mesh, check_vma: bool = False, manual_axes: Any = None):
        manual = mesh.axis_names if manual_axes is None else tuple(manual_axes)
        self.frames = [extend_axis_env(n, mesh.axis_size(n)) for n in manual]
        # Nested in a partial-manual shard_map's body, values still vary over its axes too.
        self.frames.append(checking_vma(vma_axes() | frozenset(manual) if check_vma else ()))

    def __enter__(self) -> None:
        for frame in self.frames:
            frame.__enter__()

    def __exit__(self, *exc: Any) -> None:
        for frame in reversed(self.frames):
            frame.__exit__(*exc)


# --------------------------------------------------------------------------------------------
# Rules


def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    return [global_aval(mesh, s, a, manual_axes) for s, a in zip(out_specs, jaxpr.out_avals)]


def _sdy_specs(
    specs: Sequence[PartitionSpec], avals: Sequence[ShapedArray], mesh: Mesh, partial: bool
) -> str:
    if not partial:
        parts = [
            NamedSharding(mesh, s).sdy_sharding(a.ndim)[len("#sdy.sharding") :]
            for s, a in zip(specs, avals)
        ]
    else:
        parts = [_open_sdy_sharding(s, a.ndim) for s, a in zip(specs, avals)]
    return "#sdy.sharding_per_value<[" + ", ".join(parts) + "]>"


def _open_sdy_sharding(spec: PartitionSpec, ndim: int) -> str:
    """A dimension split over manual axes, left open (``?``) to the automatic ones: when some
    mesh axes stay automatic, Shardy's partitioner may still split a dimension over them,
    after the manual axes (``{"x", ?}``), as JAX writes it."""
    dims = []
    for d in range(ndim):
        named = [f'"{a}"' for a in spec.axes_of(d)]
        dims.append("{" + ", ".join([*named, "?"]) + "}")
    return f"<@mesh, [{', '.join(dims)}]>"


def _lowering(ctx, *operands, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    ctx.module.require_mesh(mesh, "shard_map")
    axes = ", ".join(f'"{a}"' for a in manual_axes)
    partial = tuple(manual_axes) != tuple(mesh.axis_names)
    attrs = {
        "in_shardings": _sdy_specs(in_specs, ctx.avals_in, mesh, partial),
        "out_shardings": _sdy_specs(out_specs, ctx.avals_out, mesh, partial),
        "manual_axes": f"#sdy<manual_axes{{{axes}}}>",
    }

    def body(c, *block_args):
        return lower_jaxpr_inline(c, jaxpr.jaxpr, [], block_args)

    module = ctx.module
    automatic = module.automatic_axes if module.in_manual else mesh.axis_names
    outer = module.in_manual, module.automatic_axes
    module.in_manual = True
    module.automatic_axes = tuple(a for a in automatic if a not in manual_axes)
    try:
        region = ctx.region(jaxpr.in_avals, body, terminator="sdy.return")
    finally:
        module.in_manual, module.automatic_axes = outer
    return ctx.op("sdy.manual_computation", list(operands), list(ctx.avals_out), attrs, [region])


# -- running it as nested batching (the reference backend) ----------------------------------------


def _to_blocks(x: Any, mesh: Mesh, manual: Sequence[str], spec: PartitionSpec) -> Any:
    """Global ``x`` as (*sizes of the manual axes, *block): every device's block, by its
    position along the manual axes (whole along the automatic ones)."""
    aval = get_aval(x)
    shape, where = [], {}
    for d, size in enumerate(aval.shape):
        for a in spec.axes_of(d):
            where[a] = len(shape)
            shape.append(mesh.axis_size(a))
        shape.append(size // _factor(mesh, spec, d))
    y = reshape(x, tuple(shape))
    present = [a for a in manual if a in where]
    rest = [i for i in range(len(shape)) if i not in where.values()]
    y = transpose(y, [where[a] for a in present] + rest)
    block = tuple(shape[i] for i in rest)
    positions = [manual.index(a) for a in present]
    dims = positions + list(range(len(manual), len(manual) + len(block)))
    sizes = tuple(mesh.axis_size(a) for a in manual)
    return broadcast_in_dim(y, sizes + block, dims)


def _from_blocks(y: Any, manual: Sequence[str], spec: PartitionSpec, mesh: Mesh) -> Any:
    """The inverse of ``_to_blocks`` (blocks along unmentioned axes are taken from index 0)."""
    n = len(manual)
    shape = get_aval(y).shape
    same_along = unmentioned(manual, spec)
    for i in reversed(range(n)):
        if manual[i] in same_along:
            start = [0] * len(shape)
            limit = list(shape)
            limit[i] = 1
            y = squeeze(slice_op(y, start, limit), (i,))
            shape = get_aval(y).shape
    kept = [a for a in manual if a not in same_along]
    block = shape[len(kept) :]
    order, out_shape = [], []
    for d, size in enumerate(block):
        for a in spec.axes_of(d):
            order.append(kept.index(a))
        order.append(len(kept) + d)
        out_shape.append(size * _factor(mesh, spec, d))
    return reshape(transpose(y, order), tuple(out_shape))


def _as_vmaps(
    jaxpr: ClosedJaxpr, mesh: Mesh, manual: Sequence[str], in_specs, out_specs, *args: Any
) -> list[Any]:
    per_device = _vmap_over_axes(jaxpr, mesh, manual)
    blocks = [_to_blocks(x, mesh, manual, s) for x, s in zip(args, in_specs)]
    outs = per_device(*blocks)
    return [_from_blocks(y, manual, s, mesh) for y, s in zip(outs, out_specs)]


def _vmap_over_axes(jaxpr: ClosedJaxpr, mesh: Mesh, manual: Sequence[str]) -> Callable[..., Any]:
    def fun(*xs: Any) -> list[Any]:
        return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs)

    for name in reversed(manual):
        fun = _batched_over(fun, name, mesh.axis_size(name))
    return fun


def _batched_over(fun: Callable[..., list[Any]], name: str, size: int) -> Callable[..., Any]:
    """``fun`` mapped over the leading axis of every argument and result, that axis bound as
    the named axis ``name`` (what ``vmap(fun, axis_name=name)`` does)."""

    def batched(*xs: Any) -> list[Any]:
        outs, dims = batch_flat(fun, xs, [0] * len(xs), size, name)
        results = []
        for x, d in zip(outs, dims):
            if d is not_mapped:  # the same on every device: stacked copies
                shape = get_aval(x).shape
                x = broadcast_in_dim(x, (size, *shape), tuple(range(1, len(shape) + 1)))
            elif d != 0:
                x = move_axis(x, d, 0)
            results.append(x)
        return results

    return batched


def _reference(*args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    def build():
        avals = [get_aval(a) for a in args]
        return trace_to_jaxpr(
            lambda *xs: _as_vmaps(jaxpr, mesh, tuple(manual_axes), in_specs, out_specs, *xs),
            avals,
            "shard_map",
        )

    key = ("reference", manual_axes, in_specs, out_specs, tuple(get_aval(a) for a in args))
    return evaluate_jaxpr(cached(jaxpr, key, build), args)


# -- differentiation ---------------------------------------------------------------------------


def _jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    nonzero = tuple(type(t) is not Zero for t in tangents)
    with mesh_axes(mesh, check_vma, manual_axes):
        consts, new_jaxpr, out_nonzero = jvp_jaxpr(jaxpr, nonzero)
    live = [t for t in tangents if type(t) is not Zero]
    t_specs = tuple(s for s, nz in zip(in_specs, nonzero) if nz)
    to_specs = tuple(s for s, nz in zip(out_specs, out_nonzero) if nz)
    outs = shard_map_p.bind(
        *consts,
        *primals,
        *live,
        jaxpr=new_jaxpr,
        mesh=mesh,
        in_specs=(PartitionSpec(),) * len(consts) + tuple(in_specs) + t_specs,
        out_specs=tuple(out_specs) + to_specs,
        check_vma=check_vma,
        manual_axes=manual_axes,
    )
    n = len(out_specs)
    out_avals = _abstract_eval(
        jaxpr=jaxpr,
        mesh=mesh,
        in_specs=in_specs,
        out_specs=out_specs,
        check_vma=check_vma,
        manual_axes=manual_axes,
    )
    zeros = [Zero(tangent_aval(a)) for a, nz in zip(out_avals, out_nonzero) if not nz]
    return outs[:n], merge(out_nonzero, zeros, outs[n:])


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    undefined = [is_undefined(a) for a in args]
    residuals = [a for a in args if not is_undefined(a)]
    res_specs = tuple(s for s, u in zip(in_specs, undefined) if not u)
    lin_specs = tuple(s for s, u in zip(in_specs, undefined) if u)
    ct_nonzero = tuple(type(ct) is not Zero for ct in cts)
    live_cts = [ct for ct in cts if type(ct) is not Zero]
    ct_specs = tuple(s for s, nz in zip(out_specs, ct_nonzero) if nz)

    def build():
        lin_avals = [a for a, u in zip(jaxpr.in_avals, undefined) if u]
        res_avals = [a for a, u in zip(jaxpr.in_avals, undefined) if not u]
        ct_avals = [tangent_aval(a) for a, nz in zip(jaxpr.out_avals, ct_nonzero) if nz]

        def fun(*res_and_cts):
            res, cts_in = res_and_cts[: len(res_avals)], res_and_cts[len(res_avals) :]
            # Untyped, a replicated output's cotangent reaches every device along the axes its
            # spec leaves out; each device takes its share so that the sum is counted once.
            # Typed, it is an invariant value, and the body's pvary/psum transposes sum it.
            scaled = []
            for ct, spec in zip(cts_in, ct_specs):
                copies = math.prod(mesh.axis_size(a) for a in unmentioned(manual_axes, spec))
                scaled.append(ct if copies == 1 or check_vma else ct / copies)
            full_args = merge(undefined, res, [UndefinedPrimal(a) for a in lin_avals])
            zeros = [Zero(a) for a, nz in zip(jaxpr.out_avals, ct_nonzero) if not nz]
            full_cts = merge(ct_nonzero, zeros, scaled)
            result = backward_pass(jaxpr.jaxpr, jaxpr.consts, full_args, full_cts)
            outs = []
            for ct, spec in zip([r for r, u in zip(result, undefined) if u], lin_specs):
                ct = instantiate(ct)
                # Untyped: the input was copied to these devices. Typed: its cotangent is
                # already summed (the pvary that shared it out transposes to psum).
                axes = () if check_vma else unmentioned(manual_axes, spec)
                outs.append(collectives.psum_p.bind(ct, axes=axes) if axes else ct)
            return outs

        with mesh_axes(mesh, check_vma, manual_axes):
            return trace_const_free(fun, [*res_avals, *ct_avals], "transpose")

    key = ("transpose", tuple(undefined), ct_nonzero)
    consts, transposed = cached(jaxpr, key, build)
    outs = shard_map_p.bind(
        *consts,
        *residuals,
        *live_cts,
        jaxpr=transposed,
        mesh=mesh,
        in_specs=(PartitionSpec(),) * len(consts) + res_specs + ct_specs,
        out_specs=lin_specs,
        check_vma=check_vma,
        manual_axes=manual_axes,
    )
    return merge(undefined, [None] * len(residuals), outs)


def _partial_eval(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> list[Any]:
    jaxpr, mesh, check_vma = params["jaxpr"], params["mesh"], params["check_vma"]
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    manual_axes = params["manual_axes"]
    unknowns = tuple(trace.owns(x) for x in args)
    # Residuals are per-device values: they leave the known part stacked along a new leading
    # dimension split over every manual axis, and enter the unknown part the same way.
    every_axis = PartitionSpec(tuple(manual_axes))

    def build():
        with mesh_axes(mesh, check_vma, manual_axes):
            split = partial_eval_jaxpr(jaxpr, unknowns)
        n_res = split.num_residuals
        known = split.known
        n_known_out = len(known.out_avals) - n_res

        def known_fun(*xs):
            outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
            return outs[:n_known_out] + [expand_dims(r, (0,)) for r in outs[n_known_out:]]

        unknown = split.unknown

        def unknown_fun(*xs):
            res = [squeeze(r, (0,)) for r in xs[:n_res]]
            return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[n_res:])

        res_avals = known.out_avals[n_known_out:]
        stacked = [r.update(shape=(1, *r.shape)) for r in res_avals]
        with mesh_axes(mesh, check_vma, manual_axes):
            known_j = trace_const_free(known_fun, known.in_avals, "known")
            unknown_in = stacked + list(unknown.in_avals[n_res:])
            unknown_j = trace_const_free(unknown_fun, unknown_in, "unknown")
        return split, known_j, unknown_j

    split, (k_consts, k_jaxpr), (u_consts, u_jaxpr) = cached(jaxpr, ("pe", unknowns), build)
    n_res = split.num_residuals
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    known_in_specs = tuple(s for s, u in zip(in_specs, unknowns) if not u)
    unknown_in_specs = tuple(s for s, u in zip(in_specs, unknowns) if u)
    known_out_specs = tuple(s for s, u in zip(out_specs, split.out_unknowns) if not u)
    unknown_out_specs = tuple(s for s, u in zip(out_specs, split.out_unknowns) if u)
    with core.set_current_trace(trace.parent):
        known_outs = shard_map_p.bind(
            *k_consts,
            *known_args,
            jaxpr=k_jaxpr,
            mesh=mesh,
            in_specs=(PartitionSpec(),) * len(k_consts) + known_in_specs,
            out_specs=known_out_specs + (every_axis,) * n_res,
            check_vma=check_vma,
            manual_axes=manual_axes,
        )
    n_known = len(known_outs) - n_res
    residuals = known_outs[n_known:]
    unknown_outs = trace.stage(
        shard_map_p,
        [*u_consts, *residuals, *unknown_args],
        {
            "jaxpr": u_jaxpr,
            "mesh": mesh,
            "in_specs": (PartitionSpec(),) * len(u_consts)
            + (every_axis,) * n_res
            + unknown_in_specs,
            "out_specs": unknown_out_specs,
            "check_vma": check_vma,
            "manual_axes": manual_axes,
        },
    )
    return merge(split.out_unknowns, known_outs[:n_known], unknown_outs)


# -- batching ----------------------------------------------------------------------------------


def _batch(vals, dims, *, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    fronts = [v if d is not_mapped else move_axis(v, d, 0) for v, d in zip(vals, dims)]
    batched_in = [d is not not_mapped for d in dims]
    with mesh_axes(mesh, check_vma, manual_axes):
        consts, batched, out_batched = batch_jaxpr(jaxpr, batched_in, size, force_out=True)
    specs = tuple(PartitionSpec(None, *s) if b else s for s, b in zip(in_specs, batched_in))
    outs = shard_map_p.bind(
        *consts,
        *fronts,
        jaxpr=batched,
        mesh=mesh,
        in_specs=(PartitionSpec(),) * len(consts) + specs,
        out_specs=tuple(PartitionSpec(None, *s) for s in out_specs),
        check_vma=check_vma,
        manual_axes=manual_axes,
    )
    return outs, [0] * len(outs)


def _layouts(*, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    """Run eagerly: operands laid out by ``in_specs``, results by ``out_specs``."""
    return (
        [NamedSharding(mesh, s) for s in in_specs],
        [NamedSharding(mesh, s) for s in out_specs],
    )


def _shard_map_sharding(*avals, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    """The results are typed as out_specs say over the mesh's Explicit axes."""
    return [a.typed_sharding for a in _abstract_eval(*avals, jaxpr=jaxpr, mesh=mesh,
            in_specs=in_specs, out_specs=out_specs, check_vma=check_vma,
            manual_axes=manual_axes)]  # fmt: skip


shard_map_p = rules.define_primitive(
    "shard_map",
    sharding=_shard_map_sharding,
    abstract_eval=_abstract_eval,
    jvp=_jvp,
    transpose=_transpose,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    partial_eval=_partial_eval,
    multiple_results=True,
    eager_layouts=_layouts,
    own_vma=True,
)
