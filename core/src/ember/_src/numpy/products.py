"""Products beyond matmul: matrix-vector and vector-matrix products (NumPy 2's ``matvec`` and
``vecmat``), sliding dot products (``correlate``) and the contraction order of an ``einsum``
(``einsum_path``, planned from shapes alone); ``kron`` and ``convolve``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.numpy import (
    creation,
    elementwise as enp,
    manipulation,
    reductions,
)
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.contractions import matmul
from ember._src.numpy.operands import (
    as_operand,
    check_dtype_arg,
    promote_dtypes,
    promote_to_inexact,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.slicing import rev, slice_along


def _operands(name: str, x1: Any, x2: Any, x1_min: int, x2_min: int) -> tuple[Any, Any]:
    x1, x2 = promote_dtypes(creation.asarray(as_operand(x1)), creation.asarray(as_operand(x2)))
    if get_aval(x1).ndim < x1_min or get_aval(x2).ndim < x2_min:
        raise ValueError(
            f"{name}: operands of rank {get_aval(x1).ndim} and {get_aval(x2).ndim} are too small"
            f" (need at least {x1_min} and {x2_min}){errors.where()}"
        )
    return x1, x2


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix times vector over broadcast leading axes: (..., m, n) x (..., n) -> (..., m)."""
    x1, x2 = _operands("matvec", x1, x2, 2, 1)
    return matmul(x1, manipulation.expand_dims(x2, -1))[..., 0]


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Conjugated vector times matrix: (..., n) x (..., n, m) -> (..., m)."""
    x1, x2 = _operands("vecmat", x1, x2, 1, 2)
    return matmul(manipulation.expand_dims(enp.conjugate(x1), -2), x2)[..., 0, :]


def correlate(
    a: Any,
    v: Any,
    mode: str = "valid",
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """Cross-correlation of two 1-D sequences, ``c[k] = sum_n a[n + k] conj(v[n])``: the
    convolution with ``v`` reversed and conjugated."""
    a, v = promote_dtypes(creation.asarray(as_operand(a)), creation.asarray(as_operand(v)))
    if get_aval(a).ndim != 1 or get_aval(v).ndim != 1:
        raise ValueError(
            f"correlate: a and v must be 1-D, got shapes {get_aval(a).shape} and "
            f"{get_aval(v).shape}{errors.where()}"
        )
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"correlate: mode must be 'full', 'same' or 'valid', got {mode!r}")
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    if n < m:
        # NumPy correlates the longer sequence against the shorter one and reverses the
        # result (conjugated), which keeps 'same' centred the same way.
        result = enp.conjugate(rev(convolve(v, enp.conjugate(rev(a, (0,))), mode), (0,)))
    else:
        result = convolve(a, enp.conjugate(rev(v, (0,))), mode)
    if preferred_element_type is not None:
        result = convert_element_type(result, np.dtype(preferred_element_type))
    return result


def einsum_path(
    subscripts: str, /, *operands: Any, optimize: Any = "auto"
) -> tuple[list[tuple[int, ...]], str]:
    """The order in which ``einsum`` would contract ``operands`` pairwise, and a report.

    Planned from the operands' shapes (NumPy's planner: ``"greedy"`` for ``"auto"`` and
    ``True``); returns ``(path, report)`` where ``path`` is a list of index tuples."""
    if optimize in ("auto", True):
        optimize = "greedy"
    elif optimize is False:
        optimize = [tuple(range(len(operands)))] if operands else []
    shaped = [_shape_only(op) for op in operands]
    path, report = np.einsum_path(subscripts, *shaped, optimize=_numpy_path(optimize))
    return [tuple(step) for step in path[1:]], report


def _numpy_path(optimize: Any) -> Any:
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] != "einsum_path":
        return ["einsum_path", *optimize]
    return optimize


def _shape_only(x: Any) -> np.ndarray:
    """A zero-memory NumPy stand-in with ``x``'s shape and dtype (the planner reads only
    those)."""
    aval = get_aval(as_operand(x))
    return np.broadcast_to(np.zeros((), aval.dtype), aval.shape)


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:  # fmt: skip
    """Cross products of the 2- or 3-vectors along ``axisa`` of ``a`` and ``axisb`` of ``b``,
    broadcast over the other axes; the 3-vector results lie along ``axisc`` (``axis`` sets all
    three). Two 2-vectors give the scalar z component, as in NumPy and JAX."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(creation.asarray(as_operand(a)), creation.asarray(as_operand(b)))
    a, b = manipulation.moveaxis(a, axisa, -1), manipulation.moveaxis(b, axisb, -1)
    if get_aval(a).shape[-1] not in (2, 3) or get_aval(b).shape[-1] not in (2, 3):
        raise ValueError(
            f"cross: vector dimensions must be 2 or 3, got {get_aval(a).shape[-1]} and "
            f"{get_aval(b).shape[-1]}{errors.where()}"
        )
    if get_aval(a).shape[-1] == 2 and get_aval(b).shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1, a2 = _components(a)
    b0, b1, b2 = _components(b)
    out = manipulation.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return manipulation.moveaxis(out, -1, axisc)


