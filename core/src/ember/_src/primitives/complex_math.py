"""Complex elementwise math in NumPy, for the reference backend's rules: written to give the
answers that XLA (and so JAX) gives. The elementwise primitives evaluate complex operands by
these functions (see ``elementwise.real_or_complex``).

NumPy follows C99 Annex G for complex special values (infinities, nans, signed zeros); XLA's
algorithms differ from it in places (``exp(inf+infj)`` is ``nan+nanj``, ``tanh(infj)`` is
``nan+nanj``, a negative zero on a branch cut is read as a positive one, ...). The rules below
compute each function by the same formulas XLA uses where that decides the special values,
and otherwise start from NumPy's answer and apply the documented differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def from_parts(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """Assemble a complex array from its parts (``re + 1j * im`` would turn inf * 0 into nan, and
    lose a -0 imaginary part)."""
    out = np.empty(np.broadcast(re, im).shape, np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def _nan_complex(like: np.ndarray) -> np.ndarray:
    return np.array(complex(np.nan, np.nan), like.dtype)


def complex_abs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a + bi|; nan when either part is nan (C99's hypot would give inf for an infinite one)."""
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.hypot(a, b)).astype(a.dtype)


def _log_abs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log|a + bi| as log(max) + log1p((min/max)^2) / 2: accurate where |z| is near 1."""
    big = np.maximum(np.abs(a), np.abs(b))
    small = np.minimum(np.abs(a), np.abs(b))
    result = np.log(big) + 0.5 * np.log1p((small / big) ** 2)
    result = np.where(big == np.inf, np.inf, result)
    result = np.where(big == 0, -np.inf, result)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, result).astype(a.dtype)


def exp(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    ea = np.exp(a)
    # On the real axis the result is e^a + 0j (no inf * 0 = nan; XLA's zero is +0 whatever
    # b's sign); elsewhere e^a (cos b + i sin b).
    return from_parts(np.where(b == 0, ea, ea * np.cos(b)), np.where(b == 0, 0, ea * np.sin(b)))


def expm1(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    em1 = np.expm1(a)
    re = em1 * np.cos(b) - 2 * np.sin(b / 2) ** 2
    im = (em1 + 1) * np.sin(b)
    # On the real axis: expm1(a) + 0j. XLA's real zeros are +0 (the + 0.0).
    return from_parts(np.where(b == 0, em1, re) + 0.0, np.where(b == 0, 0, im))


def log(z: np.ndarray) -> np.ndarray:
    return from_parts(_log_abs(z.real, z.imag), np.arctan2(z.imag, z.real))


def log1p(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    # Near 0, log|1+z| = log1p(a(a+2) + b^2) / 2 keeps the digits log(1 + z) loses.
    small = np.maximum(np.abs(a), np.abs(b)) < 0.5
    near = 0.5 * np.log1p(np.where(small, a * (a + 2) + b * b, 0))
    re = np.where(small, near, _log_abs(a + 1, b))
    return from_parts(re.astype(a.dtype), np.arctan2(b, a + 1))


def sqrt(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    r = complex_abs(a, b)
    t = np.sqrt(0.5 * (np.abs(a) + r))
    re = np.where(a >= 0, t, np.abs(b) / (2 * t))
    im = np.where(a >= 0, np.abs(b) / (2 * t), t)
    re, im = np.where(r == 0, 0, re), np.where(r == 0, 0, im)
    # The imaginary part is negated where b < 0, so a zero b counts as +0 (sqrt(-1 - 0j) is
    # +1j, where NumPy gives -1j).
    im = np.where(b < 0, -im, im)
    infinite_b = np.isinf(b) & ~np.isnan(a)
    return from_parts(np.where(infinite_b, np.inf, re), np.where(infinite_b, b, im))


def _trig_parts(z: np.ndarray):
    """sin a, cos a, sinh b, cosh b, with sinh and cosh from expm1 (as JAX lowers sin/cos)."""
    a, b = z.real, z.imag
    e1, e2 = np.expm1(b), np.expm1(-b)
    return np.sin(a), np.cos(a), (e1 - e2) / 2, (e1 + e2 + 2) / 2


def sin(z: np.ndarray) -> np.ndarray:
    sn, cs, snh, csh = _trig_parts(z)
    return from_parts(np.where(z.real == 0, 0, sn * csh).astype(sn.dtype), cs * snh)


def cos(z: np.ndarray) -> np.ndarray:
    sn, cs, snh, csh = _trig_parts(z)
    return from_parts(cs * csh, np.where(z.real == 0, 0, -sn * snh).astype(sn.dtype))


def _hyperbolic(z: np.ndarray, odd: bool) -> np.ndarray:
    """sinh (odd) or cosh of a + bi as XLA computes them: sinh(a) cos(b) + i cosh(a) sin(b)
    (and the mirror for cosh), with sinh a = (e^a - e^-a) / 2 (so 0 for tiny a, as XLA), and
    scaled where |a| is large so that e^|a| overflows only when the result does."""
    a, b = z.real, z.imag
    large = np.abs(a) > 20  # there sinh a = ±cosh a = ±e^|a| / 2
    half = np.exp(np.abs(a) / 2)
    sign = np.where(a < 0, -1, 1).astype(a.dtype)
    ep, em = np.exp(np.where(large, 0, a)), np.exp(-np.where(large, 0, a))
    sh = np.where(large, sign * half, (ep - em) / 2)
    ch = np.where(large, half, (ep + em) / 2)
    re = (sh if odd else ch) * np.cos(b)
    im = (ch if odd else sh) * np.sin(b)
    # e^|a|/2 * t is computed as (half * t / 2) * half.
    re, im = np.where(large, re / 2 * half, re), np.where(large, im / 2 * half, im)
    # On the real axis the imaginary part is +0 (never inf * 0 = nan, nor a signed zero).
    im = np.where(b == 0, 0, im)
    # XLA's zeros here are +0 (its products of zero come out unsigned).
    return from_parts(re.astype(a.dtype) + 0, im.astype(a.dtype) + 0)


def sinh(z: np.ndarray) -> np.ndarray:
    return _hyperbolic(z, odd=True)


def cosh(z: np.ndarray) -> np.ndarray:
    return _hyperbolic(z, odd=False)


def tanh(z: np.ndarray) -> np.ndarray:
    # C99 keeps the real part of tanh(±0 + i inf/nan) as ±0; XLA's ratio makes it nan too.
    lost = (z.real == 0) & ~np.isfinite(z.imag)
    w = np.where(lost, _nan_complex(z), np.tanh(z))
    # On the real axis, and for an infinite a with a non-finite b, the imaginary part is +0.
    unsigned = (z.imag == 0) | (np.isinf(z.real) & ~np.isfinite(z.imag))
    return from_parts(w.real, np.where(unsigned, 0, w.imag).astype(w.real.dtype))


def tan(z: np.ndarray) -> np.ndarray:
    w = tanh(from_parts(-z.imag, z.real))  # tan z = -i tanh(iz)
    return from_parts(w.imag, -w.real)


def _nan_with_finite(z: np.ndarray, result: np.ndarray) -> np.ndarray:
    """A nan part beside a finite one gives nan + nanj (C99 keeps some zeros or pi/2)."""
    a, b = z.real, z.imag
    mixed = (np.isnan(a) & np.isfinite(b)) | (np.isnan(b) & np.isfinite(a))
    return np.where(mixed, _nan_complex(z), result)


def _positive_zero_imag(z: np.ndarray, cut: Any) -> np.ndarray:
    """XLA's inverse functions read a zero imaginary part as +0 whatever its sign."""
    return np.where(cut & (z.imag == 0), from_parts(z.real, np.zeros_like(z.real)), z)


