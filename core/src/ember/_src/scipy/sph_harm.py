"""Spherical harmonics ``Y_n^m(theta, phi)`` for ``ember.scipy.special.sph_harm_y``.

``Y_n^m = Q_n^|m|(cos theta) e^(i m phi)``, with ``Q`` the associated Legendre function
normalized over the sphere (Condon-Shortley phase included, as SciPy), and
``Y_n^-m = (-1)^m conj(Y_n^m)``. ``Q`` is computed by the stable three-term recurrence in the
degree: ``Q_m^m = (-1)^m sqrt(1/(4 pi) prod_(k<=m) (2k+1)/(2k)) sin^m theta``,
``Q_(m+1)^m = sqrt(2m+3) cos theta Q_m^m`` and
``Q_l^m = a_l (cos theta Q_(l-1)^m - Q_(l-2)^m / a_(l-1))`` with
``a_l = sqrt((4l^2 - 1) / (l^2 - m^2))``. Every element carries its own ``n`` and ``m``; the
loops run ``n_max`` steps (a static length), masked per element.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import concrete, creation, elementwise as jnp, manipulation
from ember._src.numpy.operands import broadcast_shapes_for, cast, promote_to_inexact
from ember._src.primitives.arithmetic import complex as make_complex
from ember._src.primitives.control_flow.loops import fori_loop


def _normalized_legendre(n: Any, m: Any, x: Any, sin: Any, n_max: int) -> Any:
    """``Q_n^m(x)`` for ``0 <= m <= n <= n_max`` elementwise (``n``, ``m`` as floats)."""
    dtype = get_aval(x).dtype

    def diagonal_step(k, q):
        # Q_(k+1)^(k+1) = -sqrt((2k+3)/(2k+2)) sin Q_k^k, applied while k < m.
        k = k.astype(dtype)
        factor = -jnp.sqrt((2 * k + 3) / (2 * k + 2)) * sin
        return jnp.where(k < m, q * factor, q)

    start = creation.full_like(x, 1 / math.sqrt(4 * math.pi))
    diagonal = fori_loop(0, n_max, diagonal_step, start)

    def degree_step(degree, carry):
        # Advances (Q_(l-2)^m, Q_(l-1)^m) to (Q_(l-1)^m, Q_l^m), l = degree, where m < l <= n.
        older, previous = carry
        degree = degree.astype(dtype)
        below = degree - 1
        a = jnp.sqrt((4 * degree * degree - 1) / jnp.maximum(degree * degree - m * m, 1))
        a_below = jnp.sqrt((4 * below * below - 1) / jnp.maximum(below * below - m * m, 1))
        current = jnp.where(
            degree == m + 1,
            jnp.sqrt(2 * m + 3) * x * previous,
            a * (x * previous - older / a_below),
        )
        active = (degree > m) & (degree <= n)
        return jnp.where(active, previous, older), jnp.where(active, current, previous)

    _, value = fori_loop(1, n_max + 1, degree_step, (creation.zeros_like(x), diagonal))
    return value


def sph_harm_y(
    n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None, n_max: int | None = None
) -> Any:
    """The spherical harmonic ``Y_n^m(theta, phi)`` (``theta`` polar, ``phi`` azimuthal), as
    ``scipy.special.sph_harm_y``; the arguments broadcast (the result is at least 1-D, as
    JAX's). ``n_max`` (static) bounds the degree: larger ``n`` are clipped to it; without it
    ``n`` must be concrete. Derivatives (``diff_n``) are not supported, as in JAX."""
    if diff_n is not None:
        raise NotImplementedError("sph_harm_y: the diff_n argument is not supported (as in JAX)")
    if n_max is None:
        n_max = np.max(np.asarray(concrete.concrete_or_error(n, "sph_harm_y's n (or n_max)")))
    n_max = int(concrete.concrete_or_error(n_max, "sph_harm_y's n_max"))
    theta, phi = promote_to_inexact(theta, phi)
    dtype = get_aval(theta).dtype
    n, m = (cast(creation.asarray(v), dtype) for v in (n, m))
    # Broadcast fully (rank 0 included): the loops carry arrays of the result's shape.
    shape = broadcast_shapes_for("sph_harm_y", *(get_aval(v).shape for v in (n, m, theta, phi)))
    n, m, theta, phi = (manipulation.broadcast_to(v, shape) for v in (n, m, theta, phi))
    n = jnp.minimum(n, n_max)
    order = jnp.abs(m)
    legendre = _normalized_legendre(n, order, jnp.cos(theta), jnp.sin(theta), n_max)
    angle = order * phi
    harmonic = make_complex(legendre * jnp.cos(angle), legendre * jnp.sin(angle))
    # Y_n^-m = (-1)^m conj(Y_n^m)
    sign = jnp.where(jnp.fmod(order, 2) == 1, -1, 1).astype(dtype)
    harmonic = jnp.where(m < 0, sign * jnp.conjugate(harmonic), harmonic)
    return manipulation.atleast_1d(harmonic)
