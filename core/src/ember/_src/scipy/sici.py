"""The sine and cosine integrals for ``ember.scipy.special``:
``sici(x) = (Si(x), Ci(x))`` with ``Si(x) = int_0^x sin(t)/t dt`` and
``Ci(x) = gamma + log x + int_0^x (cos(t) - 1)/t dt``.

Below |x| = 4 both are summed as power series; above, they come from the continued fraction
of ``E1(i x) = -Ci(x) + i (Si(x) - pi/2)``, evaluated in real arithmetic on (re, im) pairs.
For negative ``x``, Si is odd and Ci is the real part, ``Ci(|x|)``, as in SciPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as jnp
from ember._src.numpy.util import prepare_inexact
from ember._src.ops.custom_derivatives import custom_jvp

_SWITCH = 4.0
_SERIES_ORDER = 33  # powers x^1 .. x^33: below float64 rounding for |x| < 4
_FRACTION_TERMS = 40  # below float64 rounding for x >= 4


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _series(x: Any) -> tuple[Any, Any]:
    si, ci = creation.zeros_like(x), creation.zeros_like(x)
    power = creation.ones_like(x)  # x^n / n!
    for n in range(1, _SERIES_ORDER + 1):
        power = power * x / n
        sign = -1.0 if (n // 2) % 2 else 1.0
        if n % 2:
            si = si + sign * power / n
        else:
            ci = ci + sign * power / n
    return si, _c(x, np.euler_gamma) + jnp.log(x) + ci


def _fraction(x: Any) -> tuple[Any, Any]:
    """E1(i x) = exp(-i x) / t with ``t = i x + 1 - 1/(i x + 3 - 4/(i x + 5 - ...))``."""
    re, im = _c(x, 2 * _FRACTION_TERMS + 1) + 0 * x, x
    for k in range(_FRACTION_TERMS, 0, -1):
        # t <- i x + (2k - 1) - k^2 / t, with 1/t = conj(t) / |t|^2.
        scale = k * k / (re * re + im * im)
        re, im = (2 * k - 1) - scale * re, x + scale * im
    norm = re * re + im * im
    cos, sin = jnp.cos(x), jnp.sin(x)
    e1_re = (cos * re - sin * im) / norm
    e1_im = -(cos * im + sin * re) / norm
    return _c(x, math.pi / 2) + e1_im, -e1_re


def _sici_impl(x: Any) -> tuple[Any, Any]:
    ax = jnp.abs(x)
    small = ax < _SWITCH
    si_s, ci_s = _series(jnp.where(small, ax, _c(x, 1)))
    si_f, ci_f = _fraction(jnp.where(small, _c(x, _SWITCH), ax))
    si = jnp.where(small, si_s, si_f)
    ci = jnp.where(small, ci_s, ci_f)
    si = jnp.where(ax == np.inf, _c(x, math.pi / 2), si)
    ci = jnp.where(ax == np.inf, _c(x, 0), ci)
    ci = jnp.where(x == 0, _c(x, -np.inf), ci)
    ci = jnp.where(x == -np.inf, _c(x, np.nan), ci)  # SciPy's answer
    return jnp.where(x < 0, -si, si), ci


_sici = custom_jvp(_sici_impl)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    si, ci = _sici(x)
    # d Si / dx = sin(x) / x (1 at 0), d Ci / dx = cos(x) / x.
    safe = jnp.where(x == 0, _c(x, 1), x)
    sinc = jnp.where(x == 0, _c(x, 1), jnp.sin(safe) / safe)
    return (si, ci), (tx * sinc, tx * jnp.cos(x) / x)


def sici(x: Any) -> tuple[Any, Any]:
    """The sine and cosine integrals ``(Si(x), Ci(x))``."""
    (x,) = prepare_inexact("sici", x)
    return _sici(x)
