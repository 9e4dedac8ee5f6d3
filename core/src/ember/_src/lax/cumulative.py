"""Cumulative reductions along one axis (``lax.cumsum``, ``cumprod``, ``cummax``, ``cummin``,
``cumlogsumexp``): one primitive each, lowered as an ``associative_scan`` (log-depth) and
differentiated through its combining operation. NumPy's ``cumsum`` and ``cumprod`` wrap
``cumulative``."""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval, tangent_aval
from ember._src.lax.log_add_exp import log_add_exp
from ember._src.lowering.expressions import lower_via
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import add, max as max_, min as min_, mul
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.shape import convert_element_type, linear_jvp, move_axis, reshape
from ember._src.transforms import autodiff


def operand_and_axis(a: Any, axis: Any) -> tuple[Any, int]:
    """``a`` (lists and tuples as NumPy arrays) and ``axis`` made non-negative; ``axis=None``
    flattens ``a`` and scans its only axis."""
    if isinstance(a, (list, tuple)):
        a = np.asarray(a)
    aval = get_aval(a)
    if axis is None:
        return reshape(a, (aval.size,)), 0
    if aval.ndim == 0:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for a 0-d array")
    try:
        axis = operator.index(core.concrete_or_error(axis, "axis"))
    except TypeError:
        raise errors.EmberTypeError(
            f"axis must be an integer, got {axis!r}{errors.where()}"
        ) from None
    if not -aval.ndim <= axis < aval.ndim:
        raise np.exceptions.AxisError(
            f"axis {axis} is out of bounds for array of dimension {aval.ndim}{errors.where()}"
        )
    return a, axis % aval.ndim


# --------------------------------------------------------------------------------------------
# The primitives (JAX's cumsum, cumprod, cummax, cummin and cumlogsumexp, parameters ``axis``
# and ``reverse``). Lowered everywhere as an associative scan — on XLA's CPU it beats the
# reduce_window form JAX lowers to — and named in jaxprs, so a plugin can override one (a
# Triton kernel's ``tt.scan``) and a program of many running sums stays small.


def _scan_implementation(combine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def implementation(x: Any, *, axis: int, reverse: bool) -> Any:
        return associative_scan(combine, x, reverse=reverse, axis=axis)

    return implementation


def _abstract_eval(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
    if not 0 <= axis < x.ndim:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of rank {x.ndim}")
    return x


def _batch(primitive: Primitive) -> Callable[..., Any]:
    def batch(vals, dims, *, axis, reverse):
        (x,), (d,) = vals, dims
        return primitive.bind(move_axis(x, d, 0), axis=axis + 1, reverse=reverse), 0

    return batch


def _jvp_through(implementation: Callable[..., Any]) -> rules.per_primitive:
    """The derivative of the scan that computes the primitive (combine is differentiable)."""

    def build(primitive: Primitive) -> Callable[..., Any]:
        def jvp(primals, tangents, *, axis, reverse):
            (x,), (t,) = primals, tangents
            if type(t) is Zero:
                out = primitive.bind(x, axis=axis, reverse=reverse)
                return out, Zero(tangent_aval(get_aval(out)))
            return autodiff.jvp(partial(implementation, axis=axis, reverse=reverse), (x,), (t,))

        return jvp

    return rules.per_primitive(build)


def _cumsum_transpose(ct, x, *, axis, reverse):
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


def _reference(accumulate: Callable[..., np.ndarray]) -> Callable[..., Any]:
    def reference(x, *, axis, reverse):
        x = np.asarray(x)
        if reverse:
            return np.flip(accumulate(np.flip(x, axis), axis), axis)
        return accumulate(x, axis)

    return reference


def _in_its_dtype(ufunc: np.ufunc) -> Callable[..., np.ndarray]:
    # NumPy's cumsum of int32 counts in int64: ember's (as XLA's) wraps in the operand's dtype
    return lambda x, axis: ufunc.accumulate(x, axis=axis, dtype=x.dtype)


def _log_add_exp_accumulate(x: np.ndarray, axis: int) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.logaddexp.accumulate(x, axis=axis)


_sharding = sharding_rules.with_unsplit(
    "a cumulative reduction",
    lambda x, **params: [params["axis"]],
    "the running reduction runs along it",
)


def _define(name: str, combine: Callable[[Any, Any], Any], accumulate, linear: bool):
    implementation = _scan_implementation(combine)
    return rules.define_primitive(
        name,
        abstract_eval=_abstract_eval,
        jvp=rules.per_primitive(linear_jvp) if linear else _jvp_through(implementation),
        transpose=_cumsum_transpose if linear else None,
        batch=rules.per_primitive(_batch),
        lowering=lower_via(implementation),
        reference=_reference(accumulate),
        sharding=_sharding,
    )


cumsum_p = _define("cumsum", add, _in_its_dtype(np.add), linear=True)
cumprod_p = _define("cumprod", mul, _in_its_dtype(np.multiply), linear=False)
cummax_p = _define("cummax", max_, _in_its_dtype(np.maximum), linear=False)
cummin_p = _define("cummin", min_, _in_its_dtype(np.minimum), linear=False)
cumlogsumexp_p = _define("cumlogsumexp", log_add_exp, _log_add_exp_accumulate, linear=False)

_PRIMITIVES = {
    "cumsum": cumsum_p,
    "cumprod": cumprod_p,
    "cummax": cummax_p,
    "cummin": cummin_p,
    "cumlogsumexp": cumlogsumexp_p,
}


def cumulative(name: str, a: Any, axis: Any, dtype: Any, reverse: bool = False) -> Any:
    """The running ``name`` ("cumsum", "cumprod", "cummax" or "cummin") of ``a`` along
    ``axis``, in ``dtype`` if given (sums and products of booleans count in the default
    integer type)."""
    a, axis = operand_and_axis(a, axis)
    if dtype is not None:
        a = convert_element_type(a, dtypes.canonicalize(np.dtype(dtype)))
    elif name in ("cumsum", "cumprod") and get_aval(a).dtype == dtypes.bool_:
        a = convert_element_type(a, dtypes.default_int())
    return _PRIMITIVES[name].bind(a, axis=axis, reverse=bool(reverse))


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running sum along ``axis`` (from the end when ``reverse``)."""
    return cumulative("cumsum", operand, axis, None, reverse)


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running product along ``axis`` (from the end when ``reverse``)."""
    return cumulative("cumprod", operand, axis, None, reverse)


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maximum along ``axis`` (from the end when ``reverse``)."""
    return cumulative("cummax", operand, axis, None, reverse)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minimum along ``axis`` (from the end when ``reverse``)."""
    return cumulative("cummin", operand, axis, None, reverse)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``log(cumsum(exp(operand)))`` along ``axis``, computed stably."""
    aval = get_aval(operand)
    if not -aval.ndim <= axis < max(aval.ndim, 1):
        raise ValueError(f"cumlogsumexp: axis {axis} out of range for rank {aval.ndim}")
    if aval.dtype.kind not in "fc":
        raise TypeError(
            f"cumlogsumexp needs a floating-point operand, got {aval.str_short()}{errors.where()}"
        )
    return cumlogsumexp_p.bind(operand, axis=axis % max(aval.ndim, 1), reverse=bool(reverse))
