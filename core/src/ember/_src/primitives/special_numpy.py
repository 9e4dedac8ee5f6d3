"""Gamma-family special functions in NumPy float64, for the ``reference`` backend's rules.

The core depends on NumPy alone, so these are written out here rather than taken from SciPy
(the tests compare them with SciPy). Each function follows the conventions of XLA's own
expansions at the edges of the domain (poles give inf or nan as XLA's do), so the reference
backend agrees with compiled backends there too. Results are float64; the rules round them
to the operand's dtype.
"""

from __future__ import annotations

import math

import numpy as np

_EPS = np.finfo(np.float64).eps


def _lgamma_scalar(x: float) -> float:
    try:
        return math.lgamma(x)
    except ValueError:  # a pole: 0 or a negative integer
        return math.inf


_lgamma_vec = np.vectorize(_lgamma_scalar, otypes=[np.float64])


def lgamma(x: np.ndarray) -> np.ndarray:
    return _lgamma_vec(np.asarray(x, np.float64))


# Coefficients B_2k / (2k) of the asymptotic series of digamma, k = 1..7.
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def digamma(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        y = np.where(reflect, 1.0 - x, x)
        # Recurrence psi(y) = psi(y + 1) - 1/y up to y >= 8, then the asymptotic series.
        shift = np.zeros_like(y)
        for _ in range(8):
            small = y < 8.0
            shift = np.where(small, shift - 1.0 / y, shift)
            y = np.where(small, y + 1.0, y)
        inv2 = 1.0 / (y * y)
        series = np.zeros_like(y)
        for c in reversed(_DIGAMMA_ASYMPTOTIC):
            series = (series + c) * inv2
        result = shift + np.log(y) - 0.5 / y - series
        # Reflection: psi(x) = psi(1 - x) - pi / tan(pi x), reduced modulo 1 for accuracy.
        frac = x - np.floor(x)
        result = np.where(reflect, result - np.pi / np.tan(np.pi * frac), result)
        result = np.where((x <= 0) & (x == np.floor(x)), np.nan, result)  # poles
        result = np.where(x == np.inf, np.inf, result)
    return result


# B_2j / (2j)! for j = 1..8, for the Euler-Maclaurin tail of the Hurwitz zeta function.
ZETA_TAIL = (
    1 / 12,
    -1 / 720,
    1 / 30240,
    -1 / 1209600,
    1 / 47900160,
    -691 / 1307674368000,
    1 / 74724249600,
    -3617 / 10670622842880000,
)


def hurwitz_zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k)^-s for s > 1, q > 0 (Euler-Maclaurin summation)."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    n = 12
    with np.errstate(all="ignore"):
        total = np.zeros(s.shape)
        for k in range(n):
            total = total + (q + k) ** -s
        w = q + n
        total = total + w ** (1 - s) / (s - 1) + 0.5 * w**-s
        rising = s.copy()  # s (s + 1) ... (s + 2j - 2)
        power = w ** (-s - 1)
        for j, coefficient in enumerate(ZETA_TAIL):
            total = total + coefficient * rising * power
            rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
            power = power / (w * w)
    return total


