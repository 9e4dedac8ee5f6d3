"""Reductions other than the sum: max, min, prod, all/any, argmax, argmin.

(``reduce_sum`` lives with the shape primitives, being the transpose of broadcasting.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval, tangent_aval
from ember._src.primitives import elementwise as ew
from ember._src.primitives.shape import (
    broadcast_in_dim,
    check_axes,
    compare_type,
    convert_element_type,
    lower_reduction,
    reduce_sum,
    reduced_shape,
)


def _reduce_abstract_eval(name: str, allow_bool: bool = True):
    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        check_axes(name, x, axes)
        if not allow_bool and x.dtype == dtypes.bool_:
            raise errors.EmberTypeError(f"{name} does not accept booleans{errors.where()}")
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


def _make_reduction(
    name: str, hlo_op: str, init: Callable[[np.dtype], Any], reference: Callable[..., Any]
) -> Primitive:
    primitive = Primitive(name)
    rules.def_abstract_eval(primitive)(_reduce_abstract_eval(name))
    rules.def_batch(primitive)(_reduce_batch(primitive))

    @rules.def_lowering(primitive)
    def lowering(ctx, x, *, axes):
        dtype = ctx.avals_in[0].dtype
        if dtype.kind == "c" and name in ("reduce_max", "reduce_min"):
            return _lower_complex_extremum(ctx, x, axes, "GT" if name == "reduce_max" else "LT")
        return lower_reduction(ctx, x, axes, hlo_op, init(dtype))

    @rules.def_reference(primitive)
    def reference_rule(x, *, axes):
        if name in ("reduce_max", "reduce_min"):
            # NumPy's max/min have no identity; XLA's fold starts from init (so an empty
            # reduction yields it, as jnp.max(..., initial=) relies on).
            return np.asarray(reference(x, axis=axes, initial=init(x.dtype)), dtype=x.dtype)
        return np.asarray(reference(x, axis=axes), dtype=x.dtype)

    return primitive


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


reduce_max_p = _make_reduction(
    "reduce_max", "stablehlo.maximum", lambda dt: _identity(dt, "max"), np.max
)
reduce_min_p = _make_reduction(
    "reduce_min", "stablehlo.minimum", lambda dt: _identity(dt, "min"), np.min
)
reduce_prod_p = _make_reduction("reduce_prod", "stablehlo.multiply", lambda dt: 1, np.prod)
reduce_and_p = _make_reduction("reduce_and", "stablehlo.and", lambda dt: True, np.all)
reduce_or_p = _make_reduction("reduce_or", "stablehlo.or", lambda dt: False, np.any)


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_max_p.bind(operand, axes=tuple(axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_min_p.bind(operand, axes=tuple(axes))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_prod_p.bind(operand, axes=tuple(axes))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_and_p.bind(operand, axes=tuple(axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_or_p.bind(operand, axes=tuple(axes))


for _p in (reduce_and_p, reduce_or_p):
    ew.def_zero_jvp(_p)


def _kept_dims(shape: tuple[int, ...], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(i for i in range(len(shape)) if i not in axes)


def _extremum_jvp(primitive: Primitive):
    @rules.def_jvp(primitive)
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axes=axes)
        if type(t) is Zero:
            return out, Zero(tangent_aval(get_aval(out)))
        # The derivative is shared equally among every position that attains the extremum.
        shape = get_aval(x).shape
        kept = _kept_dims(shape, axes)
        at_extremum = ew.eq(x, broadcast_in_dim(out, shape, kept))
        location = convert_element_type(at_extremum, get_aval(t).dtype)
        counts = reduce_sum(location, axes)
        return out, ew.div(reduce_sum(ew.mul(t, location), axes), counts)


_extremum_jvp(reduce_max_p)
_extremum_jvp(reduce_min_p)


@rules.def_jvp(reduce_prod_p)
def _reduce_prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    out = reduce_prod(x, axes)
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, reduce_sum(ew.mul(t, _product_of_others(x, axes)), axes)


def _product_of_others(x: Any, axes: Sequence[int]) -> Any:
    """For each element, the product of every other element along ``axes``.

    Dividing the full product by the element fails at zeros, so count zeros: with none, it is
    product / x; with exactly one, the product of the nonzeros at the zero and 0 elsewhere;
    with more, 0 everywhere.
    """
    shape = get_aval(x).shape
    kept = _kept_dims(shape, axes)
    is_zero = ew.eq(x, ew._like(x, 0))
    nonzero = ew.select_n(is_zero, x, ew._like(x, 1))
    product = broadcast_in_dim(reduce_prod(nonzero, axes), shape, kept)
    zeros = broadcast_in_dim(
        reduce_sum(convert_element_type(is_zero, dtypes.int32), axes), shape, kept
    )
    no_zero = ew.div(product, nonzero)
    one_zero = ew.select_n(is_zero, ew._like(x, 0), product)
    which = ew.min(zeros, ew._like(zeros, 2))
    zero = broadcast_in_dim(ew._like(x, 0), shape, ())
    return ew.select_n(which, no_zero, one_zero, zero)


# --------------------------------------------------------------------------------------------
# argmax / argmin

argmax_p = Primitive("argmax")
argmin_p = Primitive("argmin")


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    return argmax_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    return argmin_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))


def _make_arg_reduction(primitive: Primitive, direction: str, numpy_fn: Callable[..., Any]):
    name = primitive.name

    @rules.def_abstract_eval(primitive)
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

    ew.def_zero_jvp(primitive)
    rules.def_batch(primitive)(_reduce_batch(primitive))

    @rules.def_reference(primitive)
    def reference_rule(x, *, axes, index_dtype):
        return numpy_fn(x, axis=axes[0]).astype(index_dtype)

    @rules.def_lowering(primitive)
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


_make_arg_reduction(argmax_p, "GT", np.argmax)
_make_arg_reduction(argmin_p, "LT", np.argmin)
