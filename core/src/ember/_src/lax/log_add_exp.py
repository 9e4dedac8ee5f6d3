"""``log(exp(x) + exp(y))`` computed stably, for real and complex operands: the combining step
of ``lax.cumlogsumexp`` and the body of NumPy's ``logaddexp`` and ``logaddexp2``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.primitives import elementwise as ew


def log_add_exp(x: Any, y: Any) -> Any:
    """``log(exp(x) + exp(y))`` of two inexact operands of one dtype and shape."""
    amax = ew.max(x, y)
    if get_aval(x).dtype.kind == "c":
        return complex_log_add(x, y, amax, ew.exp, 1.0, np.pi)
    delta = ew.sub(x, y)
    # Where both are the same infinity, delta is nan: the answer is that infinity.
    safe = ew.select_n(ew.ne(delta, delta), ew.neg(ew.abs(delta)), np.zeros((), get_aval(x).dtype))
    return ew.add(amax, ew.log1p(ew.exp(safe)))


def complex_log_add(x: Any, y: Any, amax: Any, exp_fn, scale: float, half_period: float) -> Any:
    """log(exp(x) + exp(y)) for complex x, y (or the base-2 form, with exp_fn = exp2 and
    scale = 1/log(2)), as JAX: amax + scale * log1p(exp_fn(x + y - 2 amax)), its imaginary
    part wrapped into [-half_period, half_period]."""
    dtype = get_aval(x).dtype
    delta = ew.sub(ew.add(x, y), ew.mul(amax, np.asarray(2, dtype)[()]))
    out = ew.add(amax, ew.mul(np.asarray(scale, dtype)[()], ew.log1p(exp_fn(delta))))
    return ew.complex(ew.real(out), _wrap_between(ew.imag(out), half_period))


def _wrap_between(x: Any, half: float) -> Any:
    dtype = get_aval(x).dtype
    a, two_a = np.asarray(half, dtype)[()], np.asarray(2 * half, dtype)[()]
    rem = ew.rem(ew.add(x, a), two_a)
    rem = ew.select_n(ew.lt(rem, np.zeros((), dtype)), rem, ew.add(rem, two_a))
    return ew.sub(rem, a)