def _components(v: Any) -> tuple[Any, Any, Any]:
    """x, y, z of 2- or 3-vectors along the last axis (a 2-vector's z is 0)."""
    if get_aval(v).shape[-1] == 3:
        return v[..., 0], v[..., 1], v[..., 2]
    return v[..., 0], v[..., 1], creation.zeros_like(v[..., 0])


def kron(a: Any, b: Any) -> Any:
    a, b = promote_dtypes(creation.asarray(a), creation.asarray(b))
    ndim = max(get_aval(a).ndim, get_aval(b).ndim)
    a = manipulation.reshape(a, (1,) * (ndim - get_aval(a).ndim) + get_aval(a).shape)
    b = manipulation.reshape(b, (1,) * (ndim - get_aval(b).ndim) + get_aval(b).shape)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    # a[i] * b[j] laid out as a (n_a, n_b) block per axis, then merged
    a_exp = manipulation.reshape(a, tuple(d for s in sa for d in (s, 1)))
    b_exp = manipulation.reshape(b, tuple(d for s in sb for d in (1, s)))
    return manipulation.reshape(a_exp * b_exp, tuple(x * y for x, y in zip(sa, sb)))


def convolve(
    a: Any,
    v: Any,
    mode: str = "full",
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """1-D discrete convolution (``full``, ``same`` or ``valid``). ``precision`` is a hint
    ember's backends do not need; ``preferred_element_type`` sets the accumulation and
    result dtype."""
    a, v = creation.asarray(a), creation.asarray(v)
    if preferred_element_type is None:  # as JAX: integers convolve as floats
        a, v = promote_to_inexact(a, v)
    else:
        a, v = promote_dtypes(a, v)
        result_dtype = check_dtype_arg(preferred_element_type)
        a, v = manipulation.astype(a, result_dtype), manipulation.astype(v, result_dtype)
    n, m = shape_of(a)[0], shape_of(v)[0]
    if not n or not m:
        raise ValueError(f"convolve: empty input{errors.where()}")
    if n < m:
        a, v, n, m = v, a, m, n
    length = n + m - 1
    # out[k] = sum_j v[j] a[k - j]: gather a shifted copy of `a` per tap of `v`.
    k = np.arange(length)[:, None] - np.arange(m)[None, :]
    valid = (k >= 0) & (k < n)
    padded = take(a, np.clip(k, 0, n - 1), mode="clip")
    padded = enp.where(valid, padded, np.asarray(0, get_aval(padded).dtype))
    full = reductions.sum(enp.multiply(padded, v), axis=1)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return slice_along(full, 0, start, start + n)
    if mode == "valid":
        return slice_along(full, 0, m - 1, n)
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
