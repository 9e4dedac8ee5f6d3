"""Reductions: sum, prod, mean, var, std, max, min, argmax, argmin, all, any."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy.elementwise import where as select
from ember._src.numpy.operands import (
    as_operand,
    canonicalize_axes,
    canonicalize_axis,
    cast,
    check_dtype_arg,
    check_no_out,
    prepare,
)
from ember._src.primitives import reduce as lax_reduce
from ember._src.primitives.arithmetic import add, div, max as max_, min as min_, mul, sub
from ember._src.primitives.math_functions import sqrt
from ember._src.primitives.shape import broadcast_to_shape, expand_dims, reduce_sum, reshape
from ember._src.transforms.jit import jit


def _prepare(a: Any, axis: Any, dtype: Any, name: str, *, upcast_small_ints: bool):
    a = as_operand(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    dtype = check_dtype_arg(dtype)
    if dtype is None and upcast_small_ints:
        # NumPy sums bools and small integers in the default integer type.
        if aval.dtype == dtypes.bool_ or (
            aval.dtype.kind in "iu" and aval.dtype.itemsize < dtypes.default_int().itemsize
        ):
            dtype = (
                dtypes.default_int()
                if aval.dtype.kind != "u"
                else np.dtype(f"uint{dtypes.default_int().itemsize * 8}")
            )
    if dtype is not None and dtype != aval.dtype:
        a = cast(a, dtype)
    return a, axes


def computation_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a sum-like reduction of ``dtype`` accumulates in: float32 for the 16-bit
    floats (whose 11 or 8 significant bits lose every small addend once the running total
    is large, and whose range ends at 65504 for float16), the dtype itself otherwise. As in
    JAX, the result is cast back to ``dtype``."""
    if dtype.itemsize == 2 and dtypes.is_inexact(dtype):
        return dtypes.float32
    return dtype


def _upcast(a: Any) -> tuple[Any, np.dtype]:
    """``a`` in its computation dtype, and the dtype to cast the result back to."""
    dtype = get_aval(a).dtype
    wide = computation_dtype(dtype)
    return (a if wide == dtype else cast(a, wide)), dtype


def _cast_back(result: Any, dtype: np.dtype) -> Any:
    return result if get_aval(result).dtype == dtype else cast(result, dtype)


def _keep(result: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    return expand_dims(result, axes) if keepdims and axes else result


def _apply_where(a: Any, where: Any, identity: Any) -> Any:
    if where is None:
        return a
    return select(where, a, identity)


def sum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
    promote_integers: bool = True,
) -> Any:
    check_no_out(out, "jnp.sum")
    a, axes = _prepare(a, axis, dtype, "sum", upcast_small_ints=promote_integers)
    a, result_dtype = _upcast(_apply_where(a, where, 0))
    result = reduce_sum(a, axes)
    if initial is not None:
        result = add(result, cast(initial, get_aval(result).dtype))
    return _keep(_cast_back(result, result_dtype), axes, keepdims)


def prod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
    promote_integers: bool = True,
) -> Any:
    check_no_out(out, "jnp.prod")
    a, axes = _prepare(a, axis, dtype, "prod", upcast_small_ints=promote_integers)
    a, result_dtype = _upcast(_apply_where(a, where, 1))
    result = lax_reduce.reduce_prod(a, axes) if axes else a
    if initial is not None:
        result = mul(result, cast(initial, get_aval(result).dtype))
    return _keep(_cast_back(result, result_dtype), axes, keepdims)


def _extremum(
    name: str, reducer, a: Any, axis: Any, keepdims: bool, initial: Any, where: Any
) -> Any:
    a, axes = _prepare(a, axis, None, name, upcast_small_ints=False)
    aval = get_aval(a)
    if where is not None and initial is None:
        raise ValueError(f"{name} with where= needs an initial value{errors.where()}")
    if builtins.any(aval.shape[ax] == 0 for ax in axes) and initial is None:
        raise ValueError(
            f"zero-size array to reduction operation {name} which has no identity{errors.where()}"
        )
    if where is not None:
        a = _apply_where(a, where, initial)
    result = reducer(a, axes) if axes else a
    if initial is not None:
        combine = max_ if name == "max" else min_
        result = combine(result, cast(initial, aval.dtype))
    return _keep(result, axes, keepdims)