def _positive_zero_real(z: np.ndarray, cut: Any) -> np.ndarray:
    return np.where(cut & (z.real == 0), from_parts(np.zeros_like(z.imag), z.imag), z)


_EVERYWHERE = True  # (the sign is ignored off the branch cuts too)


def asin(z: np.ndarray) -> np.ndarray:
    return _nan_with_finite(z, np.arcsin(_positive_zero_imag(z, _EVERYWHERE)))


def acos(z: np.ndarray) -> np.ndarray:
    return _nan_with_finite(z, np.arccos(_positive_zero_imag(z, _EVERYWHERE)))


def acosh(z: np.ndarray) -> np.ndarray:
    return _nan_with_finite(z, np.arccosh(_positive_zero_imag(z, _EVERYWHERE)))


def asinh(z: np.ndarray) -> np.ndarray:
    return _nan_with_finite(z, np.arcsinh(_positive_zero_real(z, _EVERYWHERE)))


def atanh(z: np.ndarray) -> np.ndarray:
    w = _nan_with_finite(z, np.arctanh(z))
    # For a zero a the real part of the result is +0 (C99 copies the sign of a); for
    # nan + inf j it is -0 (C99 leaves the sign open).
    re = np.where((z.real == 0) & (w.real == 0), 0, w.real)
    re = np.where(np.isnan(z.real) & np.isinf(z.imag), -0.0, re)
    w = from_parts(re.astype(w.real.dtype), w.imag)
    a, b = z.real, z.imag
    # With an infinite or nan part, XLA's imaginary part is ±pi/2 by b >= 0 (nan counts as <).
    nonfinite = ~np.isfinite(a) | ~np.isfinite(b)
    half_pi = np.where(b >= 0, np.pi / 2, -np.pi / 2).astype(a.dtype)
    return from_parts(w.real, np.where(nonfinite, half_pi, w.imag))


