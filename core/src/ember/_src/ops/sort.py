"""``sort``: sort several operands together along one axis, by their first ``num_keys``.

Keys compare lexicographically; floating keys use NumPy's order, with NaNs last (they are
equal to each other, so a stable sort keeps their order). The derivative of a sort is the
same permutation applied to the tangents: the jvp sorts an iota along with the operands and
gathers the tangents with the resulting permutation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.ops.gather_scatter import GatherDimensionNumbers, gather
from ember._src.ops.shape import bdim_to_front, compare_type, concatenate, expand_dims, iota

sort_p = Primitive("sort", multiple_results=True)


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


@rules.def_abstract_eval(sort_p)
def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
    shape = avals[0].shape
    for aval in avals:
        if aval.shape != shape:
            raise errors.EmberTypeError(
                f"sort: operands must share a shape, got {[a.shape for a in avals]}{errors.where()}"
            )
    return [a.update(weak_type=False) for a in avals]


@rules.def_reference(sort_p)
def _sort_reference(*operands, dimension, is_stable, num_keys):
    keys = [np.moveaxis(k, dimension, -1) for k in operands[:num_keys]]
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


@rules.def_lowering(sort_p)
def _sort_lowering(ctx, *operands, dimension, is_stable, num_keys):
    avals = list(ctx.avals_in)
    scalars = [ShapedArray((), a.dtype) for a in avals for _ in range(2)]
    scalar_bool = ShapedArray((), _BOOL)

    def compare(c, a, b, direction, dtype):
        attrs = {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": compare_type(dtype),
        }
        return c.op("stablehlo.compare", [a, b], scalar_bool, attrs)

    def less_than(c, *args):
        # args: (a0, b0, a1, b1, ...). Lexicographic "a < b" over the keys, NaNs last.
        result = None
        for k in reversed(range(num_keys)):
            a, b = args[2 * k], args[2 * k + 1]
            dtype = avals[k].dtype
            lt = compare(c, a, b, "LT", dtype)
            eq = compare(c, a, b, "EQ", dtype)
            if dtypes.is_inexact(dtype):
                a_nan = compare(c, a, a, "NE", dtype)
                b_nan = compare(c, b, b, "NE", dtype)
                not_a_nan = c.op("stablehlo.not", [a_nan], scalar_bool)
                lt = c.op(
                    "stablehlo.or",
                    [lt, c.op("stablehlo.and", [b_nan, not_a_nan], scalar_bool)],
                    scalar_bool,
                )
                eq = c.op(
                    "stablehlo.or",
                    [eq, c.op("stablehlo.and", [a_nan, b_nan], scalar_bool)],
                    scalar_bool,
                )
            if result is None:
                result = lt
            else:
                result = c.op(
                    "stablehlo.or",
                    [lt, c.op("stablehlo.and", [eq, result], scalar_bool)],
                    scalar_bool,
                )
        return [result]

    region = ctx.region(scalars, less_than)
    attrs = {"dimension": f"{dimension} : i64", "is_stable": "true" if is_stable else "false"}
    return ctx.op("stablehlo.sort", list(operands), avals, attrs, regions=[region])


@rules.def_jvp(sort_p)
def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    positions = iota(dtypes.int32, shape, dimension)
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
        index = permutation if d == dimension else iota(dtypes.int32, shape, d)
        columns.append(expand_dims(index, (-1,)))
    indices = concatenate(columns, len(shape))
    dn = GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=tuple(range(len(shape))),
        start_index_map=tuple(range(len(shape))),
    )
    return gather(x, indices, dn, (1,) * len(shape))


@rules.def_batch(sort_p)
def _sort_batch(vals, dims, *, dimension, is_stable, num_keys):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    fronts = [bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*fronts, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)
