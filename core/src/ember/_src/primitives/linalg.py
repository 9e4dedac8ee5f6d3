"""Contractions: ``dot_general``, the primitive behind dot, matmul, einsum and tensordot."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_tangents
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives import sharding_rules
from ember._src.primitives.shape import convert_element_type, transpose, typed_like
from ember._src.primitives.sharding_constraint import laid_out, typed_out_sharding
from ember._src.runtime.sharding import NamedSharding, PartitionSpec

DimensionNumbers = tuple[
    tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]
]

_PRECISIONS = {None: "DEFAULT", "default": "DEFAULT", "high": "HIGH", "highest": "HIGHEST"}


def _canonical_precision(precision: Any) -> str | None:
    if precision is None:
        return None
    key = str(getattr(precision, "name", precision)).lower()
    if key not in _PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use 'default', 'high' or 'highest'")
    return key


def _free_dims(ndim: int, contract: Sequence[int], batch: Sequence[int]) -> list[int]:
    used = set(contract) | set(batch)
    return [i for i in range(ndim) if i not in used]


# ``out_sharding``: the result's typed sharding when the caller chose it (None: the rule's).


def _dot_general_abstract_eval(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    # A model traces the same few contractions over and over: their checks ran once.
    key = (lhs, rhs, dimension_numbers, preferred_element_type)
    found = _contraction_avals.get(key)
    if found is None:
        found = _contraction_aval(lhs, rhs, dimension_numbers, preferred_element_type)
        if len(_contraction_avals) < 1024:
            _contraction_avals[key] = found
    return found


_contraction_avals: dict[tuple, ShapedArray] = {}


def _contraction_aval(lhs, rhs, dimension_numbers, preferred_element_type) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers

    def fail(message: str) -> errors.EmberTypeError:
        return errors.EmberTypeError(
            f"dot_general of {lhs.str_short()} and {rhs.str_short()} with dimension_numbers="
            f"{dimension_numbers}: {message}{errors.where()}"
        )

    if lhs.dtype != rhs.dtype:
        raise fail(f"operands must share a dtype (got {lhs.dtype} and {rhs.dtype})")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise fail("contracting and batch dimension lists must pair up")
    for dims, aval, side in ((lc + lb, lhs, "lhs"), (rc + rb, rhs, "rhs")):
        if len(set(dims)) != len(dims) or any(not 0 <= d < aval.ndim for d in dims):
            raise fail(f"invalid or repeated {side} dimensions")
    for a, b in itertools.chain(zip(lc, rc), zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise fail(
                f"dimension {a} of lhs (size {lhs.shape[a]}) and {b} of rhs (size "
                f"{rhs.shape[b]}) must match"
            )
    batch = tuple(lhs.shape[d] for d in lb)
    lhs_free = tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
    rhs_free = tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb))
    dtype = preferred_element_type if preferred_element_type is not None else lhs.dtype
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(batch + lhs_free + rhs_free, dtype, weak)


def _dot_general_jvp(primals, tangents, **params):
    lhs, rhs = primals
    t_lhs, t_rhs = tangents
    out = dot_general_p.bind(lhs, rhs, **params)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(t_lhs) is Zero else dot_general_p.bind(t_lhs, rhs, **params)
    b = Zero(out_aval) if type(t_rhs) is Zero else dot_general_p.bind(lhs, t_rhs, **params)
    return out, add_tangents(a, b)


def _ranges_like(*lists: Sequence[int]) -> list[list[int]]:
    start, result = 0, []
    for items in lists:
        result.append(list(range(start, start + len(items))))
        start += len(items)
    return result


def _transpose_lhs(ct, x_aval, y, dimension_numbers, precision, preferred, swap_ans=False):
    """Cotangent of the lhs of ``dot_general(x, y)``: contract ct with y, then reorder."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _free_dims(x_aval.ndim, x_contract, x_batch)
    y_kept = _free_dims(get_aval(y).ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    result = dot_general_p.bind(
        ct,
        y,
        dimension_numbers=dims,
        precision=precision,
        preferred_element_type=preferred,
        out_sharding=_cotangent_sharding(x_aval, out_axes, ct, y),
    )
    result = transpose(result, tuple(int(a) for a in out_axes))
    if get_aval(result).dtype != x_aval.dtype:
        result = convert_element_type(result, x_aval.dtype)
    # Laid out as typed: a contraction typed whole is not otherwise kept whole.
    return typed_like(result, x_aval)


def _cotangent_sharding(x_aval, out_axes, ct, y) -> Any:
    """The cotangent of an operand is typed as the operand: the contraction giving it (whose
    result is then transposed by ``out_axes``) is told so, since a contraction over split
    dimensions is otherwise ambiguous."""
    mesh = sharding_rules.common_mesh("dot_general", (x_aval, get_aval(ct), get_aval(y)))
    if mesh is None:
        return None
    wanted = sharding_rules.entries(x_aval)
    before = [None] * len(wanted)
    for k, axis in enumerate(out_axes):
        before[int(axis)] = wanted[k]
    return NamedSharding(mesh, PartitionSpec(*before))


def _dot_general_transpose(
    ct, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    if type(ct) is Zero:
        return [None, None]
    ct_dtype = get_aval(ct).dtype
    if is_undefined(lhs):
        preferred = None if preferred_element_type is None else lhs.aval.dtype
        if get_aval(rhs).dtype != ct_dtype:
            ct = convert_element_type(ct, get_aval(rhs).dtype)
        return [
            _transpose_lhs(ct, lhs.aval, rhs, dimension_numbers, precision, preferred),
            None,
        ]
    (lc, rc), (lb, rb) = dimension_numbers
    swapped = ((rc, lc), (rb, lb))
    preferred = None if preferred_element_type is None else rhs.aval.dtype
    if get_aval(lhs).dtype != ct_dtype:
        ct = convert_element_type(ct, get_aval(lhs).dtype)
    return [
        None,
        _transpose_lhs(ct, rhs.aval, lhs, swapped, precision, preferred, swap_ans=True),
    ]


def _dot_general_batch(
    vals, dims, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    """The mapped axis stays where it is in each operand (moving it would be a transpose of
    a whole operand): mapped on both sides it becomes the contraction's first batch
    dimension, on one side a free dimension of that side. The result's mapped axis is where
    the contraction puts it: batch dimensions first, then lhs's free dimensions in order,
    then rhs's."""
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    params = {"precision": precision, "preferred_element_type": preferred_element_type}

    def bind(numbers: DimensionNumbers, out_dim: int) -> tuple[Any, int]:
        # A chosen result sharding leaves the batch dimension (at out_dim) whole.
        chosen = _with_whole_dim(out_sharding, out_dim)
        out = dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, out_sharding=chosen, **params)
        return out, out_dim

    if ld is not not_mapped and rd is not not_mapped:
        numbers = (
            (_past(lc, ld), _past(rc, rd)),
            ((ld, *_past(lb, ld)), (rd, *_past(rb, rd))),
        )
        return bind(numbers, 0)
    if ld is not not_mapped:
        numbers = ((_past(lc, ld), rc), (_past(lb, ld), rb))
        free_before = len(_free_dims(ld, [d for d in lc if d < ld], [d for d in lb if d < ld]))
        return bind(numbers, len(lb) + free_before)
    numbers = ((lc, _past(rc, rd)), (lb, _past(rb, rd)))
    lhs_free = len(_free_dims(get_aval(lhs).ndim, lc, lb))
    free_before = len(_free_dims(rd, [d for d in rc if d < rd], [d for d in rb if d < rd]))
    return bind(numbers, len(lb) + lhs_free + free_before)


def _past(axes: Sequence[int], inserted: int) -> tuple[int, ...]:
    """``axes`` of an operand numbered again after a (mapped) axis is inserted at
    ``inserted``."""
    return tuple(a + 1 if a >= inserted else a for a in axes)


def _with_whole_dim(chosen: Any, dim: int) -> Any:
    """A chosen typed sharding with a whole dimension inserted at ``dim`` (None: none)."""
    if chosen is None:
        return None
    entries = list(chosen.spec)
    entries += [None] * (dim - len(entries))
    entries.insert(dim, None)
    return NamedSharding(chosen.mesh, PartitionSpec(*entries))


def _dims_text(name: str, dims: Sequence[int]) -> str | None:
    if not dims:
        return None
    return f"{name} = [{', '.join(str(d) for d in dims)}]"


def _dot_general_lowering(
    ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    (lc, rc), (lb, rb) = dimension_numbers
    fields = [
        _dims_text("lhs_batching_dimensions", lb),
        _dims_text("rhs_batching_dimensions", rb),
        _dims_text("lhs_contracting_dimensions", lc),
        _dims_text("rhs_contracting_dimensions", rc),
    ]
    numbers = "#stablehlo.dot<" + ", ".join(f for f in fields if f) + ">"
    level = _PRECISIONS[precision]
    attrs = {
        "dot_dimension_numbers": numbers,
        "precision_config": f"[#stablehlo<precision {level}>, #stablehlo<precision {level}>]",
    }
    return ctx.op("stablehlo.dot_general", [lhs, rhs], ctx.avals_out[0], attrs)


def _dot_general_reference(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    (lc, rc), (lb, rb) = dimension_numbers
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_names = [next(letters) for _ in range(lhs.ndim)]
    rhs_names = [next(letters) for _ in range(rhs.ndim)]
    for a, b in itertools.chain(zip(lc, rc), zip(lb, rb)):
        rhs_names[b] = lhs_names[a]
    batch = [lhs_names[d] for d in lb]
    lhs_free = [lhs_names[d] for d in _free_dims(lhs.ndim, lc, lb)]
    rhs_free = [rhs_names[d] for d in _free_dims(rhs.ndim, rc, rb)]
    spec = f"{''.join(lhs_names)},{''.join(rhs_names)}->{''.join(batch + lhs_free + rhs_free)}"
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    # Products and sums happen in a type at least as wide as the result, as XLA accumulates:
    # float64 for every real float (einsum takes no bfloat16 and float16 loses precision),
    # the preferred integer type for narrower integer operands (int8 would wrap first).
    if dtypes.is_float(out_dtype):
        compute = np.float64
    elif out_dtype.kind == "c":
        compute = np.complex128
    else:
        compute = out_dtype
    return np.einsum(spec, lhs.astype(compute), rhs.astype(compute)).astype(out_dtype)


def _dot_general_sharding(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    """Batch dimensions agree; free dimensions keep their splits; a split contracting
    dimension leaves the result ambiguous (summed across devices, or left split?)."""
    what = "dot_general"
    avals = (lhs, rhs)
    mesh = sharding_rules.common_mesh(what, avals)
    # Training traces the same few contractions over and over: remember their types.
    key = (lhs.typed_sharding, rhs.typed_sharding, lhs.ndim, rhs.ndim, dimension_numbers)
    found = _contraction_types.get(key, key)
    if found is not key:
        return found
    (lc, rc), (lb, rb) = dimension_numbers
    ls, rs = sharding_rules.entries(lhs), sharding_rules.entries(rhs)
    for a, b in zip(lc, rc):
        if ls[a] is not None or rs[b] is not None:
            raise sharding_rules.fail(
                what,
                avals,
                f"contracting dimensions are split ({ls[a]!r} and {rs[b]!r}), so how the result "
                f"is split is ambiguous",
                sharding_rules.AMBIGUOUS_FIX,
            )
    out = [sharding_rules.consensus(what, avals, (ls[a], rs[b])) for a, b in zip(lb, rb)]
    out += [ls[d] for d in _free_dims(lhs.ndim, lc, lb)]
    out += [rs[d] for d in _free_dims(rhs.ndim, rc, rb)]
    typed = sharding_rules.build(what, avals, mesh, out)
    if len(_contraction_types) < 1024:
        _contraction_types[key] = typed
    return typed


_contraction_types: dict[tuple, Any] = {}


dot_general_p = rules.define_primitive(
    "dot_general",
    sharding=_dot_general_sharding,
    abstract_eval=_dot_general_abstract_eval,
    jvp=_dot_general_jvp,
    transpose=_dot_general_transpose,
    batch=_dot_general_batch,
    lowering=_dot_general_lowering,
    reference=_dot_general_reference,
)


def dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """Contract ``lhs`` and ``rhs``: ``((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.

    The result's axes are the batch axes, then lhs's free axes, then rhs's free axes.
    """
    (lc, rc), (lb, rb) = dimension_numbers
    numbers = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    preferred = (
        None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    )
    typed = None
    if out_sharding is not None:
        ndim = len(_dot_general_out_shape(lhs, rhs, numbers))
        typed = typed_out_sharding(out_sharding, ndim, "dot_general", (lhs, rhs))
    out = dot_general_p.bind(
        lhs,
        rhs,
        dimension_numbers=numbers,
        precision=_canonical_precision(precision),
        preferred_element_type=preferred,
        out_sharding=typed,
    )
    return out if out_sharding is None else laid_out(out, out_sharding)


def _dot_general_out_shape(lhs: Any, rhs: Any, numbers: DimensionNumbers) -> tuple:
    (lc, rc), (lb, rb) = numbers
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    return (
        tuple(lhs_shape[d] for d in lb)
        + tuple(lhs_shape[d] for d in _free_dims(len(lhs_shape), lc, lb))
        + tuple(rhs_shape[d] for d in _free_dims(len(rhs_shape), rc, rb))
    )
