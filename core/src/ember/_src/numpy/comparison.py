"""Comparing whole arrays: ``isclose``, ``allclose`` and ``array_equal``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, reductions
from ember._src.numpy.operands import (
    as_operand,
    promote_dtypes,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    a, b = promote_dtypes(as_operand(a), as_operand(b))
    dtype = get_aval(a).dtype
    if not dtypes.is_inexact(dtype):
        return enp.equal(a, b)
    rtol_, atol_ = (
        np.asarray(rtol, dtypes.real_dtype(dtype)),
        np.asarray(atol, dtypes.real_dtype(dtype)),
    )
    close = enp.less_equal(
        enp.abs(enp.subtract(a, b)), enp.add(atol_, enp.multiply(rtol_, enp.abs(b)))
    )
    both_inf = enp.logical_and(enp.isinf(a), enp.equal(a, b))
    close = enp.logical_or(enp.logical_and(close, enp.isfinite(b)), both_inf)
    if equal_nan:
        close = enp.logical_or(close, enp.logical_and(enp.isnan(a), enp.isnan(b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    a1, a2 = creation.asarray(a1), creation.asarray(a2)
    if shape_of(a1) != shape_of(a2):
        return creation.asarray(False)
    same = enp.equal(a1, a2)
    if equal_nan and dtypes.is_inexact(get_aval(a1).dtype):
        same = enp.logical_or(same, enp.logical_and(enp.isnan(a1), enp.isnan(a2)))
    return reductions.all(same)
