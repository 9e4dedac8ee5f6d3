"""``sort``: sort several operands together along one axis, by their first ``num_keys``.

Keys compare lexicographically; floating keys use NumPy's order, with NaNs last (they are
equal to each other, so a stable sort keeps their order). A complex key is two keys, its real
part then its imaginary part, each with NaNs last (JAX's order: ``1+nanj`` sorts before
``2+0j``, where NumPy would put every complex value holding a NaN last).

The derivative of a sort is the same permutation applied to the tangents: the jvp sorts an
iota_along along with the operands and gathers the tangents with the resulting permutation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives import sharding_rules
from ember._src.primitives.gather_scatter import GatherDimensionNumbers, gather
from ember._src.primitives.shape import bdim_to_front, compare_type, expand_dims, iota_along
from ember._src.primitives.slicing import concatenate


def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
    shape = avals[0].shape
    for aval in avals:
        if aval.shape != shape:
            raise errors.EmberTypeError(
                f"sort: operands must share a shape, got {[a.shape for a in avals]}{errors.where()}"
            )
    return [a.update(weak_type=False) for a in avals]


def _reference_keys(key: np.ndarray) -> list[np.ndarray]:
    """``key`` as the real keys it compares by: a complex key splits into real, imaginary."""
    if key.dtype.kind == "c":
        return [key.real, key.imag]
    return [key]


def _sort_reference(*operands, dimension, is_stable, num_keys):
    keys = [
        part for k in operands[:num_keys] for part in _reference_keys(np.moveaxis(k, dimension, -1))
    ]
    # np.lexsort: the last key is the primary one; it is stable and puts NaNs last.
    flat_keys = [k.reshape(-1, k.shape[-1]) for k in keys]
    rows = [np.lexsort([fk[r] for fk in reversed(flat_keys)]) for r in range(flat_keys[0].shape[0])]
    order = np.stack(rows).reshape(keys[0].shape) if rows else np.zeros(keys[0].shape, int)
    results = []
    for x in operands:
        moved = np.moveaxis(x, dimension, -1)
        results.append(np.moveaxis(np.take_along_axis(moved, order, -1), -1, dimension))
    return results


_BOOL = np.dtype(np.bool_)


def _sort_lowering(ctx, *operands, dimension, is_stable, num_keys):
    avals = list(ctx.avals_in)
    scalars = [ShapedArray((), a.dtype) for a in avals for _ in range(2)]
    region = ctx.region(scalars, lambda c, *args: [_less_than(c, args, avals, num_keys)])
    attrs = {"dimension": f"{dimension} : i64", "is_stable": "true" if is_stable else "false"}
    return ctx.op("stablehlo.sort", list(operands), avals, attrs, regions=[region])


_SCALAR_BOOL = ShapedArray((), _BOOL)


def _compare(c, a, b, direction: str, dtype: np.dtype):
    attrs = {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": compare_type(dtype),
    }
    return c.op("stablehlo.compare", [a, b], _SCALAR_BOOL, attrs)


def _logical(c, op: str, *args):
    return c.op(f"stablehlo.{op}", list(args), _SCALAR_BOOL)


def _key_pairs(c, args, avals, num_keys) -> list[tuple[Any, Any, np.dtype]]:
    """The comparator's (a, b, dtype) per real key: a complex key gives its real part, then
    its imaginary part (XLA has no ordered comparison of complex numbers)."""
    pairs = []
    for k in range(num_keys):
        a, b = args[2 * k], args[2 * k + 1]
        dtype = avals[k].dtype
        if dtype.kind != "c":
            pairs.append((a, b, dtype))
            continue
        part = ShapedArray((), dtypes.real_dtype(dtype))
        for op in ("real", "imag"):
            pairs.append(
                (c.op(f"stablehlo.{op}", [a], part), c.op(f"stablehlo.{op}", [b], part), part.dtype)
            )
    return pairs


def _less_than(c, args, avals, num_keys):
    """Lexicographic "a < b" over the keys (args: a0, b0, a1, b1, ...), NaNs last."""
    result = None
    for a, b, dtype in reversed(_key_pairs(c, args, avals, num_keys)):
        lt = _compare(c, a, b, "LT", dtype)
        eq = _compare(c, a, b, "EQ", dtype)
        if dtypes.is_inexact(dtype):
            a_nan = _compare(c, a, a, "NE", dtype)
            b_nan = _compare(c, b, b, "NE", dtype)
            lt = _logical(c, "or", lt, _logical(c, "and", b_nan, _logical(c, "not", a_nan)))
            eq = _logical(c, "or", eq, _logical(c, "and", a_nan, b_nan))
        result = lt if result is None else _logical(c, "or", lt, _logical(c, "and", eq, result))
    return result


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    positions = iota_along(dtypes.int32, shape, dimension)
    *outs, permutation = sort_p.bind(
        *primals, positions, dimension=dimension, is_stable=is_stable, num_keys=num_keys
    )
    return outs, [
        Zero(t.aval) if type(t) is Zero else _permute(t, permutation, dimension) for t in tangents
    ]


def _permute(x: Any, permutation: Any, dimension: int) -> Any:
    """``take_along_axis(x, permutation, dimension)`` as one gather."""
    shape = get_aval(x).shape
    columns = []
    for d in range(len(shape)):
        index = permutation if d == dimension else iota_along(dtypes.int32, shape, d)
        columns.append(expand_dims(index, (-1,)))
    indices = concatenate(columns, len(shape))
    dn = GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=tuple(range(len(shape))),
        start_index_map=tuple(range(len(shape))),
    )
    return gather(x, indices, dn, (1,) * len(shape))


def _sort_batch(vals, dims, *, dimension, is_stable, num_keys):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    fronts = [bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*fronts, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


def _sort_sharding(*avals, dimension, is_stable, num_keys):
    what = "sort"
    mesh = sharding_rules.common_mesh(what, avals)
    for aval in avals:
        sharding_rules.require_unsplit(what, avals, aval, [dimension], "sort orders along it")
    columns = zip(*(sharding_rules.entries(a) for a in avals))
    typed = sharding_rules.build(
        what, avals, mesh, [sharding_rules.consensus(what, avals, c) for c in columns]
    )
    return [typed] * len(avals)


sort_p = rules.define_primitive(
    "sort",
    sharding=_sort_sharding,
    abstract_eval=_sort_abstract_eval,
    jvp=_sort_jvp,
    batch=_sort_batch,
    lowering=_sort_lowering,
    reference=_sort_reference,
    multiple_results=True,
)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort ``operand`` (one array or a sequence) along ``dimension`` by the first
    ``num_keys`` of them; returns the same kind of value it was given."""
    single = not isinstance(operand, (tuple, list))
    operands = [operand] if single else list(operand)
    if not operands:
        raise ValueError("sort needs at least one operand")
    ndim = get_aval(operands[0]).ndim
    if ndim == 0:
        raise errors.EmberTypeError(f"sort needs arrays of rank >= 1{errors.where()}")
    if not -ndim <= dimension < ndim:
        raise np.exceptions.AxisError(f"sort: dimension {dimension} out of range for rank {ndim}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} with {len(operands)} operands")
    outs = sort_p.bind(
        *operands, dimension=dimension % ndim, is_stable=bool(is_stable), num_keys=int(num_keys)
    )
    return outs[0] if single else tuple(outs)


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True):
    return sort((keys, values), dimension, is_stable, num_keys=1)