def atan(z: np.ndarray) -> np.ndarray:
    w = atanh(from_parts(-z.imag, z.real))  # atan z = -i atanh(iz)
    return from_parts(w.imag, -w.real)


def sign(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    r = complex_abs(a, b)
    return np.where(r == 0, z, from_parts(a / r, b / r))


def square(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    # (a - b)(a + b) rounds once (a * a - b * b could be inf - inf); where finite |a| = |b|
    # XLA writes its zero as +0.
    equal = (np.abs(a) == np.abs(b)) & np.isfinite(a)
    re = np.where(equal, 0, (a - b) * (a + b)).astype(a.dtype)
    return from_parts(re, 2 * a * b)


def divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x / y by Smith's algorithm (NumPy's, as XLA's), with C99 Annex G's recovery of the
    infinities and zeros that it turns into nan (x / 0, inf / finite, finite / inf)."""
    x, y = np.broadcast_arrays(x, y)
    result = np.true_divide(x, y)
    a, b, c, d = x.real, x.imag, y.real, y.imag
    dtype = a.dtype
    inf = np.array(np.inf, dtype)
    re, im = result.real, result.imag
    by_zero = (c == 0) & (d == 0) & (~np.isnan(a) | ~np.isnan(b))
    re = np.where(by_zero, np.copysign(inf, c) * a, re)
    im = np.where(by_zero, np.copysign(inf, c) * b, im)
    lost = np.isnan(re) & np.isnan(im) & ~by_zero
    infinite_x = lost & (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
    a1, b1 = np.copysign(np.isinf(a).astype(dtype), a), np.copysign(np.isinf(b).astype(dtype), b)
    re = np.where(infinite_x, inf * (a1 * c + b1 * d), re)
    im = np.where(infinite_x, inf * (b1 * c - a1 * d), im)
    infinite_y = lost & (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
    c1, d1 = np.copysign(np.isinf(c).astype(dtype), c), np.copysign(np.isinf(d).astype(dtype), d)
    re = np.where(infinite_y, 0 * (a * c1 + b * d1), re)
    im = np.where(infinite_y, 0 * (b * c1 - a * d1), im)
    return from_parts(re.astype(dtype), im.astype(dtype))


def power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y as exp(y log x), as XLA computes a complex power (so 1j ** 2 is -1 - 8.7e-8j in
    complex64, and 0 ** y is nan)."""
    x, y = np.broadcast_arrays(x, y)
    result = exp(np.multiply(y, log(x)))
    # 0 ** y: 0 for a positive real y and 1 for y = 0 (log(0) = -inf would give nan).
    zero_base = x == 0
    result = np.where(zero_base & (y.imag == 0) & (y.real > 0), 0, result)
    return np.where(zero_base & (y == 0), 1, result).astype(x.dtype)


def integer_power(x: np.ndarray, n: int) -> np.ndarray:
    """x ** n by the same repeated squaring (and, for n < 0, division) as the lowering."""
    result, base, k = None, x, abs(n)
    while k:
        if k & 1:
            result = base if result is None else result * base
        k >>= 1
        if k:
            base = base * base
    if result is None:
        return np.ones_like(x)
    return divide(np.ones_like(x), result) if n < 0 else result


def _lexicographic(compare):
    """max (compare = greater) or min (less) of complex values ordered by (real, imag) pairs,
    as JAX: x where it compares so, else y (so a nan part makes y the answer)."""

    def pick(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        which = np.where(x.real == y.real, compare(x.imag, y.imag), compare(x.real, y.real))
        return np.where(which, x, y)

    return pick


maximum = _lexicographic(np.greater)
minimum = _lexicographic(np.less)
