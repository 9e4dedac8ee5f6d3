"""Reductions other than the sum: max, min, prod, all/any, argmax, argmin.

(``reduce_sum`` lives with the shape primitives, being the transpose of broadcasting.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval, tangent_aval
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import div, min as min_, mul
from ember._src.primitives.comparisons import eq
from ember._src.primitives.elementwise import scalar_like, zero_jvp
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    check_axes,
    compare_type,
    convert_element_type,
    lower_reduction,
    reduce_sum,
    reduced_shape,
)


def _reduce_abstract_eval(primitive: Primitive):
    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        check_axes(primitive.name, x, axes)
        return ShapedArray(reduced_shape(x.shape, axes), x.dtype, x.weak_type)

    return abstract_eval


def _reduce_batch(primitive: Primitive):
    def batch(vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_dim = d - sum(a < d for a in new_axes)
        return primitive.bind(x, axes=new_axes, **params), out_dim

    return batch


def _identity(dtype: np.dtype, which: str) -> Any:
    """The identity element of max (which="max") or min for ``dtype``."""
    if dtype == dtypes.bool_:
        return which != "max"
    if dtypes.is_float(dtype):
        return -np.inf if which == "max" else np.inf
    if dtype.kind == "c":  # complex numbers order lexicographically: (real, imaginary)
        return complex(-np.inf, -np.inf) if which == "max" else complex(np.inf, np.inf)
    info = np.iinfo(dtype)
    return info.min if which == "max" else info.max


def extreme_value(dtype: np.dtype, largest: bool) -> Any:
    """The largest (or smallest) value of ``dtype``: +-inf for inexact types, as a Python
    scalar (largest: the identity of min; smallest: that of max)."""
    if dtypes.is_inexact(dtype):
        return np.inf if largest else -np.inf
    if dtype == dtypes.bool_:
        return largest
    info = np.iinfo(dtype)
    return info.max if largest else info.min


def _reduction_lowering(hlo_op: str, init: Callable[[np.dtype], Any]):
    def lowering(ctx, x, *, axes):
        return lower_reduction(ctx, x, axes, hlo_op, init(ctx.avals_in[0].dtype))

    return lowering


def _reduction_reference(numpy_fn: Callable[..., Any]):
    def reference(x, *, axes):
        return np.asarray(numpy_fn(x, axis=axes), dtype=x.dtype)

    return reference


def _reduction_rules(lowering, reference) -> dict[str, Any]:
    """The rules of a reduction over ``axes`` (the jvp apart)."""
    return {
        "abstract_eval": rules.per_primitive(_reduce_abstract_eval),
        "batch": rules.per_primitive(_reduce_batch),
        "lowering": lowering,
        "reference": reference,
    }


def _kept_dims(shape: tuple[int, ...], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(i for i in range(len(shape)) if i not in axes)


# --------------------------------------------------------------------------------------------
# reduce_max, reduce_min


def _extremum_lowering(hlo_op: str, which: str):
    def lowering(ctx, x, *, axes):
        dtype = ctx.avals_in[0].dtype
        if dtype.kind == "c":
            return _lower_complex_extremum(ctx, x, axes, "GT" if which == "max" else "LT")
        return lower_reduction(ctx, x, axes, hlo_op, _identity(dtype, which))

    return lowering


def _lower_complex_extremum(ctx, x, axes: Sequence[int], direction: str) -> Any:
    """reduce_max/min of complex numbers, ordered by real part then imaginary part (XLA's
    CPU maximum and minimum of complex numbers look at the real parts only); NaNs propagate
    as for real numbers (JAX skips them)."""
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    scalar = ShapedArray((), in_aval.dtype)
    part = ShapedArray((), dtypes.real_dtype(in_aval.dtype))
    flag = ShapedArray((), dtypes.bool_)

    def compare(c, a, b, how):
        attrs = {
            "comparison_direction": f"#stablehlo<comparison_direction {how}>",
            "compare_type": compare_type(part.dtype),
        }
        return c.op("stablehlo.compare", [a, b], flag, attrs)

    def body(c, a, b):
        re_a, re_b = (c.op("stablehlo.real", [v], part) for v in (a, b))
        im_a, im_b = (c.op("stablehlo.imag", [v], part) for v in (a, b))
        tie = c.op(
            "stablehlo.and", [compare(c, re_a, re_b, "EQ"), compare(c, im_a, im_b, direction)], flag
        )
        keep_a = c.op("stablehlo.or", [compare(c, re_a, re_b, direction), tie], flag)
        # A NaN wins, so that it propagates whatever the order of the fold (as NumPy's).
        a_nan = c.op(
            "stablehlo.or", [compare(c, re_a, re_a, "NE"), compare(c, im_a, im_a, "NE")], flag
        )
        keep_a = c.op("stablehlo.or", [keep_a, a_nan], flag)
        return [c.op("stablehlo.select", [keep_a, a, b], scalar)]

    which = "max" if direction == "GT" else "min"
    init_value = ctx.constant(_identity(in_aval.dtype, which), scalar)
    region = ctx.region([scalar, scalar], body)
    attrs = {"dimensions": f"array<i64: {', '.join(str(a) for a in axes)}>"}
    return ctx.op("stablehlo.reduce", [x, init_value], out_aval, attrs, regions=[region])


def _extremum_reference(numpy_fn: Callable[..., Any], which: str):
    def reference(x, *, axes):
        # NumPy's max/min have no identity; XLA's fold starts from init (so an empty
        # reduction yields it, as jnp.max(..., initial=) relies on).
        initial = _identity(x.dtype, which)
        return np.asarray(numpy_fn(x, axis=axes, initial=initial), dtype=x.dtype)

    return reference


def _extremum_jvp(primitive: Primitive):
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axes=axes)
        if type(t) is Zero:
            return out, Zero(tangent_aval(get_aval(out)))
        # The derivative is shared equally among every position that attains the extremum.
        shape = get_aval(x).shape
        kept = _kept_dims(shape, axes)
        at_extremum = eq(x, broadcast_in_dim(out, shape, kept))
        location = convert_element_type(at_extremum, get_aval(t).dtype)
        counts = reduce_sum(location, axes)
        return out, div(reduce_sum(mul(t, location), axes), counts)

    return jvp


reduce_max_p = rules.define_primitive(
    "reduce_max",
    sharding=sharding_rules.reduction,
    **_reduction_rules(
        _extremum_lowering("stablehlo.maximum", "max"), _extremum_reference(np.max, "max")
    ),
    jvp=rules.per_primitive(_extremum_jvp),
)


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_max_p.bind(operand, axes=tuple(axes))


reduce_min_p = rules.define_primitive(
    "reduce_min",
    sharding=sharding_rules.reduction,
    **_reduction_rules(
        _extremum_lowering("stablehlo.minimum", "min"), _extremum_reference(np.min, "min")
    ),
    jvp=rules.per_primitive(_extremum_jvp),
)


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_min_p.bind(operand, axes=tuple(axes))


# --------------------------------------------------------------------------------------------
# reduce_prod


def _reduce_prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    out = reduce_prod(x, axes)
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, reduce_sum(mul(t, _product_of_others(x, axes)), axes)


def _product_of_others(x: Any, axes: Sequence[int]) -> Any:
    """For each element, the product of every other element along ``axes``.

    Dividing the full product by the element fails at zeros, so count zeros: with none, it is
    product / x; with exactly one, the product of the nonzeros at the zero and 0 elsewhere;
    with more, 0 everywhere.
    """
    shape = get_aval(x).shape
    kept = _kept_dims(shape, axes)
    is_zero = eq(x, scalar_like(x, 0))
    nonzero = select_n(is_zero, x, scalar_like(x, 1))
    product = broadcast_in_dim(reduce_prod(nonzero, axes), shape, kept)
    zeros = broadcast_in_dim(
        reduce_sum(convert_element_type(is_zero, dtypes.int32), axes), shape, kept
    )
    no_zero = div(product, nonzero)
    one_zero = select_n(is_zero, scalar_like(x, 0), product)
    which = min_(zeros, scalar_like(zeros, 2))
    zero = broadcast_in_dim(scalar_like(x, 0), shape, ())
    return select_n(which, no_zero, one_zero, zero)


reduce_prod_p = rules.define_primitive(
    "reduce_prod",
    sharding=sharding_rules.reduction,
    **_reduction_rules(
        _reduction_lowering("stablehlo.multiply", lambda dt: 1), _reduction_reference(np.prod)
    ),
    jvp=_reduce_prod_jvp,
)


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_prod_p.bind(operand, axes=tuple(axes))


# --------------------------------------------------------------------------------------------
# reduce_and, reduce_or

reduce_and_p = rules.define_primitive(
    "reduce_and",
    sharding=sharding_rules.reduction,
    **_reduction_rules(
        _reduction_lowering("stablehlo.and", lambda dt: True), _reduction_reference(np.all)
    ),
    jvp=zero_jvp,
)


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_and_p.bind(operand, axes=tuple(axes))


reduce_or_p = rules.define_primitive(
    "reduce_or",
    sharding=sharding_rules.reduction,
    **_reduction_rules(
        _reduction_lowering("stablehlo.or", lambda dt: False), _reduction_reference(np.any)
    ),
    jvp=zero_jvp,
)


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_or_p.bind(operand, axes=tuple(axes))


# --------------------------------------------------------------------------------------------
# argmax / argmin


def _arg_reduction_abstract_eval(primitive: Primitive):
    name = primitive.name

    def abstract_eval(x, *, axes, index_dtype):
        check_axes(name, x, axes)
        if x.dtype.kind == "c":  # as in JAX: complex numbers have no order to take it in
            raise errors.EmberTypeError(
                f"{name} does not accept complex operands, got {dtypes.short_name(x.dtype)}"
                f"{errors.where()}"
            )
        (axis,) = axes
        if x.shape[axis] == 0:
            raise ValueError(f"{name} of an empty axis {axis} (shape {x.shape}){errors.where()}")
        return ShapedArray(reduced_shape(x.shape, axes), index_dtype)

    return abstract_eval


def _arg_reduction_reference(numpy_fn: Callable[..., Any]):
    def reference(x, *, axes, index_dtype):
        return numpy_fn(x, axis=axes[0]).astype(index_dtype)

    return reference


def _arg_reduction_lowering(direction: str):
    """The index of the extremum (``direction`` GT: max, LT: min) along the one axis."""

    def lowering(ctx, x, *, axes, index_dtype):
        (axis,) = axes
        in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
        value_scalar = ShapedArray((), in_aval.dtype)
        index_scalar = ShapedArray((), index_dtype)
        indices = ctx.op(
            "stablehlo.iota",
            [],
            ShapedArray(in_aval.shape, index_dtype),
            {"iota_dimension": f"{axis} : i64"},
        )
        identity = _identity(in_aval.dtype, "max" if direction == "GT" else "min")
        init_value = ctx.constant(identity, value_scalar)
        init_index = ctx.constant(0, index_scalar)
        bool_scalar = ShapedArray((), dtypes.bool_)

        def compare(c, a, b, how, dtype):
            return c.op(
                "stablehlo.compare",
                [a, b],
                bool_scalar,
                {
                    "comparison_direction": f"#stablehlo<comparison_direction {how}>",
                    "compare_type": compare_type(dtype),
                },
            )

        def body(c, a_val, a_idx, b_val, b_idx):
            # Prefer a if it is more extreme or NaN; on ties (or both NaN) the lower index.
            better = compare(c, a_val, b_val, direction, in_aval.dtype)
            if dtypes.is_float(in_aval.dtype):
                a_nan = compare(c, a_val, a_val, "NE", in_aval.dtype)
                better = c.op("stablehlo.or", [better, a_nan], bool_scalar)
            same = compare(c, a_val, b_val, "EQ", in_aval.dtype)
            lower = compare(c, a_idx, b_idx, "LT", index_dtype)
            tie = c.op("stablehlo.and", [same, lower], bool_scalar)
            pick_index = c.op("stablehlo.or", [better, tie], bool_scalar)
            value = c.op("stablehlo.select", [better, a_val, b_val], value_scalar)
            index = c.op("stablehlo.select", [pick_index, a_idx, b_idx], index_scalar)
            return [value, index]

        region = ctx.region([value_scalar, index_scalar, value_scalar, index_scalar], body)
        _, result = ctx.op(
            "stablehlo.reduce",
            [x, indices, init_value, init_index],
            [ShapedArray(out_aval.shape, in_aval.dtype), out_aval],
            {"dimensions": f"array<i64: {axis}>"},
            regions=[region],
        )
        return result

    return lowering


argmax_p = rules.define_primitive(
    "argmax",
    sharding=sharding_rules.reduction,
    abstract_eval=rules.per_primitive(_arg_reduction_abstract_eval),
    jvp=zero_jvp,
    batch=rules.per_primitive(_reduce_batch),
    lowering=_arg_reduction_lowering("GT"),
    reference=_arg_reduction_reference(np.argmax),
)


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    return argmax_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))


argmin_p = rules.define_primitive(
    "argmin",
    sharding=sharding_rules.reduction,
    abstract_eval=rules.per_primitive(_arg_reduction_abstract_eval),
    jvp=zero_jvp,
    batch=rules.per_primitive(_reduce_batch),
    lowering=_arg_reduction_lowering("LT"),
    reference=_arg_reduction_reference(np.argmin),
)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    return argmin_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))