def polygamma(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """psi^(m)(x) for integral m >= 0 (nan otherwise), as XLA computes it."""
    m, x = np.broadcast_arrays(np.asarray(m, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        order_ok = (m >= 0) & (m == np.floor(m))
        sign = np.where(np.mod(m, 2) == 0, -1.0, 1.0)
        factorial = np.exp(lgamma(m + 1.0))
        higher = sign * factorial * _zeta_any_q(m + 1.0, x)
        result = np.where(m == 0, digamma(x), higher)
        return np.where(order_ok, result, np.nan)


def _zeta_any_q(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta extended to q <= 0 the way XLA's expansion does: a pole (inf) at
    non-positive integers for even orders of polygamma, nan otherwise; negative non-integer
    q by the shift zeta(s, q) = zeta(s, q + n) + sum_{k<n} (q + k)^-s."""
    with np.errstate(all="ignore"):
        shift = np.maximum(np.ceil(-q), 0.0)
        shifted = q + shift
        total = np.zeros(q.shape)
        steps = int(np.nanmax(np.where(np.isfinite(shift), shift, 0.0), initial=0.0))
        for k in range(steps):
            total = total + np.where(k < shift, (q + k) ** -s, 0.0)
        result = hurwitz_zeta(s, np.where(shifted > 0, shifted, 1.0)) + total
        pole = (q <= 0) & (q == np.floor(q))
        result = np.where(pole, np.where(np.mod(s, 2) == 0, np.inf, np.nan), result)
        result = np.where(q == -np.inf, np.where(np.mod(s, 2) == 0, np.inf, np.nan), result)
        return np.where((q == np.inf) | np.isnan(q) | np.isnan(s), np.nan, result)


# --------------------------------------------------------------------------------------------
# Regularized incomplete gamma functions (the series and continued fraction XLA uses, in
# float64), and their derivatives with respect to a.

VALUE, DERIVATIVE, SAMPLE_DERIVATIVE = "value", "derivative", "sample_derivative"


def _series(ax, x, a, enabled, mode):
    r, c, ans = a.copy(), np.ones_like(a), np.ones_like(a)
    dc_da, dans_da = np.zeros_like(a), np.zeros_like(a)
    enabled = enabled.copy()
    for _ in range(10000):
        if not enabled.any():
            break
        r_new = r + 1
        dc_new = dc_da * (x / r_new) - (c * x) / (r_new * r_new)
        dans_new = dans_da + dc_new
        c_new = c * (x / r_new)
        ans_new = ans + c_new
        r, dc_da, dans_da, c, ans = (
            np.where(enabled, new, old)
            for new, old in ((r_new, r), (dc_new, dc_da), (dans_new, dans_da), (c_new, c),
                             (ans_new, ans))
        )  # fmt: skip
        test = c_new / ans_new if mode == VALUE else np.abs(dc_new / dans_new)
        enabled = enabled & (test > _EPS)
    if mode == VALUE:
        return ans * ax / a
    dlogax_da = np.log(x) - digamma(a + 1)
    if mode == DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return -(dans_da + ans * dlogax_da) * x / a


def _continued_fraction(ax, x, a, enabled, mode):
    y = 1 - a
    z = x + y + 1
    pkm2, qkm2 = np.ones_like(x), x.copy()
    pkm1, qkm1 = x + 1, z * x
    ans = pkm1 / qkm1
    dpkm2, dqkm2, dpkm1, dqkm1 = (np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), -x)
    dans = (dpkm1 - ans * dqkm1) / qkm1
    enabled = enabled.copy()
    for c in range(1, 2000):
        if not enabled.any():
            break
        y1, z1 = y + 1, z + 2
        yc = y1 * c
        pk, qk = pkm1 * z1 - pkm2 * yc, qkm1 * z1 - qkm2 * yc
        nonzero = qk != 0
        r = pk / np.where(nonzero, qk, 1)
        t = np.where(nonzero, np.abs((ans - r) / r), 1.0)
        ans_new = np.where(nonzero, r, ans)
        dpk = dpkm1 * z1 - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z1 - qkm1 - dqkm2 * yc + qkm2 * c
        dans_new = np.where(nonzero, (dpk - ans_new * dqk) / np.where(nonzero, qk, 1), dans)
        grad_test = np.where(nonzero, np.abs(dans_new - dans), 1.0)
        # Keep the convergents in range, as the expansion does.
        scale = np.where(np.abs(pk) > 1 / _EPS, _EPS, 1.0)
        new = (y1, z1, pk * scale, qk * scale, pkm1 * scale, qkm1 * scale, dpk * scale,
               dqk * scale, dpkm1 * scale, dqkm1 * scale, ans_new, dans_new)  # fmt: skip
        old = (y, z, pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2, ans, dans)
        (y, z, pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2, ans, dans) = (
            np.where(enabled, n, o) for n, o in zip(new, old)
        )
        enabled = enabled & ((t if mode == VALUE else grad_test) > _EPS)
    if mode == VALUE:
        return ans * ax
    dlogax_da = np.log(x) - digamma(a)
    if mode == DERIVATIVE:
        return ax * (ans * dlogax_da + dans)
    return -(dans + ans * dlogax_da) * x


def _prepare(a, x):
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    a, x = a.copy(), x.copy()
    is_nan = np.isnan(a) | np.isnan(x)
    ax = a * np.log(x) - x - lgamma(a)
    underflow = ax < -np.log(np.finfo(np.float64).max)
    return a, x, is_nan, np.exp(ax), underflow


def igamma(a, x) -> np.ndarray:
    with np.errstate(all="ignore"):
        a, x, is_nan, ax, underflow = _prepare(a, x)
        x_inf, x_zero = x == np.inf, x == 0
        domain = (x < 0) | (a < 0) | ((a == 0) & x_zero) | is_nan
        use_cf = (x >= 1) & (x > a)
        enabled = ~(x_zero | domain | underflow | x_inf)
        out = np.where(
            use_cf,
            1 - _continued_fraction(ax, x, a, enabled & use_cf, VALUE),
            _series(ax, x, a, enabled & ~use_cf, VALUE),
        )
        out = np.where(x_zero, 0.0, out)
        out = np.where(x_inf, 1.0, out)
        return np.where(domain, np.nan, out)


def igammac(a, x) -> np.ndarray:
    with np.errstate(all="ignore"):
        a, x, is_nan, ax, underflow = _prepare(a, x)
        x_inf, a_zero = x == np.inf, a == 0
        domain = (x < 0) | (a < 0) | (a_zero & (x == 0)) | is_nan
        use_series = (x < 1) | (x < a)
        enabled = ~(domain | underflow | x_inf | a_zero)
        out = np.where(
            use_series,
            1 - _series(ax, x, a, enabled & use_series, VALUE),
            _continued_fraction(ax, x, a, enabled & ~use_series, VALUE),
        )
        out = np.where(x_inf | a_zero, 0.0, out)
        return np.where(domain, np.nan, out)


def _derivative(a, x, mode) -> np.ndarray:
    with np.errstate(all="ignore"):
        a, x, is_nan, ax, underflow = _prepare(a, x)
        x_zero = x == 0
        domain = (x < 0) | (a <= 0)
        use_cf = (x > 1) & (x > a)
        enabled = ~(x_zero | domain | underflow | is_nan)
        out = np.where(
            use_cf,
            -_continued_fraction(ax, x, a, enabled & use_cf, mode),
            _series(ax, x, a, enabled & ~use_cf, mode),
        )
        out = np.where(x_zero, 0.0, out)
        return np.where(domain | is_nan, np.nan, out)


def igamma_grad_a(a, x) -> np.ndarray:
    """d/da of igamma(a, x)."""
    return _derivative(a, x, DERIVATIVE)


def random_gamma_grad(a, x) -> np.ndarray:
    """d/da of a Gamma(a, 1) sample x, holding its quantile fixed: -(dP/da) / (dP/dx)."""
    return _derivative(a, x, SAMPLE_DERIVATIVE)
