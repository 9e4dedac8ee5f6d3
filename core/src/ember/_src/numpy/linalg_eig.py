"""``ember.numpy.linalg``'s general (non-symmetric) eigenproblem: ``eig`` and ``eigvals``, over
the ``eig`` primitive (``lax.linalg.eig``: the shifted QR algorithm generically, LAPACK's
``geev`` where a platform overrides it). Eigenvalues are always complex; eigenvectors are
columns of unit 2-norm with their largest entry real and positive on every path. Both are
differentiable (the eigenvectors' derivative assumes distinct eigenvalues).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src.core import get_aval
from ember._src.lax import linalg as lax_linalg
from ember._src.numpy import elementwise as enp, reductions
from ember._src.numpy.advanced_indexing import take_along_axis
from ember._src.numpy.linalg import _float_matrix
from ember._src.numpy.operands import dtype_of
from ember._src.primitives.stop_gradient import stop_gradient
from ember._src.transforms.jit import jit

# --------------------------------------------------------------------------------------------
# Small helpers (least squares and the polynomial roots use them too)


def _const(value: Any, dtype: Any) -> np.ndarray:
    return np.asarray(value, dtype)


def _abs2(x: Any) -> Any:
    """|x|^2 for real or complex x, without the square root of ``abs``."""
    return enp.real(x * enp.conjugate(x))


def _safe_divide(numerator: Any, denominator: Any) -> Any:
    """numerator / denominator, and 0 where the denominator is 0 (no nan for later masks)."""
    zero = enp.equal(denominator, 0)
    safe = enp.where(zero, _const(1, dtype_of(denominator)), denominator)
    return enp.where(zero, _const(0, dtype_of(numerator)), numerator / safe)


# --------------------------------------------------------------------------------------------
# Eigenvalues and eigenvectors


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def _unit_scaled(a: Any) -> tuple[Any, Any]:
    """``a`` divided by its largest magnitude (per matrix), and that scale (1 for a zero or
    non-finite matrix), as ``(..., 1)``. The eigenvalues scale with it exactly; LAPACK's geev,
    run inside XLA where subnormal numbers flush to zero, gives zeros for a matrix of entries
    around 1e-25 without it."""
    magnitude = enp.abs(a)
    zero = _const(0, dtype_of(magnitude))
    scale = stop_gradient(reductions.max(magnitude, axis=(-2, -1), keepdims=True, initial=zero))
    usable = enp.logical_and(enp.isfinite(scale), enp.greater(scale, _const(0, dtype_of(scale))))
    scale = enp.where(usable, scale, _const(1, dtype_of(scale)))
    return a / scale.astype(dtype_of(a)), scale[..., 0]


def _positive_gauge(v: Any) -> Any:
    """Each column with its largest entry made real and positive (geev makes it real; the sign
    then depends on the path that computed it)."""
    if get_aval(v).size == 0:
        return v
    rows = reductions.argmax(enp.abs(v), axis=-2, keepdims=True)
    largest = take_along_axis(v, rows, axis=-2)
    size = enp.abs(largest)
    phase = _safe_divide(largest, size.astype(dtype_of(largest)))
    phase = enp.where(enp.equal(size, 0), _const(1, dtype_of(v)), phase)
    return v * enp.conjugate(phase)


def _eig_impl(a: Any) -> EigResult:
    scaled, scale = _unit_scaled(a)
    w, v = lax_linalg.eig(scaled, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return EigResult(w * scale.astype(dtype_of(w)), _positive_gauge(v))


def _eigvals_impl(a: Any) -> Any:
    scaled, scale = _unit_scaled(a)
    (w,) = lax_linalg.eig(scaled, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return w * scale.astype(dtype_of(w))


# one compiled program per shape when called eagerly (inlined under an outer jit)
_eig_compiled = jit(_eig_impl, inline=True)
_eigvals_compiled = jit(_eigvals_impl, inline=True)


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors (columns, unit 2-norm) of general square matrices,
    always complex. Differentiable; the eigenvectors' derivative assumes distinct eigenvalues.
    """
    return _eig_compiled(_float_matrix(a, "eig"))


def eigvals(a: Any) -> Any:
    """Eigenvalues of general square matrices (complex, in no particular order)."""
    return _eigvals_compiled(_float_matrix(a, "eigvals"))
