"""``pallas_call``: run a kernel over a grid, as one primitive of the same name.

``pallas_call(kernel, out_shape, grid=..., in_specs=..., out_specs=...)(*args)`` traces the
index maps and the kernel into a ``PallasCall`` (``core.py``) and binds ``pallas_call_p``
with it (params ``call`` and ``interpret``). The primitive's rules:

- lowering: the platform's kernel compiler (``LoweringRegistry.register_kernel_compiler``)
  unless ``interpret=True`` or the platform has none; otherwise interpret mode
  (``interpret.py``), whose traced loop is also what the reference backend evaluates;
- batching: ``vmap`` adds a leading grid axis over the batch, each batched operand getting a
  leading squeezed block dimension indexed by it (the kernel itself is unchanged);
- differentiation: none. A kernel is differentiated by writing its backward kernel and
  pairing the two with ``ember.custom_vjp``; ``grad``/``jvp`` of a bare call says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, current_trace, get_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.pallas.core import (
    BlockMapping,
    BlockSpec,
    GridSpec,
    KernelContext,
    NoBlockSpec,
    PallasCall,
    block_mapping,
    no_block_spec,
    normalize_grid,
    tracing_kernel,
)
from ember._src.pallas.interpret import evaluate_kernel, interpret_jaxpr
from ember._src.pallas.primitives import num_programs_p, program_id_p, scratch_aval
from ember._src.plugin.registries import kernel_compiler
from ember._src.primitives.shape import bdim_to_front
from ember._src.state_types import AbstractRef, RefEffect
from ember._src.tree.util import tree_flatten, tree_unflatten

# --------------------------------------------------------------------------------------------
# The primitive


def _abstract_eval(*avals: ShapedArray, call: PallasCall, interpret: bool) -> list[ShapedArray]:
    return list(call.out_avals)


def _lowering(ctx, *operands: str, call: PallasCall, interpret: bool) -> list[str]:
    compiler = None if interpret else kernel_compiler(ctx.platform)
    if compiler is not None:
        return compiler(ctx, call, *operands)
    closed = interpret_jaxpr(call, ctx.avals_in)
    consts = [ctx.constant(c, get_aval(c)) for c in closed.consts]
    return lower_jaxpr_inline(ctx, closed.jaxpr, consts, operands)


def _reference(*args: Any, call: PallasCall, interpret: bool) -> list[Any]:
    return evaluate_jaxpr(interpret_jaxpr(call, [get_aval(a) for a in args]), args)


def _jvp(primals, tangents, *, call: PallasCall, interpret: bool):
    raise errors.CustomDerivativeError(
        f"pallas_call {call.name!r} cannot be differentiated (jvp/grad): ember does not "
        f"differentiate kernels. Write the backward kernel too and pair the two with "
        f"ember.custom_vjp (its forward and backward functions may be pallas_calls)"
        f"{errors.where()}"
    )


def _batch(vals: Sequence[Any], dims: Sequence[Any], *, call: PallasCall, interpret: bool):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    batched = [d is not not_mapped for d in dims]
    # An output that starts as an unbatched input starts as that input, once per element.
    for inp, _ in call.input_output_aliases:
        batched[inp] = True
    fronts = [bdim_to_front(v, d, size) if b else v for v, d, b in zip(vals, dims, batched)]
    outs = pallas_call_p.bind(*fronts, call=batch_call(call, batched, size), interpret=interpret)
    return outs, [0] * len(outs)


def _effects(*, call: PallasCall, interpret: bool) -> frozenset:
    """A kernel's own Ref reads and writes stay inside the call; other effects (a
    ``debug_print``) are the call's."""
    return frozenset(e for e in call.kernel.jaxpr.effects if not isinstance(e, RefEffect))


