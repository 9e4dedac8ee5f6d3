"""The special functions of ``ember.lax`` (``bessel_i0e``, ``bessel_i1e``, ``zeta``,
``betainc``), each compiled as one program."""

from __future__ import annotations

from typing import Any

from ember._src.lax import special
from ember._src.transforms.jit import jit

# The special functions are long chains of elementwise operations: compiled as one program
# each, rather than dispatched one operation at a time.
_bessel_i0e = jit(special.bessel_i0e)
_bessel_i1e = jit(special.bessel_i1e)
_zeta = jit(special.zeta)
_betainc = jit(special.betainc)


def bessel_i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0."""
    return _bessel_i0e(x)


def bessel_i1e(x: Any) -> Any:
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1."""
    return _bessel_i1e(x)


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function ``sum_k (q + k) ** -x``."""
    return _zeta(x, q)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    return _betainc(a, b, x)
