"""``ember.scipy.integrate.trapezoid``, as ``jax.scipy.integrate``."""

from __future__ import annotations

from typing import Any

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, manipulation, reductions


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x``
    (1-d, or of y's shape) or spaced ``dx`` apart."""
    y = creation.asarray(y)
    if not dtypes.is_inexact(get_aval(y).dtype):
        y = y.astype(dtypes.default_float())
    y = manipulation.moveaxis(y, axis, -1)
    if x is None:
        spacing = creation.asarray(dx)
    else:
        x = creation.asarray(x)
        xshape = get_aval(x).shape
        if len(xshape) == 1:
            if xshape[0] != get_aval(y).shape[-1]:
                raise ValueError(
                    f"trapezoid: x has {xshape[0]} points but y has {get_aval(y).shape[-1]} "
                    f"along axis {axis}{errors.where()}"
                )
        else:
            x = manipulation.moveaxis(x, axis, -1)
        spacing = x[..., 1:] - x[..., :-1]
    return reductions.sum(spacing * (y[..., 1:] + y[..., :-1]), axis=-1) * 0.5
