"""Polynomials as 1-D coefficient arrays, highest power first (NumPy's ``poly1d`` order):
construction from roots, arithmetic, division, derivatives, integrals, least-squares fits,
evaluation (``polyval``) and ``roots`` (the eigenvalues of the companion matrix).

Output lengths follow the inputs' static lengths, as in JAX: ``polydiv``'s remainder keeps the
dividend's length unless ``trim_leading_zeros=True`` (which needs concrete values).
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    inexact_dtype,
    positions,
)
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg import (
    inv,
    svd,
)
from ember._src.numpy.linalg_eig import _const, eigvals
from ember._src.numpy.operands import (
    as_operand,
    dtype_of,
    promote_dtypes,
    promote_to_inexact,
    shape_of,
)
from ember._src.numpy.products import convolve
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.primitives.shape import (
    convert_element_type,
)
from ember._src.transforms.jit import jit


def _coefficients(name: str, p: Any) -> Any:
    p = creation.asarray(as_operand(p))
    if get_aval(p).ndim != 1:
        raise ValueError(
            f"{name}: coefficients must be 1-D, got shape {shape_of(p)}{errors.where()}"
        )
    return p


def _inexact(x: Any) -> Any:
    (x,) = promote_to_inexact(x)
    return x


def _pad_front(p: Any, length: int) -> Any:
    missing = length - shape_of(p)[0]
    if missing <= 0:
        return p
    return manipulation.concatenate([creation.zeros((missing,), dtype_of(p)), p])


def _trim_leading_zeros(name: str, p: Any) -> Any:
    """``p`` without its leading zeros (keeping at least one coefficient): concrete only."""
    if isinstance(p, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"{name}: trim_leading_zeros=True needs concrete coefficients (the output length "
            f"depends on them){errors.where()}"
        )
    values = np.asarray(p)
    nonzero = np.flatnonzero(values)
    first = int(nonzero[0]) if nonzero.size else max(values.size - 1, 0)
    return p[first:]


def poly(seq_of_zeros: Any) -> Any:
    """Coefficients of the monic polynomial with the given roots (or, for a square matrix,
    of its characteristic polynomial)."""
    roots = creation.asarray(as_operand(seq_of_zeros))
    shape = shape_of(roots)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0]:
        roots = eigvals(roots)  # complex, as in JAX
    roots = manipulation.atleast_1d(roots)
    if get_aval(roots).ndim != 1:
        raise ValueError(
            f"poly: input must be 1-D or a non-empty square 2-D array, got shape {shape}"
            f"{errors.where()}"
        )
    roots = _inexact(roots)
    n = shape_of(roots)[0]
    if not n:
        return creation.ones((), dtype_of(roots))
    # Multiply in one factor (x - r) at a time: c_new[i] = c[i] - r * c[i - 1].
    coeffs = creation.asarray(np.eye(1, n + 1, dtype=dtype_of(roots))[0])
    for k in range(n):
        shifted = _pad_front(coeffs[:-1], n + 1)
        coeffs = enp.subtract(coeffs, enp.multiply(roots[k], shifted))
    return coeffs


def polyadd(a1: Any, a2: Any) -> Any:
    a1, a2 = promote_dtypes(_coefficients("polyadd", a1), _coefficients("polyadd", a2))
    length = max(shape_of(a1)[0], shape_of(a2)[0])
    return enp.add(_pad_front(a1, length), _pad_front(a2, length))


def polysub(a1: Any, a2: Any) -> Any:
    a1, a2 = promote_dtypes(_coefficients("polysub", a1), _coefficients("polysub", a2))
    length = max(shape_of(a1)[0], shape_of(a2)[0])
    return enp.subtract(_pad_front(a1, length), _pad_front(a2, length))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product polynomial (the full convolution of the coefficients)."""
    a1, a2 = promote_dtypes(_coefficients("polymul", a1), _coefficients("polymul", a2))
    if trim_leading_zeros and (shape_of(a1)[0] > 1 or shape_of(a2)[0] > 1):
        a1 = _trim_leading_zeros("polymul", a1)
        a2 = _trim_leading_zeros("polymul", a2)
    if not shape_of(a1)[0] or not shape_of(a2)[0]:
        return creation.zeros((0,), dtype_of(a1))
    return convolve(a1, a2, mode="full")


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Quotient and remainder of ``u / v`` by long division. The remainder has ``u``'s
    length (leading entries zero) unless ``trim_leading_zeros=True``."""
    u, v = promote_to_inexact(_coefficients("polydiv", u), _coefficients("polydiv", v))
    m, n = shape_of(u)[0] - 1, shape_of(v)[0] - 1
    if n < 0:
        raise ValueError(f"polydiv: the divisor v is empty{errors.where()}")
    scale = enp.divide(1, v[0])
    remainder = u
    quotient = creation.zeros((max(m - n + 1, 1),), dtype_of(u))
    for k in range(max(m - n + 1, 0)):
        d = enp.multiply(scale, remainder[k])
        quotient = quotient.at[k].set(d)
        remainder = remainder.at[k : k + n + 1].add(enp.negative(enp.multiply(d, v)))
    if trim_leading_zeros:
        remainder = _trim_leading_zeros("polydiv", remainder)
    return quotient, remainder


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative."""
    p = _inexact(_coefficients("polyder", p))
    m = operator.index(core.concrete_or_error(m, "polyder's m"))
    if m < 0:
        raise ValueError(f"polyder: order of derivative must be non-negative, got {m}")
    for _ in range(m):
        powers = np.arange(shape_of(p)[0] - 1, 0, -1).astype(dtype_of(p))
        p = enp.multiply(p[:-1], powers)
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative; ``k`` gives the integration constants (a scalar for all,
    or one per integration, the first used first)."""
    p = _inexact(_coefficients("polyint", p))
    m = operator.index(core.concrete_or_error(m, "polyint's m"))
    if m < 0:
        raise ValueError(f"polyint: order of integral must be non-negative, got {m}")
    constants = _integration_constants(k, m, dtype_of(p))
    for i in range(m):
        n = shape_of(p)[0]
        divided = enp.divide(p, np.arange(n, 0, -1).astype(dtype_of(p)))
        p = manipulation.concatenate([divided, manipulation.reshape(constants[i], (1,))])
    return p


def _integration_constants(k: Any, m: int, dtype: np.dtype) -> Any:
    if k is None:
        return creation.zeros((m,), dtype)
    k = convert_element_type(manipulation.atleast_1d(creation.asarray(as_operand(k))), dtype)
    if shape_of(k)[0] == 1 and m > 1:
        return manipulation.broadcast_to(k, (m,))
    if shape_of(k)[0] != m:
        raise ValueError(
            f"polyint: k must hold one constant or m = {m} of them, got {shape_of(k)[0]}"
            f"{errors.where()}"
        )
    return k


def polyfit(
    x: Any,
    y: Any,
    deg: int,
    rcond: float | None = None,
    full: bool = False,
    w: Any = None,
    cov: bool = False,
) -> Any:
    """Least-squares polynomial fit of degree ``deg`` (columns of the Vandermonde matrix
    scaled to unit norm, solved through the SVD)."""
    x, y = promote_to_inexact(creation.asarray(as_operand(x)), creation.asarray(as_operand(y)))
    deg = operator.index(core.concrete_or_error(deg, "polyfit's deg"))
    order = deg + 1
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}{errors.where()}")
    if get_aval(x).ndim != 1 or not shape_of(x)[0]:
        raise TypeError(f"polyfit: expected a non-empty 1-D x, got shape {shape_of(x)}")
    if get_aval(y).ndim not in (1, 2) or shape_of(y)[0] != shape_of(x)[0]:
        raise TypeError(
            f"polyfit: expected y of shape ({shape_of(x)[0]},) or ({shape_of(x)[0]}, K), got "
            f"{shape_of(y)}{errors.where()}"
        )
    real = dtypes.real_dtype(dtype_of(x))
    if rcond is None:
        rcond = shape_of(x)[0] * float(dtypes.finfo(real).eps)
    lhs = enp.power(x[:, None], np.arange(deg, -1, -1).astype(real))
    rhs = y
    if w is not None:
        w = convert_element_type(creation.asarray(as_operand(w)), dtype_of(x))
        if get_aval(w).ndim != 1 or shape_of(w)[0] != shape_of(x)[0]:
            raise TypeError(f"polyfit: expected w of shape ({shape_of(x)[0]},), got {shape_of(w)}")
        lhs = enp.multiply(lhs, w[:, None])
        rhs = enp.multiply(rhs, w if get_aval(rhs).ndim == 1 else w[:, None])
    scale = enp.sqrt(reductions.sum(enp.multiply(lhs, lhs), axis=0))
    lhs = enp.divide(lhs, scale)
    coeffs, resids, rank, singular = _least_squares(lhs, rhs, rcond)
    coeffs = enp.divide(coeffs, scale if get_aval(coeffs).ndim == 1 else scale[:, None])
    if full:
        return coeffs, resids, rank, singular, np.asarray(rcond, real)[()]
    if cov:
        base = enp.divide(inv(matmul(manipulation.transpose(lhs), lhs)), scale[:, None] * scale)
        if cov == "unscaled":
            factor = creation.ones((), dtype_of(base))
        else:
            if shape_of(x)[0] <= order:
                raise ValueError(
                    f"polyfit: the number of data points must exceed order to scale the "
                    f"covariance matrix{errors.where()}"
                )
            factor = enp.divide(resids, shape_of(x)[0] - order)
        if get_aval(y).ndim == 1:
            return coeffs, enp.multiply(base, factor)
        return coeffs, enp.multiply(base[:, :, None], factor)
    return coeffs


@functools.partial(jit, inline=True, static_argnames="rcond")  # one executable eagerly
def _least_squares(a: Any, b: Any, rcond: float) -> tuple[Any, Any, Any, Any]:
    """(solution, squared residual norms per column, rank, singular values) of
    min |a x - b| by the SVD, dropping singular values below ``rcond`` times the largest."""
    u, s, vh = svd(a, full_matrices=False)
    cutoff = enp.multiply(reductions.max(s), np.asarray(rcond, dtype_of(s)))
    keep = enp.greater(s, cutoff)
    inverse = enp.where(keep, enp.divide(1, enp.where(keep, s, 1)), 0).astype(dtype_of(s))
    projected = matmul(enp.conjugate(manipulation.transpose(u)), b)  # u^H b
    scaled = enp.multiply(projected, inverse if get_aval(b).ndim == 1 else inverse[:, None])
    solution = matmul(enp.conjugate(manipulation.transpose(vh)), scaled)
    residual = enp.subtract(b, matmul(a, solution))
    resids = reductions.sum(enp.real(enp.multiply(enp.conjugate(residual), residual)), axis=0)
    if get_aval(b).ndim == 1:
        resids = manipulation.reshape(resids, (1,))
    rank = reductions.sum(keep, dtype=dtypes.default_int())
    return solution, resids, rank, s


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """``p[0] * x**(n-1) + ... + p[n-1]`` by Horner's rule (``unroll`` only tunes JAX's
    loop; ember's loop is unrolled at trace time)."""
    operator.index(unroll)
    p, x = promote_dtypes(creation.asarray(p), creation.asarray(x))
    result = creation.zeros_like(x)
    for k in range(shape_of(p)[0]):
        result = enp.add(enp.multiply(result, x), p[k])
    return result


