"""Geometric and logarithmic sequences (``geomspace``, ``logspace``), with array endpoints
and the new axis placed by ``axis`` as in NumPy."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.operands import as_operand, check_dtype_arg, promote_to_inexact
from ember._src.primitives.shape import convert_element_type


def _samples(start: Any, stop: Any, num: Any, endpoint: bool, axis: int) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (broadcast together), along a
    new last axis; the last sample is ``stop`` exactly when ``endpoint``."""
    num = operator.index(core.concrete_or_error(num, "num"))
    if num < 0:
        raise ValueError(f"number of samples, {num}, must be non-negative{errors.where()}")
    start, stop = promote_to_inexact(
        creation.asarray(as_operand(start)), creation.asarray(as_operand(stop))
    )
    start, stop = manipulation.broadcast_arrays(start, stop)
    dtype = get_aval(start).dtype
    divisor = max(num - 1 if endpoint else num, 1)
    fractions = np.arange(num, dtype=np.float64) / divisor
    real = dtypes.real_dtype(dtype)
    step = enp.subtract(stop, start)
    values = enp.add(start[..., None], enp.multiply(step[..., None], fractions.astype(real)))
    if endpoint and num > 1:
        values = enp.where(np.arange(num) == num - 1, stop[..., None], values)
    return values


def _place_axis(values: Any, axis: int, dtype: Any) -> Any:
    ndim = get_aval(values).ndim
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"axis {axis} is out of bounds for the result of dimension {ndim}{errors.where()}"
        )
    values = manipulation.moveaxis(values, -1, axis)
    dtype = check_dtype_arg(dtype)
    if dtype is not None and dtype != get_aval(values).dtype:
        if dtype.kind in "iu" and get_aval(values).dtype.kind == "f":
            values = enp.round(values)  # as JAX: exact powers stay exact after rounding error
        values = convert_element_type(values, dtype)
    return values


def logspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    base: Any = 10.0,
    dtype: Any = None,
    axis: int = 0,
) -> Any:
    """``base ** linspace(start, stop, num)``."""
    exponents = _samples(start, stop, num, endpoint, axis)
    (base,) = promote_to_inexact(creation.asarray(as_operand(base)))
    if get_aval(base).ndim:
        base = manipulation.expand_dims(base, -1)
    values = enp.power(base, exponents)
    return _place_axis(values, axis, dtype)


def geomspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0
) -> Any:
    """A geometric progression from ``start`` to ``stop`` (a spiral for complex endpoints);
    both endpoints keep their exact values."""
    start, stop = promote_to_inexact(
        creation.asarray(as_operand(start)), creation.asarray(as_operand(stop))
    )
    for name, value in (("start", start), ("stop", stop)):
        if not isinstance(value, core.Tracer) and bool(np.any(np.asarray(value) == 0)):
            raise ValueError(f"geomspace: {name} cannot be zero{errors.where()}")
    if get_aval(start).dtype.kind == "c":
        values = enp.exp(_samples(enp.log(start), enp.log(stop), num, endpoint, axis))
    else:
        # Run the progression on magnitudes and restore the sign of the start.
        sign = enp.sign(start)
        logs = _samples(
            enp.log(enp.multiply(start, sign)),
            enp.log(enp.multiply(stop, sign)),
            num,
            endpoint,
            axis,
        )
        values = enp.multiply(enp.exp(logs), sign[..., None])
    num = get_aval(values).shape[-1]
    start, stop = manipulation.broadcast_arrays(start, stop)
    if num:
        values = enp.where(np.arange(num) == 0, start[..., None], values)
    if endpoint and num > 1:
        values = enp.where(np.arange(num) == num - 1, stop[..., None], values)
    return _place_axis(values, axis, dtype)
