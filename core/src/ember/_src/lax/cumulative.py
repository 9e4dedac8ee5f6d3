"""Cumulative reductions along one axis (``lax.cumsum``, ``cumprod``, ``cummax``, ``cummin``,
``cumlogsumexp``), as ``associative_scan``s: log-depth, and differentiable through their
combining operation. NumPy's ``cumsum`` and ``cumprod`` wrap ``cumulative``."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.log_add_exp import log_add_exp
from ember._src.primitives.arithmetic import add, max as max_, min as min_, mul
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.shape import convert_element_type, reshape
from ember._src.transforms.jit import jit


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


_COMBINE = {
    "cumsum": add,
    "cumprod": mul,
    "cummax": max_,
    "cummin": min_,
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
    return associative_scan(_COMBINE[name], a, reverse=reverse, axis=axis)


def _cumsum_body(operand: Any, axis: int, reverse: bool) -> Any:
    return cumulative("cumsum", operand, axis, None, reverse)


def _cumprod_body(operand: Any, axis: int, reverse: bool) -> Any:
    return cumulative("cumprod", operand, axis, None, reverse)


def _cummax_body(operand: Any, axis: int, reverse: bool) -> Any:
    return cumulative("cummax", operand, axis, None, reverse)


def _cummin_body(operand: Any, axis: int, reverse: bool) -> Any:
    return cumulative("cummin", operand, axis, None, reverse)


# Called eagerly, each scan runs as one program compiled once per shape (an associative scan
# is a few dozen operations: dispatched one by one they would cost far more than the work).
# Arguments go by position, which the compiled call's fast path keys on directly.
_cumsum = jit(_cumsum_body, inline=True, static_argnums=(1, 2))
_cumprod = jit(_cumprod_body, inline=True, static_argnums=(1, 2))
_cummax = jit(_cummax_body, inline=True, static_argnums=(1, 2))
_cummin = jit(_cummin_body, inline=True, static_argnums=(1, 2))


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running sum along ``axis`` (from the end when ``reverse``)."""
    return _cumsum(operand, axis, reverse)


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running product along ``axis`` (from the end when ``reverse``)."""
    return _cumprod(operand, axis, reverse)


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maximum along ``axis`` (from the end when ``reverse``)."""
    return _cummax(operand, axis, reverse)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minimum along ``axis`` (from the end when ``reverse``)."""
    return _cummin(operand, axis, reverse)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``log(cumsum(exp(operand)))`` along ``axis``, computed stably."""
    aval = get_aval(operand)
    if not -aval.ndim <= axis < max(aval.ndim, 1):
        raise ValueError(f"cumlogsumexp: axis {axis} out of range for rank {aval.ndim}")
    if aval.dtype.kind not in "fc":
        raise TypeError(
            f"cumlogsumexp needs a floating-point operand, got {aval.str_short()}{errors.where()}"
        )
    return _cumlogsumexp(operand, axis % max(aval.ndim, 1), bool(reverse))


def _cumlogsumexp_impl(operand: Any, axis: int, reverse: bool) -> Any:
    return associative_scan(log_add_exp, operand, reverse=reverse, axis=axis)


_cumlogsumexp = jit(_cumlogsumexp_impl, static_argnums=(1, 2))
