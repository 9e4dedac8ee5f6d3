"""Special functions: erf, erfc and erf_inv (lowered to CHLO, which XLA expands itself).

The NumPy reference rules evaluate the same functions in float64 (``math.erf``) and, for
``erf_inv``, Giles' single-precision approximation refined by Newton steps, then round to the
operand's dtype.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.ops.elementwise import (
    _FLOAT,
    def_unary_jvp,
    div,
    exp,
    make_elementwise,
    mul,
    neg,
)


def _vectorized(fn):
    scalar = np.vectorize(fn, otypes=[np.float64])

    def reference(x: np.ndarray) -> np.ndarray:
        return scalar(x.astype(np.float64)).astype(x.dtype)

    return reference


def _erf_inv_reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - z) * (1.0 + z))
        small = w < 5.0
        ws = w - 2.5
        p_small = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):  # fmt: skip
            p_small = c + p_small * ws
        wl = np.sqrt(w) - 3.0
        p_large = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):  # fmt: skip
            p_large = c + p_large * wl
        y = np.where(small, p_small, p_large) * z
        erf = np.vectorize(math.erf, otypes=[np.float64])
        for _ in range(2):  # Newton: f(y) = erf(y) - z, f'(y) = 2/sqrt(pi) exp(-y^2)
            y = y - (erf(y) - z) / (2.0 / math.sqrt(math.pi) * np.exp(-y * y))
        y = np.where(np.abs(z) == 1.0, np.copysign(np.inf, z), y)
    return y.astype(x.dtype)


erf_p = make_elementwise("erf", _vectorized(math.erf), "chlo.erf", _FLOAT)
erfc_p = make_elementwise("erfc", _vectorized(math.erfc), "chlo.erfc", _FLOAT)
erf_inv_p = make_elementwise("erf_inv", _erf_inv_reference, "chlo.erf_inv", _FLOAT)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _scalar(x: Any, value: float) -> Any:
    return np.asarray(value, x.aval.dtype if hasattr(x, "aval") else np.result_type(x))


def_unary_jvp(erf_p, lambda x, y: mul(_scalar(x, _TWO_OVER_SQRT_PI), exp(neg(mul(x, x)))))
def_unary_jvp(erfc_p, lambda x, y: mul(_scalar(x, -_TWO_OVER_SQRT_PI), exp(neg(mul(x, x)))))
def_unary_jvp(erf_inv_p, lambda x, y: div(exp(mul(y, y)), _scalar(x, _TWO_OVER_SQRT_PI)))


def erf(x: Any) -> Any:
    return erf_p.bind(x)


def erfc(x: Any) -> Any:
    return erfc_p.bind(x)


def erf_inv(x: Any) -> Any:
    return erf_inv_p.bind(x)
