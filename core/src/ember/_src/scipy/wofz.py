"""The Faddeeva function ``w(z) = exp(-z^2) erfc(-iz)`` for ``ember.scipy.special``.

In the upper half plane it is Weideman's rational approximation (SIAM J. Numer. Anal. 31,
1994) with N = 32 terms: ``w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz))`` with
``Z = (L + iz) / (L - iz)`` and ``p`` a degree-31 polynomial; it is accurate to about 1e-13
relative everywhere in ``Im z >= 0``, as one closed expression (no regions to select, so it
is cheap under jit and vmap). The lower half plane follows from the reflection
``w(z) = 2 exp(-z^2) - w(-z)``, which overflows where ``exp(-z^2)`` does, as SciPy's does.
``w`` is 0 at ``Re z = +-inf`` (finite ``Im z``), as SciPy's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import elementwise as jnp
from ember._src.numpy.operands import cast, prepare_inexact
from ember._src.primitives.arithmetic import complex as make_complex
from ember._src.transforms.custom_derivatives import custom_jvp

_L = 4.7568284600108841  # sqrt(N / sqrt(2)) for N = 32
# p's coefficients, highest degree first (Weideman's a_n, n = 31 .. 0).
_COEFFICIENTS = (
    -1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12,
    -2.1543593557490879e-11, -5.5442449963237932e-11, 1.165824698850374e-10,
    4.1537441121999766e-10, -5.2310202114920615e-10, -3.2080151339721323e-09,
    8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
    4.4015317312832251e-06, 6.8210319443575151e-06, -2.1409619201999998e-05,
    -0.00013075449254579421, -0.00024532980270038237, 0.00039259136070109705,
    0.0045195411053493093, 0.019006155784845501, 0.057304403529837282,
    0.14060716226893755, 0.29544451071508743, 0.54601397206393376,
    0.9019254893648001, 1.3455441692345449, 1.8256696296324815,
    2.2635372999002676, 2.5722534081245696,
)  # fmt: skip


def _upper(z: Any) -> Any:
    """``w(z)`` for ``Im z >= 0``."""
    iz = make_complex(-jnp.imag(z), jnp.real(z))
    denominator = _L - iz
    ratio = (_L + iz) / denominator
    dtype = get_aval(z).dtype
    # Horner's rule, unrolled: 32 complex multiply-adds.
    p = np.asarray(_COEFFICIENTS[0], dtype)
    for coefficient in _COEFFICIENTS[1:]:
        p = p * ratio + np.asarray(coefficient, dtype)
    return 2 * p / (denominator * denominator) + (1 / math.sqrt(math.pi)) / denominator


@custom_jvp
def _wofz(z: Any) -> Any:
    upper = jnp.imag(z) >= 0
    w_reflected = _upper(jnp.where(upper, z, -z))
    value = jnp.where(upper, w_reflected, 2 * jnp.exp(-(z * z)) - w_reflected)
    # w -> 0 as Re z -> +-inf along a horizontal line (inf / inf in Z would give nan).
    far = jnp.isinf(jnp.real(z)) & jnp.isfinite(jnp.imag(z))
    return jnp.where(far, np.zeros((), get_aval(z).dtype), value)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    (z,), (tz,) = primals, tangents
    w = _wofz(z)
    # w'(z) = -2 z w(z) + 2i / sqrt(pi)
    return w, tz * (-2 * z * w + np.asarray(2j / math.sqrt(math.pi), get_aval(z).dtype))


def wofz(z: Any) -> Any:
    """The Faddeeva function ``exp(-z^2) erfc(-iz)`` of real or complex ``z``: complex64 for
    float32/complex64 (and integer) input, complex128 for 64-bit input."""
    (z,) = prepare_inexact("wofz", z)
    aval = get_aval(z)
    if not np.issubdtype(aval.dtype, np.complexfloating):
        z = cast(z, np.result_type(aval.dtype, np.complex64), aval.weak_type)
    return _wofz(z)