def max(
    a: Any,
    axis: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.max")
    return _extremum("max", lax_reduce.reduce_max, a, axis, keepdims, initial, where)


def min(
    a: Any,
    axis: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.min")
    return _extremum("min", lax_reduce.reduce_min, a, axis, keepdims, initial, where)


amax = max
amin = min


def all(
    a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *, where: Any = None
) -> Any:
    a, axes = _prepare(
        cast(as_operand(a), dtypes.bool_), axis, None, "all", upcast_small_ints=False
    )
    a = _apply_where(a, where, True)
    return _keep(lax_reduce.reduce_and(a, axes) if axes else a, axes, keepdims)


def any(
    a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *, where: Any = None
) -> Any:
    a, axes = _prepare(
        cast(as_operand(a), dtypes.bool_), axis, None, "any", upcast_small_ints=False
    )
    a = _apply_where(a, where, False)
    return _keep(lax_reduce.reduce_or(a, axes) if axes else a, axes, keepdims)


def _count(aval_shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([aval_shape[ax] for ax in axes], dtype=np.int64))


def mean(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    *,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.mean")
    if where is None:  # by position only: the compiled call's fast path
        return _mean_compiled(a, _static_axis(axis), dtype, out, keepdims)
    return _mean_compiled(a, _static_axis(axis), dtype, out, keepdims, where=where)


def var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    check_no_out(out, "jnp.var")
    if correction is not None:
        ddof = correction
    if where is None and mean is None:
        return _var_compiled(a, _static_axis(axis), dtype, out, ddof, keepdims)
    return _var_given(a, _static_axis(axis), dtype, ddof, keepdims, where, mean)


def _static_axis(axis: Any) -> Any:
    """Axes as a hashable static argument (NumPy accepts lists too)."""
    return tuple(axis) if isinstance(axis, list) else axis


def _mean(a: Any, axis: Any, dtype: Any, out: None, keepdims: bool, *, where: Any = None):
    a = as_operand(a)
    aval = get_aval(a)
    dtype = check_dtype_arg(dtype) or (dtypes.to_inexact(aval.dtype))
    axes = canonicalize_axes(axis, aval.ndim)
    return _cast_back(_mean_in(a, axes, computation_dtype(dtype), keepdims, where), dtype)


def _mean_in(a: Any, axes: tuple[int, ...], dtype: np.dtype, keepdims: bool, where: Any):
    """The mean of ``a`` over ``axes`` computed in ``dtype`` (the count too: a count cast to a
    16-bit float would overflow or round)."""
    aval = get_aval(a)
    total = sum(
        cast(a, dtype, aval.weak_type), axis=axes, dtype=dtype, keepdims=keepdims, where=where
    )
    return div(total, _entry_count(aval.shape, axes, keepdims, where, get_aval(total).dtype))


def _entry_count(
    shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, where: Any, dtype: np.dtype
) -> Any:
    """How many entries each slice reduces over: all of them, or those ``where`` selects."""
    if where is None:
        return np.asarray(_count(shape, axes), dtype)[()]
    mask = broadcast_to_shape(cast(as_operand(where), dtype), shape)
    return sum(mask, axis=axes, keepdims=keepdims)


def _var(a: Any, axis: Any, dtype: Any, out: None, ddof: int, keepdims: bool) -> Any:
    return _var_given(a, axis, dtype, ddof, keepdims, None, None)


def _var_given(
    a: Any, axis: Any, dtype: Any, ddof: int, keepdims: bool, where: Any, mean: Any
) -> Any:
    """Variance over the entries ``where`` selects, about ``mean`` when it is given (the
    caller's mean, with the reduced axes kept). 16-bit floats are computed in float32 and the
    result cast back, as JAX does."""
    a = as_operand(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    if aval.dtype.kind == "c":
        raise errors.EmberTypeError(
            f"var and std of complex arrays are not supported yet{errors.where()}"
        )
    dtype = check_dtype_arg(dtype) or dtypes.to_inexact(aval.dtype)
    wide = computation_dtype(dtype)
    a = cast(a, wide, aval.weak_type)
    if mean is None:
        mean = _mean_in(a, axes, wide, True, where)
    else:
        mean = cast(as_operand(mean), wide)
    centered = sub(*prepare("var", a, mean))
    total = sum(mul(centered, centered), axis=axes, keepdims=keepdims, where=where)
    result_dtype = get_aval(total).dtype
    count = _entry_count(aval.shape, axes, keepdims, where, result_dtype)
    variance = div(total, sub(count, np.asarray(ddof, result_dtype)[()]))
    return _cast_back(variance, dtype)


def std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    check_no_out(out, "jnp.std")
    variance = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                   correction=correction)  # fmt: skip
    return sqrt(variance)


# Called eagerly, mean and var run as one compiled program each (a sum, a count and a
# division dispatched one by one would cost several times the work on small arrays).
_STATIC = ("axis", "dtype", "out", "keepdims")
_mean_compiled = jit(_mean, inline=True, static_argnames=_STATIC)
_var_compiled = jit(_var, inline=True, static_argnames=(*_STATIC, "ddof"))


def _arg_extremum(name: str, reducer, a: Any, axis: Any, keepdims: bool) -> Any:
    a = as_operand(a)
    aval = get_aval(a)
    if aval.dtype.kind == "c":  # as JAX: complex numbers are not compared here
        raise errors.EmberTypeError(
            f"{name} does not accept complex input {aval.str_short()}{errors.where()}"
        )
    if axis is None:
        a = reshape(a, (aval.size,))
        if aval.size == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence{errors.where()}")
        result = reducer(a, 0, dtypes.default_int())
        return reshape(result, (1,) * aval.ndim) if keepdims else result
    ax = canonicalize_axis(axis, aval.ndim)
    if aval.shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence{errors.where()}")
    result = reducer(a, ax, dtypes.default_int())
    return expand_dims(result, (ax,)) if keepdims else result


def argmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    return _arg_extremum("argmax", lax_reduce.argmax, a, axis, keepdims)


def argmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    return _arg_extremum("argmin", lax_reduce.argmin, a, axis, keepdims)