pallas_call_p = rules.define_primitive(
    "pallas_call",
    abstract_eval=_abstract_eval,
    jvp=_jvp,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    sharding=rules.NOT_SHARDABLE,
    effects=_effects,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# vmap: one more grid axis


def batch_call(call: PallasCall, batched: Sequence[bool], size: int) -> PallasCall:
    """``call`` over a leading batch axis of ``size``: a new first grid axis runs over it;
    the batched operands (``batched``) and every output get a leading squeezed block
    dimension at that grid index; the kernel's ``program_id`` axes move up by one."""
    grid = (size, *call.grid)
    in_maps = [
        _batched_mapping(m, b, size, len(grid)) for m, b in zip(call.in_block_mappings, batched)
    ]
    out_maps = [_batched_mapping(m, True, size, len(grid)) for m in call.out_block_mappings]
    return dataclasses.replace(
        call,
        name=call.name,
        kernel=_shift_program_ids(call.kernel),
        grid=grid,
        block_mappings=(*in_maps, *out_maps),
        out_avals=tuple(m.array_aval for m in out_maps),
    )


def _batched_mapping(mapping: BlockMapping, batched: bool, size: int, ndim: int) -> BlockMapping:
    old = mapping.index_map
    grid_avals = [ShapedArray((), np.dtype(np.int32))] * ndim

    def index_map(b: Any, *grid_indices: Any) -> list[Any]:
        inner = evaluate_kernel(old, (), grid_indices, list(grid_indices))
        return [b, *inner] if batched else inner

    closed = trace_to_jaxpr(index_map, grid_avals, name=f"index_map of {mapping.origin}")
    if not batched:
        return dataclasses.replace(mapping, index_map=closed)
    aval = mapping.array_aval
    return BlockMapping(
        (None, *mapping.block_shape),
        closed,
        ShapedArray((size, *aval.shape), aval.dtype),
        mapping.origin,
    )


def _shift_program_ids(kernel: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr = kernel.jaxpr
    eqns = [
        eqn.replace(params={**eqn.params, "axis": eqn.params["axis"] + 1})
        if eqn.primitive in (program_id_p, num_programs_p)
        else eqn
        for eqn in jaxpr.eqns
    ]
    shifted = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)
    return ClosedJaxpr(shifted, kernel.consts)


# --------------------------------------------------------------------------------------------
# The user's entry point


def pallas_call(
    kernel: Callable[..., None],
    out_shape: Any,
    *,
    grid_spec: GridSpec | None = None,
    grid: Any = (),
    in_specs: Any = no_block_spec,
    out_specs: Any = no_block_spec,
    scratch_shapes: Sequence[Any] = (),
    input_output_aliases: dict[int, int] | None = None,
    debug: bool = False,
    interpret: Any = False,
    name: str | None = None,
    compiler_params: Any = None,
    cost_estimate: Any = None,
    backend: Any = None,
) -> Callable[..., Any]:
    """A function running ``kernel`` over ``grid`` (see the module doc and ``core.py``).

    ``kernel(*input_refs, *output_refs, *scratch_refs)`` reads its inputs' blocks and writes
    its outputs' blocks through Refs, once per grid point. ``out_shape``: a pytree of
    shapes-and-dtypes (``ember.ShapeDtypeStruct``, arrays); the result has its structure.
    ``interpret=True`` runs the grid as a loop of array operations on any backend.
    ``cost_estimate`` and ``backend`` are accepted for JAX compatibility and unused."""
    del cost_estimate, backend
    kernel_name = name or getattr(kernel, "__name__", "kernel")
    if grid_spec is not None:
        if grid != () or in_specs is not no_block_spec or out_specs is not no_block_spec:
            raise ValueError(
                f"pallas_call {kernel_name!r}: pass either grid_spec or grid/in_specs/"
                f"out_specs, not both{errors.where()}"
            )
        if scratch_shapes:
            raise ValueError(
                f"pallas_call {kernel_name!r}: pass scratch_shapes in the grid_spec{errors.where()}"
            )
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
    grid = normalize_grid(grid, kernel_name)
    out_leaves, out_tree = tree_flatten(out_shape)
    out_avals = tuple(_out_aval(o, kernel_name) for o in out_leaves)
    scratch_avals = [scratch_aval(s) for s in scratch_shapes]
    params = _compiler_params(compiler_params, kernel_name)
    aliases = dict(input_output_aliases or {})

    def wrapped(*args: Any) -> Any:
        flat_args, in_tree = tree_flatten(args)
        in_avals = [get_aval(x).strip_weak_type() for x in flat_args]
        in_spec_leaves = _specs_per_leaf(in_specs, args, "in_specs", kernel_name)
        out_spec_leaves = _specs_per_leaf(
            out_specs, _as_top_level(out_shape), "out_specs", kernel_name
        )
        mappings = [
            block_mapping(s, a, grid, f"input {i}", kernel_name)
            for i, (s, a) in enumerate(zip(in_spec_leaves, in_avals))
        ] + [
            block_mapping(s, a, grid, f"output {i}", kernel_name)
            for i, (s, a) in enumerate(zip(out_spec_leaves, out_avals))
        ]
        alias_pairs = _check_aliases(aliases, in_avals, out_avals, kernel_name)
        kernel_jaxpr = _trace_kernel(
            kernel, kernel_name, grid, mappings, scratch_avals, in_tree, out_shape
        )
        call = PallasCall(
            name=kernel_name,
            kernel=kernel_jaxpr,
            grid=grid,
            block_mappings=tuple(mappings),
            out_avals=out_avals,
            input_output_aliases=alias_pairs,
            compiler_params=params,
            debug=bool(debug),
            num_inputs=len(flat_args),
        )
        if debug:
            print(f"The kernel jaxpr of pallas_call {kernel_name!r} (grid {grid}):")
            print(kernel_jaxpr)
        outs = pallas_call_p.bind(*flat_args, call=call, interpret=bool(interpret))
        return tree_unflatten(out_tree, outs)

    return wrapped


def _out_aval(leaf: Any, kernel_name: str) -> ShapedArray:
    if isinstance(leaf, ShapedArray):
        return leaf.strip_weak_type()
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"pallas_call {kernel_name!r}: out_shape must be a pytree of shapes and dtypes "
            f"(ember.ShapeDtypeStruct or arrays), got {leaf!r}{errors.where()}"
        )
    return ShapedArray(tuple(shape), dtypes.canonicalize(dtype))