def _leading_zero_count(p: Any) -> Any:
    nonzero = enp.not_equal(p, 0)
    return enp.where(
        reductions.any(nonzero), reductions.argmax(nonzero).astype(np.int32), shape_of(p)[0]
    )


def _companion(p: Any, degree: Any) -> Any:
    """The companion matrix of p[0] x^degree + ... + p[degree] (trailing entries of p beyond
    it ignored), in the top-left block of a (len(p) - 1)^2 matrix; the rest is zero and
    decoupled, so its eigenvalues sit at the end of the Schur form's diagonal."""
    size = shape_of(p)[0] - 1
    index = positions(size)
    inside = enp.less(index, degree)
    first_row = enp.where(inside, -p[1:] / p[0], _const(0, dtype_of(p)))
    below = enp.logical_and(enp.equal(index[:, None], index[None, :] + 1), inside[:, None])
    matrix = enp.where(below, _const(1, dtype_of(p)), _const(0, dtype_of(p)))
    return matrix.at[0].set(first_row)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of the polynomial ``p[0] x^(n-1) + ... + p[n-1]`` (complex), as the
    eigenvalues of its companion matrix. Leading zeros are stripped (which needs concrete
    coefficients); with ``strip_zeros=False`` each leading zero gives a nan root instead."""
    p = creation.asarray(p)
    p = manipulation.astype(p, inexact_dtype(dtype_of(p)))
    if get_aval(p).ndim == 0:
        p = manipulation.reshape(p, (1,))
    if get_aval(p).ndim != 1:
        raise ValueError(f"roots: p must be a vector, got shape {shape_of(p)}{errors.where()}")
    complex_dtype = dtypes.complex_dtype(dtypes.real_dtype(dtype_of(p)))
    if shape_of(p)[0] < 2:
        return creation.zeros((0,), complex_dtype)
    if strip_zeros:
        return _roots_of_concrete(p, complex_dtype)
    leading = _leading_zero_count(p)
    degree = shape_of(p)[0] - 1 - leading
    shifted = manipulation.concatenate([p, creation.zeros_like(p)])
    shifted = shifted[leading + positions(shape_of(p)[0])]
    # only the top-left degree x degree block carries roots; the others are undefined
    found = eigvals(_companion(shifted, degree))
    undefined = enp.greater_equal(positions(shape_of(p)[0] - 1), degree)
    return enp.where(undefined, _const(np.nan + 1j * np.nan, complex_dtype), found)


def _roots_of_concrete(p: Any, complex_dtype: np.dtype) -> Any:
    """Strip leading zeros (they lower the degree) and trailing ones (exact zero roots)."""
    if isinstance(p, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"roots: stripping leading zeros of p needs concrete coefficients; under jit or "
            f"other transformations pass strip_zeros=False (leading zeros then give nan "
            f"roots){errors.where()}"
        )
    nonzero = np.flatnonzero(np.asarray(p) != 0)
    if nonzero.size == 0:
        return creation.zeros((0,), complex_dtype)
    first, last = int(nonzero[0]), int(nonzero[-1])
    trailing = shape_of(p)[0] - 1 - last
    zeros = creation.zeros((trailing,), complex_dtype)
    if last == first:
        return zeros
    core_p = p[first : last + 1]
    found = eigvals(_companion(core_p, last - first))
    return manipulation.concatenate([found, zeros])
