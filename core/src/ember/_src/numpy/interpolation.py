"""One-dimensional piecewise-linear interpolation: ``interp`` (with NumPy's ``period=``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import elementwise as enp, manipulation
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import (
    as_operand,
    promote_dtypes,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import argsort
from ember._src.primitives.slicing import concatenate


def interp(
    x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None
) -> Any:
    x, xp, fp = promote_dtypes(as_operand(x), as_operand(xp), as_operand(fp))
    x, xp, fp = (
        manipulation.astype(v, dtypes.to_inexact(get_aval(v).dtype))
        if not dtypes.is_inexact(get_aval(v).dtype)
        else v
        for v in (x, xp, fp)
    )
    if period is not None:
        x, xp, fp = _periodic_samples(x, xp, fp, period)
        left = right = None  # NumPy ignores them for periodic data
    n = shape_of(xp)[0]
    i = enp.clip(searchsorted(xp, x, side="right"), np.int32(1), np.int32(n - 1))
    x0, x1 = take(xp, enp.subtract(i, np.int32(1)), mode="clip"), take(xp, i, mode="clip")
    y0, y1 = take(fp, enp.subtract(i, np.int32(1)), mode="clip"), take(fp, i, mode="clip")
    dx = enp.subtract(x1, x0)
    t = enp.where(
        enp.equal(dx, 0),
        np.asarray(0, get_aval(dx).dtype),
        enp.divide(
            enp.subtract(x, x0), enp.where(enp.equal(dx, 0), np.asarray(1, get_aval(dx).dtype), dx)
        ),
    )
    out = enp.add(y0, enp.multiply(t, enp.subtract(y1, y0)))
    first, last = take(fp, np.int32(0), mode="clip"), take(fp, np.int32(n - 1), mode="clip")
    out = enp.where(
        enp.less(x, take(xp, np.int32(0), mode="clip")), first if left is None else left, out
    )
    return enp.where(
        enp.greater(x, take(xp, np.int32(n - 1), mode="clip")),
        last if right is None else right,
        out,
    )


def _periodic_samples(x: Any, xp: Any, fp: Any, period: Any) -> tuple[Any, Any, Any]:
    """Map ``x`` and ``xp`` into one period, sort the samples, and add one wrapped sample
    at each end so that interpolation runs across the period's boundary."""
    if isinstance(period, (int, float, np.number)) and period == 0:
        raise ValueError(f"interp: period must be a non-zero value{errors.where()}")
    period = enp.abs(as_operand(period))
    x, xp = enp.remainder(x, period), enp.remainder(xp, period)
    order = argsort(xp)
    xp, fp = take(xp, order), take(fp, order)
    n = shape_of(xp)[0]
    xp = concatenate([enp.subtract(xp[n - 1 :], period), xp, enp.add(xp[:1], period)], 0)
    fp = concatenate([fp[n - 1 :], fp, fp[:1]], 0)
    return x, xp, fp
