"""Reading and writing Refs: the primitives ``get``, ``swap`` and ``addupdate``, and
``run_scoped`` (a body run with fresh scratch Refs).

Operands: the Ref first, then (for ``swap`` and ``addupdate``) the value, then the dynamic
parts of the indexer. The parameter ``indexer`` is an ``IndexerSpec`` (``state_types.py``):

    IndexerSpec(shape=(16, 128), entries=(("index", None), ("slice", 0, 128, 1)))

is ``ref[i, :]`` on a Ref of shape (16, 128), ``i`` being the first dynamic operand. Its
entries, one per dimension of the Ref, are ``("index", k)`` (``k`` an int, or None: the next
dynamic operand, an integer scalar), ``("slice", start, size, stride)`` (``start`` an int, or
None: the next dynamic operand) and ``("array",)`` (the next dynamic operand, an integer
array). ``NDIndexer.unflatten(indexer, dynamic_operands)`` rebuilds the indexer.

- ``get``: ``ref[indexer]``, an array of the indexer's result shape (NumPy's rules).
- ``swap``: stores the value at ``ref[indexer]`` and returns what was there.
- ``addupdate``: adds the value into ``ref[indexer]``; no result.

``run_scoped``'s operands are the values its body closes over; its parameter ``jaxpr`` takes
the scratch Refs first, then those operands. Discharged, the scratch starts as zeros.

These primitives have no lowering and no reference rule: a jaxpr over Refs runs only after
``interpreters.discharge.discharge_state`` turns it into a jaxpr over values, through the
discharge rules registered here (a read is a slice or gather of the Ref's current value, a
write an update-slice or scatter into it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, get_aval
from ember._src.interpreters.discharge import discharged_operands, new_ref_values, run_discharged
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Eqn, EqnPrintContext, register_eqn_printer
from ember._src.primitives.arithmetic import add, mul
from ember._src.primitives.control_flow.body_jaxprs import permute_jaxpr
from ember._src.primitives.gather_scatter import (
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    gather,
    scatter_add_p,
    scatter_p,
)
from ember._src.primitives.indexing import dynamic_slice_op, dynamic_update_slice_op
from ember._src.primitives.jaxpr_transforms import hoist_consts
from ember._src.primitives.shape import (
    broadcast_in_dim,
    broadcast_to_shape,
    convert_element_type,
    iota_along,
    reshape,
)
from ember._src.primitives.slicing import concatenate, slice_op
from ember._src.state_types import (
    AbstractRef,
    IndexerSpec,
    NDIndexer,
    Slice,
    accum_effect,
    is_ref,
    not_a_ref_error,
    read_effect,
    write_effect,
)
from ember._src.tree.util import tree_flatten, tree_unflatten

# --------------------------------------------------------------------------------------------
# Shared checks


def _indexed_aval(name: str, ref: Any, dynamic: Sequence[ShapedArray], indexer: IndexerSpec):
    """The aval ``ref[indexer]`` reads, after checking the operands fit the indexer."""
    if not is_ref(ref):
        raise not_a_ref_error(name, ref)
    if tuple(indexer.shape) != ref.shape:
        raise errors.EmberTypeError(
            f"internal error: {name}'s indexer is for shape {indexer.shape}, its Ref has shape "
            f"{ref.shape}"
        )
    for aval in dynamic:
        if not dtypes.is_integer(aval.dtype):
            raise errors.EmberTypeError(
                f"{name}: a Ref's indices must be integers, got {aval.str_short()}{errors.where()}"
            )
    nd = NDIndexer.unflatten(indexer, dynamic)
    for entry in nd.indices:
        if isinstance(entry, Slice) and entry.is_dynamic_start and entry.start.shape != ():
            raise errors.EmberTypeError(
                f"{name}: a Slice's start must be a scalar, got {entry.start.str_short()}"
            )
    return ShapedArray(nd.result_shape(), ref.dtype)


def _check_value(name: str, ref: AbstractRef, value: ShapedArray, expected: ShapedArray) -> None:
    if is_ref(value):
        raise errors.EmberTypeError(
            f"{name}: the value stored into a Ref must be an array, got {value.str_short()}"
            f"{errors.where()}"
        )
    if value.shape != expected.shape:
        raise errors.ShapeMismatchError(
            f"{name}: a value of shape {value.shape} can't be stored into {ref.str_short()} "
            f"indexed to shape {expected.shape}{errors.where()}"
        )
    if value.dtype != expected.dtype:
        raise errors.EmberTypeError(
            f"{name}: a value of dtype {value.dtype} can't be stored into {ref.str_short()}, "
            f"of dtype {expected.dtype}; convert it first (.astype){errors.where()}"
        )


def _not_discharged(name: str) -> Callable[..., Any]:
    def rule(*args: Any, **params: Any) -> Any:
        raise errors.EmberTypeError(
            f"a jaxpr still reads or writes Refs ({name}) where it is run or lowered: Refs must "
            f"be discharged first (interpreters.discharge.discharge_state, or pallas_call's "
            f"interpret mode){errors.where()}"
        )

    return rule


# --------------------------------------------------------------------------------------------
# Reading and writing a Ref's value (the discharge rules' arithmetic)


def _is_window(nd: NDIndexer) -> bool:
    """Whether ``nd`` reads a plain window: unit strides, and scalar integer indices only."""
    return not nd.has_arrays and all(not isinstance(e, Slice) or e.stride == 1 for e in nd.indices)


def _window_starts_and_sizes(nd: NDIndexer) -> tuple[list[Any], list[int]]:
    starts, sizes = [], []
    for entry in nd.indices:
        if isinstance(entry, Slice):
            starts.append(entry.start)
            sizes.append(entry.size)
        else:
            starts.append(entry)
            sizes.append(1)
    return starts, sizes


def _is_whole(starts: Sequence[Any], sizes: Sequence[int], shape: Sequence[int]) -> bool:
    return (
        all(s == 0 for s in starts if isinstance(s, int))
        and _all_static(starts)
        and (tuple(sizes) == tuple(shape))
    )


def _all_static(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int) for v in values)


def read_indexed(x: Any, nd: NDIndexer) -> Any:
    """``x[nd]`` for an array value ``x``: what ``get`` reads from a Ref holding ``x``."""
    if not _is_window(nd):
        rank = len(nd.shape)
        return gather(x, _point_indices(nd), _point_gather(rank), (1,) * rank)
    starts, sizes = _window_starts_and_sizes(nd)
    if _is_whole(starts, sizes, nd.shape):
        return x
    if _all_static(starts):
        window = slice_op(x, starts, [s + n for s, n in zip(starts, sizes)])
    else:
        window = dynamic_slice_op(x, [_int32(s) for s in starts], sizes)
    shape = nd.result_shape()
    return window if tuple(sizes) == shape else reshape(window, shape)


def write_indexed(x: Any, nd: NDIndexer, value: Any, *, accumulate: bool) -> Any:
    """``x`` with ``value`` stored at (or, accumulating, added into) ``x[nd]``."""
    if not _is_window(nd):
        primitive = scatter_add_p if accumulate else scatter_p
        return primitive.bind(
            x,
            _point_indices(nd),
            value,
            dimension_numbers=_point_scatter(len(nd.shape)),
            indices_are_sorted=False,
            unique_indices=False,
        )
    starts, sizes = _window_starts_and_sizes(nd)
    if accumulate:
        value = add(read_indexed(x, nd), value)
    update = reshape(value, sizes) if get_aval(value).shape != tuple(sizes) else value
    if _is_whole(starts, sizes, nd.shape):
        return update
    return dynamic_update_slice_op(x, update, [_int32(s) for s in starts])


def _int32(index: Any) -> Any:
    if isinstance(index, int):
        return np.int32(index)
    aval = get_aval(index)
    return index if aval.dtype == np.int32 else convert_element_type(index, np.int32)


def _point_indices(nd: NDIndexer) -> Any:
    """For an indexer with strides or integer arrays: int32 indices of shape
    ``result_shape + (rank,)``, the position in the Ref of every element read."""
    out_shape = nd.result_shape()
    ints = nd.is_int_indexing()
    int_shape = nd.int_indexer_shape
    positions = [d for d, is_int in enumerate(ints) if is_int]
    adjacent = bool(positions) and positions[-1] - positions[0] + 1 == len(positions)
    # Where the integer indices' broadcast dimensions and each slice's dimension sit.
    int_at = sum(1 for d in range(positions[0]) if not ints[d]) if adjacent else 0
    slice_axis = []
    axis = 0
    for is_int in ints:
        if is_int:
            continue
        if axis == int_at and positions:
            axis += len(int_shape)
        slice_axis.append(axis)
        axis += 1
    columns = []
    slice_number = 0
    for entry in nd.indices:
        if isinstance(entry, Slice):
            along = iota_along(np.int32, out_shape, slice_axis[slice_number])
            slice_number += 1
            if entry.stride != 1:
                along = mul(along, np.int32(entry.stride))
            column = add(along, _int32(entry.start)) if entry.start != 0 else along
        else:
            index = _int32(entry)
            index_shape = get_aval(index).shape
            index = broadcast_to_shape(index, int_shape) if index_shape != int_shape else index
            dims = tuple(range(int_at, int_at + len(int_shape)))
            column = broadcast_in_dim(index, out_shape, dims)
        columns.append(reshape(column, (*out_shape, 1)))
    return concatenate(columns, len(out_shape))


def _point_gather(rank: int) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=tuple(range(rank)), start_index_map=tuple(range(rank))
    )


def _point_scatter(rank: int) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=(),
        inserted_window_dims=tuple(range(rank)),
        scatter_dims_to_operand_dims=tuple(range(rank)),
    )


# --------------------------------------------------------------------------------------------
# get


def _get_abstract_eval(ref, *dynamic, indexer):
    return _indexed_aval("get", ref, dynamic, indexer)


def _get_discharge(in_avals, out_avals, x, *dynamic, indexer):
    nd = NDIndexer.unflatten(indexer, dynamic)
    return [None] * (1 + len(dynamic)), read_indexed(x, nd)


get_p = rules.define_primitive(
    "get",
    sharding=rules.NOT_SHARDABLE,  # a kernel's Refs are blocks of one device's memory
    abstract_eval=_get_abstract_eval,
    discharge=_get_discharge,
    lowering=_not_discharged("get"),
    reference=_not_discharged("get"),
    effects=lambda **params: frozenset({read_effect}),
)


# --------------------------------------------------------------------------------------------
# swap


def _swap_abstract_eval(ref, value, *dynamic, indexer):
    expected = _indexed_aval("swap", ref, dynamic, indexer)
    _check_value("swap", ref, value, expected)
    return expected


def _swap_discharge(in_avals, out_avals, x, value, *dynamic, indexer):
    nd = NDIndexer.unflatten(indexer, dynamic)
    old = read_indexed(x, nd)
    new = write_indexed(x, nd, value, accumulate=False)
    return [new, None, *[None] * len(dynamic)], old


swap_p = rules.define_primitive(
    "swap",
    sharding=rules.NOT_SHARDABLE,  # a kernel's Refs are blocks of one device's memory
    abstract_eval=_swap_abstract_eval,
    discharge=_swap_discharge,
    lowering=_not_discharged("swap"),
    reference=_not_discharged("swap"),
    effects=lambda **params: frozenset({write_effect}),
)


# --------------------------------------------------------------------------------------------
# addupdate


def _addupdate_abstract_eval(ref, value, *dynamic, indexer):
    expected = _indexed_aval("addupdate", ref, dynamic, indexer)
    _check_value("addupdate", ref, value, expected)
    return []


def _addupdate_discharge(in_avals, out_avals, x, value, *dynamic, indexer):
    nd = NDIndexer.unflatten(indexer, dynamic)
    new = write_indexed(x, nd, value, accumulate=True)
    return [new, None, *[None] * len(dynamic)], []


addupdate_p = rules.define_primitive(
    "addupdate",
    sharding=rules.NOT_SHARDABLE,  # a kernel's Refs are blocks of one device's memory
    abstract_eval=_addupdate_abstract_eval,
    discharge=_addupdate_discharge,
    lowering=_not_discharged("addupdate"),
    reference=_not_discharged("addupdate"),
    effects=lambda **params: frozenset({accum_effect}),
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# Printing, as JAX prints them: ``c:f32[8] <- a[b, :]``, ``a[b, :] <- c`` (the old value unused,
# else ``d:f32[8], a[b, :] <- a[b, :], c``) and ``a[b, :] += c``


def _indexed_text(eqn: Eqn, context: EqnPrintContext, first_index: int) -> str:
    ref, dynamic = eqn.invars[0], eqn.invars[first_index:]
    return context.name(ref) + eqn.params["indexer"].pretty([context.name(v) for v in dynamic])


def _print_get(eqn: Eqn, context: EqnPrintContext) -> str:
    return f"{context.binder(eqn.outvars[0])} <- {_indexed_text(eqn, context, 1)}"


def _print_swap(eqn: Eqn, context: EqnPrintContext) -> str:
    place, value = _indexed_text(eqn, context, 2), context.name(eqn.invars[1])
    old = eqn.outvars[0]
    if not context.is_used(old):
        return f"{place} <- {value}"
    return f"{context.binder(old)}, {place} <- {place}, {value}"


def _print_addupdate(eqn: Eqn, context: EqnPrintContext) -> str:
    return f"{_indexed_text(eqn, context, 2)} += {context.name(eqn.invars[1])}"


register_eqn_printer(get_p, _print_get)
register_eqn_printer(swap_p, _print_swap)
register_eqn_printer(addupdate_p, _print_addupdate)


# --------------------------------------------------------------------------------------------
# What ember's own code calls (``ref[index]``, ``ref[index] = value`` and pallas)


def _ref_aval(ref: Any, what: str) -> AbstractRef:
    aval = get_aval(ref)
    if not is_ref(aval):
        raise not_a_ref_error(what, aval)
    return aval


def _indexer_of(aval: AbstractRef, index: Any) -> NDIndexer:
    if isinstance(index, NDIndexer):
        return index
    return NDIndexer.from_index(() if index is None else index, aval.shape)


def _stored_value(what: str, aval: AbstractRef, shape: tuple[int, ...], value: Any) -> Any:
    """``value`` ready to store into ``ref[...]`` of ``shape``: a weakly typed value (a Python
    scalar) takes the Ref's dtype, and a value broadcasts as NumPy assignment broadcasts."""
    value_aval = get_aval(value)
    if is_ref(value_aval):
        raise errors.EmberTypeError(
            f"{what}: the value stored into a Ref must be an array, got a Ref "
            f"({value_aval.str_short()}); read it first (x_ref[...]){errors.where()}"
        )
    if value_aval.weak_type and value_aval.dtype != aval.dtype:
        value = convert_element_type(value, aval.dtype)
    if value_aval.shape != shape:
        try:
            value = broadcast_to_shape(value, shape)
        except errors.EmberTypeError:
            raise errors.ShapeMismatchError(
                f"{what}: a value of shape {value_aval.shape} can't be stored into "
                f"{aval.str_short()} indexed to shape {shape}{errors.where()}"
            ) from None
    return value