def _as_top_level(out_shape: Any) -> tuple:
    """The outputs as the kernel gets them: a tuple or list spreads, anything else is one."""
    return tuple(out_shape) if isinstance(out_shape, (tuple, list)) else (out_shape,)


def _specs_per_leaf(specs: Any, values: Sequence[Any], what: str, kernel_name: str) -> list:
    """One block spec per leaf of ``values``: ``specs`` has one per top-level value (applied
    to all its leaves), or is one spec for a single value, or ``no_block_spec`` for all."""
    if isinstance(specs, NoBlockSpec) or specs is None:
        per_value: Sequence[Any] = [None] * len(values)
    elif isinstance(specs, BlockSpec):
        if len(values) != 1:
            raise ValueError(
                f"pallas_call {kernel_name!r}: {what} is one BlockSpec, but there are "
                f"{len(values)} {_operands_word(what)}; pass a tuple with one spec each"
                f"{errors.where()}"
            )
        per_value = [specs]
    elif isinstance(specs, (tuple, list)):
        if len(specs) != len(values):
            raise ValueError(
                f"pallas_call {kernel_name!r}: {what} has {len(specs)} entries, but there are "
                f"{len(values)} {_operands_word(what)}{errors.where()}"
            )
        per_value = specs
    else:
        raise TypeError(
            f"pallas_call {kernel_name!r}: {what} must be a BlockSpec or a tuple of them, "
            f"got {specs!r}{errors.where()}"
        )
    result = []
    for spec, value in zip(per_value, values):
        leaves, _ = tree_flatten(value)
        result.extend([spec] * len(leaves))
    return result


def _operands_word(what: str) -> str:
    return "inputs" if what == "in_specs" else "outputs"


def _check_aliases(
    aliases: dict[int, int],
    in_avals: Sequence[ShapedArray],
    out_avals: Sequence[ShapedArray],
    kernel_name: str,
) -> tuple[tuple[int, int], ...]:
    for inp, out in aliases.items():
        if not (0 <= inp < len(in_avals) and 0 <= out < len(out_avals)):
            raise ValueError(
                f"pallas_call {kernel_name!r}: input_output_aliases {{{inp}: {out}}} is out of "
                f"range ({len(in_avals)} inputs, {len(out_avals)} outputs){errors.where()}"
            )
        if in_avals[inp] != out_avals[out]:
            raise ValueError(
                f"pallas_call {kernel_name!r}: input {inp} ({in_avals[inp].str_short()}) is "
                f"aliased to output {out} ({out_avals[out].str_short()}); their types must "
                f"match{errors.where()}"
            )
    return tuple(sorted(aliases.items()))


def _compiler_params(compiler_params: Any, kernel_name: str) -> dict[str, Any]:
    if compiler_params is None:
        return {}
    if isinstance(compiler_params, dict):
        return {k: dict(v) if isinstance(v, dict) else v for k, v in compiler_params.items()}
    compiler = getattr(compiler_params, "PLATFORM", None)
    if compiler is None or not dataclasses.is_dataclass(compiler_params):
        raise TypeError(
            f"pallas_call {kernel_name!r}: compiler_params must be a dict or a compiler's "
            f"CompilerParams (e.g. pl.triton.CompilerParams), got {compiler_params!r}"
            f"{errors.where()}"
        )
    return {compiler: dataclasses.asdict(compiler_params)}


def _trace_kernel(
    kernel: Callable[..., Any],
    kernel_name: str,
    grid: tuple[int, ...],
    mappings: Sequence[BlockMapping],
    scratch_avals: Sequence[ShapedArray],
    in_tree: Any,
    out_shape: Any,
) -> ClosedJaxpr:
    """The kernel's jaxpr over Refs: input blocks, output blocks, scratch buffers."""
    ref_avals = [AbstractRef(m.block_aval) for m in mappings]
    ref_avals += [AbstractRef(a) for a in scratch_avals]
    num_in = in_tree.num_leaves
    num_out = len(mappings) - num_in
    out_tree = tree_flatten(_as_top_level(out_shape))[1]

    def traced(*refs: Any) -> list[Any]:
        in_refs = tree_unflatten(in_tree, refs[:num_in])
        out_refs = tree_unflatten(out_tree, refs[num_in : num_in + num_out])
        scratch_refs = refs[num_in + num_out :]
        with tracing_kernel(KernelContext(kernel_name, grid, current_trace())):
            result = kernel(*in_refs, *out_refs, *scratch_refs)
        if result is not None:
            raise ValueError(
                f"the Pallas kernel {kernel_name!r} returned a value; a kernel writes its "
                f"results into its output Refs and returns None{errors.where()}"
            )
        return []

    return trace_to_jaxpr(traced, ref_avals, name=f"pallas kernel {kernel_name}")
