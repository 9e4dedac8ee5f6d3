"""``log(exp(x) + exp(y))`` computed stably, for real and complex operands: the combining step
of ``lax.cumlogsumexp`` and the body of NumPy's ``logaddexp`` and ``logaddexp2``.

Its derivative is its own rule, as JAX's: ``d/dx = exp(x - out)``. Differentiating the stable
formula instead gives the wrong slope where ``x == y`` (``max`` splits the tangent in halves,
``|x - y|`` has slope 1 at 0, and the two cancel: ``softplus'(0)`` came out 0, not 1/2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.primitives.arithmetic import (
    abs as abs_,
    add,
    complex as complex_,
    imag,
    max as max_,
    mul,
    neg,
    real,
    rem as rem_,
    sub,
)
from ember._src.primitives.comparisons import eq, lt, ne
from ember._src.primitives.math_functions import exp, log1p
from ember._src.primitives.selection import select_n
from ember._src.transforms.custom_derivatives import custom_jvp


@custom_jvp
def log_add_exp(x: Any, y: Any) -> Any:
    """``log(exp(x) + exp(y))`` of two inexact operands of one dtype and shape."""
    amax = max_(x, y)
    if get_aval(x).dtype.kind == "c":
        return complex_log_add(x, y, amax, exp, 1.0, np.pi)
    delta = sub(x, y)
    # Where both are the same infinity, delta is nan: the answer is that infinity.
    safe = select_n(
        ne(delta, delta),
        neg(abs_(delta)),
        np.zeros((), get_aval(x).dtype),
    )
    return add(amax, log1p(exp(safe)))


@log_add_exp.defjvp
def _log_add_exp_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = log_add_exp(x, y)
    # Each operand's share is exp(operand - out). Where out is +inf, inf - inf would be nan:
    # JAX's rule counts +inf as 0 on both sides, which makes every share there exp(0) = 1.
    share_x = exp(sub(_inf_as_zero(x), _inf_as_zero(out)))
    share_y = exp(sub(_inf_as_zero(y), _inf_as_zero(out)))
    return out, add(mul(tx, share_x), mul(ty, share_y))


def _inf_as_zero(x: Any) -> Any:
    """x with its +inf entries (by real part, for complex x) replaced by 0."""
    dtype = get_aval(x).dtype
    re = real(x) if dtype.kind == "c" else x
    inf = np.asarray(np.inf, get_aval(re).dtype)[()]
    return select_n(eq(re, inf), x, np.zeros((), dtype))


def complex_log_add(x: Any, y: Any, amax: Any, exp_fn, scale: float, half_period: float) -> Any:
    """log(exp(x) + exp(y)) for complex x, y (or the base-2 form, with exp_fn = exp2 and
    scale = 1/log(2)), as JAX: amax + scale * log1p(exp_fn(x + y - 2 amax)), its imaginary
    part wrapped into [-half_period, half_period]."""
    dtype = get_aval(x).dtype
    delta = sub(add(x, y), mul(amax, np.asarray(2, dtype)[()]))
    out = add(amax, mul(np.asarray(scale, dtype)[()], log1p(exp_fn(delta))))
    return complex_(real(out), _wrap_between(imag(out), half_period))


def _wrap_between(x: Any, half: float) -> Any:
    dtype = get_aval(x).dtype
    a, two_a = np.asarray(half, dtype)[()], np.asarray(2 * half, dtype)[()]
    rem = rem_(add(x, a), two_a)
    rem = select_n(lt(rem, np.zeros((), dtype)), rem, add(rem, two_a))
    return sub(rem, a)