def ref_get(ref: Any, index: Any = None) -> Any:
    """``ref[index]``: read (part of) a Ref. ``index`` as NumPy's, or an ``NDIndexer``."""
    aval = _ref_aval(ref, "reading a Ref")
    spec, dynamic = _indexer_of(aval, index).flatten()
    return get_p.bind(ref, *dynamic, indexer=spec)


def ref_swap(ref: Any, index: Any, value: Any) -> Any:
    """Store ``value`` at ``ref[index]`` and return what was there."""
    aval = _ref_aval(ref, "writing a Ref")
    nd = _indexer_of(aval, index)
    value = _stored_value("swap", aval, nd.result_shape(), value)
    spec, dynamic = nd.flatten()
    return swap_p.bind(ref, value, *dynamic, indexer=spec)


def ref_set(ref: Any, index: Any, value: Any) -> None:
    """``ref[index] = value``."""
    ref_swap(ref, index, value)


def ref_addupdate(ref: Any, index: Any, value: Any) -> None:
    """``ref[index] += value``, as one accumulation (no read-modify-write in the jaxpr)."""
    aval = _ref_aval(ref, "adding into a Ref")
    nd = _indexer_of(aval, index)
    value = _stored_value("addupdate", aval, nd.result_shape(), value)
    spec, dynamic = nd.flatten()
    addupdate_p.bind(ref, value, *dynamic, indexer=spec)


