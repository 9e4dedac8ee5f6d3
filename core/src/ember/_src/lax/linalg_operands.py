"""What every factorisation in ``lax.linalg`` does to its operands: the dtype it works in,
the checks on matrix shapes, batching over leading axes, and the few array operations the
loops are written with (selection, identities, conjugate transposes, Hermitian parts).

The loops themselves index and update with the array methods (``x[i]``, ``x.at[i].set``,
``@``), which every ember array and tracer has."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.slicing import full
from ember._src.primitives.arithmetic import abs as abs_, conj, real
from ember._src.primitives.comparisons import eq
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_to_shape,
    convert_element_type,
    iota_along,
    transpose,
)
from ember._src.transforms.staging import ShapeDtypeStruct, eval_shape
from ember._src.transforms.vmap import vmap
from ember._src.tree import util as tree_util


def inexact_dtype(dtype: Any) -> np.dtype:
    """The dtype linear algebra works in for ``dtype``, as JAX chooses it: floating and complex
    stay; booleans and integers become float32, but 64-bit integers (which exist only with
    ``enable_x64``) float64."""
    dtype = np.dtype(dtype)
    if dtypes.is_inexact(dtype):
        return dtype
    return dtypes.canonicalize(np.float64 if dtype.itemsize == 8 else np.float32)


def check_matrix(shape: tuple[int, ...], what: str, square: bool = True) -> None:
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{what}: expected a matrix (or a stack), got shape {shape}{errors.where()}"
        )
    if square and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(
            f"{what}: expected square matrices, got shape {shape}{errors.where()}"
        )


def float_matrix(a: Any, what: str, square: bool = True) -> Any:
    """``a`` (an array, or nested lists) checked to be a (square) matrix or a stack of them,
    in the dtype linear algebra works in."""
    if isinstance(a, (list, tuple)):
        a = np.asarray(a)
    check_matrix(get_aval(a).shape, what, square)
    dtype = inexact_dtype(get_aval(a).dtype)
    return a if dtype == get_aval(a).dtype else convert_element_type(a, dtype)


def batched(fn, a: Any, *rest: Any, core_ndims: tuple[int, ...] = (2,)) -> Any:
    """Apply ``fn`` (written for one matrix) over leading batch axes with vmap."""
    batch = get_aval(a).ndim - core_ndims[0]
    if 0 in get_aval(a).shape[:batch]:
        return _no_matrices(fn, batch, a, *rest)
    for _ in range(batch):
        fn = vmap(fn)
    return fn(a, *rest)


def _no_matrices(fn, batch: int, *operands: Any) -> Any:
    """``fn`` over a stack of no matrices: empty results shaped as ``fn`` of one matrix would
    be (its body never runs, so it is only traced for the shapes)."""
    batch_shape = get_aval(operands[0]).shape[:batch]
    one = [ShapeDtypeStruct(get_aval(x).shape[batch:], get_aval(x).dtype) for x in operands]
    shapes = eval_shape(fn, *one)
    return tree_util.tree_map(lambda s: full(batch_shape + s.shape, 0, s.dtype), shapes)


def positions(n: int) -> Any:
    """``[0, 1, ..., n - 1]`` as int32: row and column numbers, compared with loop indices."""
    return iota_along(np.int32, (n,), 0)


def static_fori(lower: int, upper: int, body: Any, init: Any) -> Any:
    """``fori_loop`` over static bounds with an int32 index whatever ``enable_x64`` says (so
    the index shares a dtype with the int32 positions it is compared with and slices at). An
    empty range returns ``init`` without tracing ``body``, whose slices need a nonempty
    matrix."""
    if upper <= lower:
        return init
    return fori_loop(np.int32(lower), np.int32(upper), body, init)


def identity_matrix(n: int, dtype: Any, m: int | None = None) -> Any:
    """The (n, m) identity matrix of ``dtype`` (square by default)."""
    m = n if m is None else m
    ones = eq(iota_along(np.int32, (n, m), 0), iota_along(np.int32, (n, m), 1))
    return convert_element_type(ones, dtype)


def where_broadcast(condition: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``condition`` holds, else ``on_false``: the three broadcast together
    and the two values promote to one dtype (Python numbers are weakly typed), as NumPy's
    ``where`` does."""
    args = [on_true, on_false]
    dtype, weak = dtypes.promote([_dtype_and_weak(v) for v in args])
    shape = np.broadcast_shapes(*(_shape(v) for v in (condition, *args)))
    true_value, false_value = (broadcast_to_shape(_as_dtype(v, dtype, weak), shape) for v in args)
    condition = broadcast_to_shape(convert_element_type(condition, np.bool_), shape)
    return select_n(condition, false_value, true_value)


