"""The sine and cosine integrals and the Fresnel integrals for ``ember.scipy.special``:
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
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.transforms.custom_derivatives import custom_jvp

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


# --------------------------------------------------------------------------------------------
# Fresnel integrals S(x) = int_0^x sin(pi t^2 / 2) dt, C(x) = int_0^x cos(pi t^2 / 2) dt

_FRESNEL_SWITCH = 1.25
_FRESNEL_SERIES_TERMS = 25
_FRESNEL_FRACTION_TERMS = 120  # below float64 rounding from x = 1.25 on


def _fresnel_series(x: Any) -> tuple[Any, Any]:
    """``C = sum (-1)^k (pi/2)^(2k) x^(4k+1) / ((4k+1) (2k)!)`` and the like for S."""
    s, c = creation.zeros_like(x), creation.zeros_like(x)
    power = x  # (pi/2)^n x^(2n+1) / n!, for n = 0, 1, 2, ...
    for n in range(2 * _FRESNEL_SERIES_TERMS):
        sign = -1.0 if (n // 2) % 2 else 1.0
        if n % 2 == 0:
            c = c + sign * power / (2 * n + 1)
        else:
            s = s + sign * power / (2 * n + 1)
        power = power * (math.pi / 2) * x * x / (n + 1)
    return s, c


def _fresnel_fraction(x: Any) -> tuple[Any, Any]:
    """``C + i S = (1 + i)/2 (1 - erfc(z))`` with ``z = sqrt(pi)/2 (1 - i) x``, where
    ``erfc(z) = exp(i pi x^2 / 2) / sqrt(pi) / (z + (1/2) / (z + 1 / (z + ...)))``."""
    zr = math.sqrt(math.pi) / 2 * x
    zi = -zr

    def step(i, t):  # a loop, not unrolled: 120 inlined steps are slow for XLA to compile
        tr, ti = t
        k = (_FRESNEL_FRACTION_TERMS - i).astype(get_aval(x).dtype)  # 120 .. 1
        scale = (k / 2) / (tr * tr + ti * ti)
        return zr + scale * tr, zi - scale * ti

    tr, ti = fori_loop(0, _FRESNEL_FRACTION_TERMS, step, (zr, zi))
    norm = tr * tr + ti * ti
    kr, ki = tr / norm, -ti / norm
    phase = (math.pi / 2) * x * x
    cos, sin = jnp.cos(phase), jnp.sin(phase)
    pr = (cos * kr - sin * ki) / math.sqrt(math.pi)
    pi_ = (cos * ki + sin * kr) / math.sqrt(math.pi)
    return (1 - pr - pi_) / 2, (1 - pr + pi_) / 2


def _fresnel_impl(x: Any) -> tuple[Any, Any]:
    ax = jnp.abs(x)
    small = ax < _FRESNEL_SWITCH
    s_s, c_s = _fresnel_series(jnp.where(small, ax, _c(x, 0)))
    far = jnp.where(small, _c(x, _FRESNEL_SWITCH), jnp.where(ax == np.inf, _c(x, 1), ax))
    s_f, c_f = _fresnel_fraction(far)
    s = jnp.where(small, s_s, jnp.where(ax == np.inf, _c(x, 0.5), s_f))
    c = jnp.where(small, c_s, jnp.where(ax == np.inf, _c(x, 0.5), c_f))
    negative = x < 0
    return jnp.where(negative, -s, s), jnp.where(negative, -c, c)


_fresnel = custom_jvp(_fresnel_impl)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    phase = (math.pi / 2) * x * x
    return _fresnel(x), (tx * jnp.sin(phase), tx * jnp.cos(phase))


def fresnel(x: Any) -> tuple[Any, Any]:
    """The Fresnel integrals ``(S(x), C(x))``."""
    (x,) = prepare_inexact("fresnel", x)
    return _fresnel(x)