# --------------------------------------------------------------------------------------------
# run_scoped: a body run with fresh scratch Refs
#
# Operands: the values the body closes over (Refs among them). Parameter ``jaxpr``: the body,
# const-free, taking the scratch Refs first, then those operands.


def _scratch_count(jaxpr: ClosedJaxpr, operands: Sequence[Any]) -> int:
    return len(jaxpr.in_avals) - len(operands)


def _run_scoped_abstract_eval(*avals, jaxpr):
    n_scratch = _scratch_count(jaxpr, avals)
    scratch, taken = jaxpr.in_avals[:n_scratch], jaxpr.in_avals[n_scratch:]
    if n_scratch < 0 or not all(is_ref(a) for a in scratch):
        raise errors.EmberTypeError("internal error: run_scoped's body must take its Refs first")
    if any(not a.same_type(b) for a, b in zip(taken, avals)):
        raise errors.EmberTypeError("internal error: run_scoped's operands don't fit its body")
    return list(jaxpr.out_avals)


def _run_scoped_discharge(in_avals, out_avals, *args, jaxpr):
    # The scratch starts as zeros (its contents are undefined until written, as on a device).
    n_scratch = _scratch_count(jaxpr, args)
    scratch = [_zeros(a.inner_aval) for a in jaxpr.in_avals[:n_scratch]]
    marks = discharged_operands(in_avals, args)
    outs = run_discharged(jaxpr.jaxpr, jaxpr.consts, [*scratch, *args], [True] * n_scratch + marks)
    n = len(out_avals)
    return new_ref_values(marks, outs[n + n_scratch :]), outs[:n]