def _shape(x: Any) -> tuple[int, ...]:
    return () if dtypes.is_python_scalar(x) else get_aval(x).shape


def _dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    if dtypes.is_python_scalar(x):
        return dtypes.python_scalar_dtype(x), True
    aval = get_aval(x)
    return aval.dtype, aval.weak_type


def _as_dtype(x: Any, dtype: np.dtype, weak: bool) -> Any:
    if dtypes.is_python_scalar(x) or isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x, dtype)
    return convert_element_type(x, dtype, weak)


def conj_if_complex(x: Any) -> Any:
    """The complex conjugate (``x`` itself when real)."""
    return conj(x) if get_aval(x).dtype.kind == "c" else x


def real_part(x: Any) -> Any:
    """The real part (``x`` itself when real)."""
    return real(x) if get_aval(x).dtype.kind == "c" else x


def transpose_last_axes(x: Any) -> Any:
    """The last two axes swapped."""
    ndim = get_aval(x).ndim
    return transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def conj_transpose(x: Any) -> Any:
    """The conjugate transpose of a matrix (or a stack)."""
    return conj_if_complex(transpose_last_axes(x))


def main_diagonal(m: Any) -> Any:
    """The main diagonals of a matrix or a stack (empty for empty matrices)."""
    return m.diagonal(0, -2, -1)


def symmetrized(a: Any) -> Any:
    """``(a + a^H) / 2``: the Hermitian part, so rounding asymmetry cannot skew a result."""
    half = np.asarray(0.5, get_aval(a).dtype)
    return (a + conj_transpose(a)) * half


def hermitian_from_triangle(a: Any, lower: bool) -> Any:
    """The Hermitian matrix whose ``lower`` (or upper) triangle is that of ``a``; the other
    triangle of ``a`` is never read (the diagonal's imaginary part neither)."""
    n = get_aval(a).shape[-1]
    strictly = np.tril(np.ones((n, n), bool), -1) if lower else np.triu(np.ones((n, n), bool), 1)
    zero = np.asarray(0, get_aval(a).dtype)
    triangle = where_broadcast(strictly, a, zero)
    real_diagonal = convert_element_type(real_part(a), get_aval(a).dtype)
    diagonal_part = where_broadcast(np.eye(n, dtype=bool), real_diagonal, zero)
    return triangle + conj_transpose(triangle) + diagonal_part


def right_hand_side(b: Any, dtype: Any) -> Any:
    """``b`` (an array, or nested lists) in the dtype it and a matrix of ``dtype`` promote
    to."""
    if isinstance(b, (list, tuple)):
        b = np.asarray(b)
    aval = get_aval(b)
    promoted, _ = dtypes.promote(
        [(dtypes.canonicalize(np.dtype(dtype)), False), (aval.dtype, aval.weak_type)]
    )
    return convert_element_type(b, promoted)


def squares_safe_scale(a: Any) -> Any:
    """A positive real divisor for a matrix whose squared column norms would overflow or
    underflow (Jacobi rotations and Householder reflections work with them: a float32 matrix
    of 8e18s gave NaN): its largest magnitude where that is outside the safe range, else 1
    (no rounding for ordinary input), as LAPACK scales before factorising. Singular values and
    R scale back; orthogonal factors do not."""
    m, n = get_aval(a).shape
    real_dtype = dtypes.real_dtype(get_aval(a).dtype)
    if m * n == 0:  # nothing to overflow
        return np.asarray(1.0, real_dtype)
    info = np.finfo(real_dtype)
    # A column norm squared is at most the Frobenius norm squared, m * n * largest**2.
    largest_safe = np.sqrt(float(info.max) / (4 * m * n))
    smallest_safe = np.sqrt(float(info.tiny)) / float(info.eps)
    largest = abs_(a).max()
    unsafe = (largest > largest_safe) | ((largest < smallest_safe) & (largest > 0))
    unsafe = unsafe & (largest < np.inf)  # NaN and inf stay as they are
    return where_broadcast(unsafe, largest, np.asarray(1.0, real_dtype)).astype(real_dtype)
