"""Special functions: erf, erfc, erf_inv, lgamma, digamma and polygamma (lowered to CHLO,
which XLA expands itself).

The NumPy reference rules evaluate the same functions in float64 (``math.erf``,
``math.lgamma``, the series of ``special_numpy``) and, for ``erf_inv``, Giles'
single-precision approximation refined by Newton steps, then round to the operand's dtype.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src import rules
from ember._src.core import Zero, get_aval, tangent_aval
from ember._src.primitives import special_numpy
from ember._src.primitives.arithmetic import add, div, mul, neg
from ember._src.primitives.elementwise import _FLOAT, coerce_scalars, elementwise_rules
from ember._src.primitives.math_functions import exp, unary_jvp
from ember._src.primitives.shape import broadcast_in_dim


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


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _scalar(x: Any, value: float) -> Any:
    return np.asarray(value, x.aval.dtype if hasattr(x, "aval") else np.result_type(x))


erf_p = rules.define_primitive(
    "erf",
    **elementwise_rules(_vectorized(math.erf), "chlo.erf", _FLOAT),
    jvp=unary_jvp(lambda x, y: mul(_scalar(x, _TWO_OVER_SQRT_PI), exp(neg(mul(x, x))))),
)


def erf(x: Any) -> Any:
    return erf_p.bind(x)


erfc_p = rules.define_primitive(
    "erfc",
    **elementwise_rules(_vectorized(math.erfc), "chlo.erfc", _FLOAT),
    jvp=unary_jvp(lambda x, y: mul(_scalar(x, -_TWO_OVER_SQRT_PI), exp(neg(mul(x, x))))),
)


def erfc(x: Any) -> Any:
    return erfc_p.bind(x)


erf_inv_p = rules.define_primitive(
    "erf_inv",
    **elementwise_rules(_erf_inv_reference, "chlo.erf_inv", _FLOAT),
    jvp=unary_jvp(lambda x, y: div(exp(mul(y, y)), _scalar(x, _TWO_OVER_SQRT_PI))),
)


def erf_inv(x: Any) -> Any:
    return erf_inv_p.bind(x)


# --------------------------------------------------------------------------------------------
# The gamma function's logarithm and derivatives


def _float64_rule(fn):
    """A reference rule computing ``fn`` in float64 and rounding to the operands' dtype."""

    def reference(*args: np.ndarray) -> np.ndarray:
        return np.asarray(fn(*args)).astype(args[-1].dtype)

    return reference


lgamma_p = rules.define_primitive(
    "lgamma",
    **elementwise_rules(_float64_rule(special_numpy.lgamma), "chlo.lgamma", _FLOAT),
    jvp=unary_jvp(lambda x, y: digamma(x)),
)


def lgamma(x: Any) -> Any:
    """log |Gamma(x)|, elementwise (inf at the poles 0, -1, -2, ...)."""
    return lgamma_p.bind(x)


digamma_p = rules.define_primitive(
    "digamma",
    **elementwise_rules(_float64_rule(special_numpy.digamma), "chlo.digamma", _FLOAT),
    jvp=unary_jvp(lambda x, y: polygamma(_scalar(x, 1.0), x)),
)


def digamma(x: Any) -> Any:
    """The digamma function psi(x) = d/dx lgamma(x) (nan at the poles 0, -1, -2, ...)."""
    return digamma_p.bind(x)


def _polygamma_jvp(primals, tangents):
    m, x = primals
    tm, tx = tangents
    out = polygamma(m, x)
    out_aval = tangent_aval(get_aval(out))
    if type(tm) is not Zero:
        raise ValueError("polygamma is not differentiable with respect to its order m")
    if type(tx) is Zero:
        return out, Zero(out_aval)
    slope = polygamma(add(m, _scalar(m, 1.0)), x)
    if not get_aval(tx).shape and out_aval.shape:
        tx = broadcast_in_dim(tx, out_aval.shape, ())
    return out, mul(tx, slope)


polygamma_p = rules.define_primitive(
    "polygamma",
    **elementwise_rules(_float64_rule(special_numpy.polygamma), "chlo.polygamma", _FLOAT),
    jvp=_polygamma_jvp,
)


def polygamma(m: Any, x: Any) -> Any:
    """The m-th derivative of digamma at x; ``m`` is a float holding a non-negative integer
    (other values give nan, as in XLA)."""
    return polygamma_p.bind(*coerce_scalars(m, x))