def _zeros(aval: ShapedArray) -> Any:
    return broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


run_scoped_p = rules.define_primitive(
    "run_scoped",
    sharding=rules.NOT_SHARDABLE,  # a kernel's Refs are blocks of one device's memory
    abstract_eval=_run_scoped_abstract_eval,
    discharge=_run_scoped_discharge,
    lowering=_not_discharged("run_scoped"),
    reference=_not_discharged("run_scoped"),
    multiple_results=True,
)


def run_scoped(f: Callable[..., Any], *avals: Any) -> Any:
    """``f(*refs)`` with fresh Refs of ``avals`` (ShapedArrays, AbstractRefs, or anything
    with ``shape`` and ``dtype``), which exist only while ``f`` runs: a kernel's scratch.
    Returns what ``f`` returns (arrays, not Refs)."""
    ref_avals = [_as_ref_aval(a) for a in avals]
    out_trees = []

    def flat(*refs: Any) -> list[Any]:
        leaves, tree = tree_flatten(f(*refs))
        out_trees.append(tree)
        return leaves

    consts, body = hoist_consts(trace_to_jaxpr(flat, ref_avals, name="run_scoped"))
    n_consts, n_scratch = len(consts), len(ref_avals)
    scratch_first = [*range(n_consts, n_consts + n_scratch), *range(n_consts)]
    body = permute_jaxpr(body, scratch_first, range(len(body.out_avals)))
    outs = run_scoped_p.bind(*consts, jaxpr=body)
    return tree_unflatten(out_trees[0], outs)


def _as_ref_aval(aval: Any) -> AbstractRef:
    if is_ref(aval):
        return aval
    if isinstance(aval, ShapedArray):
        return AbstractRef(aval)
    try:
        return AbstractRef(ShapedArray(aval.shape, aval.dtype))
    except AttributeError:
        raise errors.EmberTypeError(
            f"run_scoped: a scratch Ref's type must have a shape and a dtype, got {aval!r}"
            f"{errors.where()}"
        ) from None
