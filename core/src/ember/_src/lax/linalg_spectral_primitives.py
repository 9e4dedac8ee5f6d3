"""The spectral factorisations as primitives, named and parametrised as JAX's: ``eigh``,
``svd``, ``eig``, ``schur``, ``hessenberg`` and ``tridiagonal``.

Each takes a stack of matrices (any leading batch dimensions) and gives LAPACK's results in
LAPACK's conventions, so a platform's override (LAPACK, cuSOLVER: registered by name through
``ember_register_lowerings``) and the generic path agree up to rounding and the phase of
eigenvectors and singular vectors. The generic lowering is ember's own algorithm (Jacobi for
``eigh``/``svd``, Householder reductions, the shifted QR algorithms) lowered inline; the
reference rule is NumPy's ``np.linalg`` where it computes the same thing, else the algorithm
evaluated with the reference rules. A matrix whose factorisation fails comes back as NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval
from ember._src.interpreters.ad_util import instantiate
from ember._src.lax.linalg_eig import (
    complex_schur_single,
    eig_single,
    eigenvalue_tangents,
    eigvec_tangents,
)
from ember._src.lax.linalg_householder import hessenberg_packed, tridiagonal_packed
from ember._src.lax.linalg_jacobi import eigh_single, jacobi_svd
from ember._src.lax.linalg_operands import (
    batched,
    conj_if_complex,
    conj_transpose,
    hermitian_from_triangle,
    identity_matrix,
    main_diagonal,
    real_part,
    transpose_last_axes,
    where_broadcast,
)
from ember._src.lax.linalg_primitive_rules import batch_at_front
from ember._src.lax.linalg_schur import real_schur_single
from ember._src.lowering.expressions import lower_via, reference_via
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import imag
from ember._src.primitives.comparisons import is_finite
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.slicing import concatenate

_FLOATING = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}
_HALF = dtypes.HALF_FLOATS

# --------------------------------------------------------------------------------------------
# What every spectral primitive shares: operand checks, the generic lowering and reference
# rule from an algorithm, batching and sharding.


def _check_matrix(x: ShapedArray, what: str, square: bool = True) -> tuple[int, int]:
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ValueError(
            f"{what}: expected {kind} (or a stack, shape (..., m, n)), got {x.str_short()}"
            f"{errors.where()}"
        )
    if x.dtype not in _FLOATING | _HALF:
        raise TypeError(
            f"{what}: expected a floating or complex operand, got {x.str_short()} (the "
            f"ember.lax.linalg functions convert integers first){errors.where()}"
        )
    return x.shape[-2], x.shape[-1]


def _real(dtype: np.dtype) -> np.dtype:
    return dtypes.real_dtype(dtype)


def _in_float32_if_half(algorithm: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """``algorithm`` computed in float32 for float16/bfloat16 operands (as JAX computes
    them), its results cast back to the operand's precision."""

    def run(x: Any, **params: Any) -> list[Any]:
        dtype = get_aval(x).dtype
        if dtype not in _HALF:
            return list(algorithm(x, **params))
        outs = algorithm(convert_element_type(x, np.float32), **params)
        return [
            o if get_aval(o).dtype.kind == "c" else convert_element_type(o, dtype) for o in outs
        ]

    return run


def _numpy_per_matrix(
    single: Callable[[np.ndarray], list[np.ndarray]], x: np.ndarray, out_avals: list[ShapedArray]
) -> list[np.ndarray]:
    """``single`` (NumPy, one matrix) over a stack, in the results' dtypes; a matrix that is
    not finite or that NumPy fails to factorise gives NaN results, as LAPACK's ``info``."""
    x = np.asarray(x)
    batch = x.shape[:-2]
    work = x.astype(np.float32) if x.dtype in _HALF else x
    count = int(np.prod(batch, dtype=np.int64))
    matrices = work.reshape((count, *x.shape[-2:]))
    outs = [
        np.full(a.shape, np.nan, a.dtype).reshape((count, *a.shape[len(batch) :]))
        for a in out_avals
    ]
    for i, matrix in enumerate(matrices):
        if not np.all(np.isfinite(matrix)):
            continue
        try:
            results = single(matrix)
        except np.linalg.LinAlgError:
            continue
        for out, result in zip(outs, results):
            out[i] = np.asarray(result).astype(out.dtype, copy=False)
    return [o.reshape(a.shape) for o, a in zip(outs, out_avals)]


def _sharding_rule(primitive):
    """Batch dimensions may be split (each matrix is factorised where it lives); the matrix
    dimensions must be whole."""
    what = primitive.name

    def rule(x: ShapedArray, **params: Any) -> list[Any]:
        mesh = sharding_rules.common_mesh(what, (x,))
        sharding_rules.require_unsplit(
            what, (x,), x, (x.ndim - 2, x.ndim - 1), f"{what} needs each matrix whole"
        )
        batch = sharding_rules.entries(x)[: x.ndim - 2]
        outs = rules.abstract_eval_rule(primitive)(x, **params)
        return [
            sharding_rules.build(what, (x,), mesh, batch + (None,) * (o.ndim - len(batch)))
            for o in outs
        ]

    return rule


def _define(name: str, abstract_eval, algorithm, *, reference=None, jvp=None):
    return rules.define_primitive(
        name,
        abstract_eval=abstract_eval,
        jvp=jvp,
        batch=rules.per_primitive(batch_at_front),
        lowering=lower_via(_in_float32_if_half(algorithm), multiple_results=True),
        reference=reference or reference_via(_in_float32_if_half(algorithm), multiple_results=True),
        sharding=rules.per_primitive(_sharding_rule),
        multiple_results=True,
    )


def _subset_size(what: str, subset_by_index: Any, size: int) -> int:
    if subset_by_index is None:
        return size
    lo, hi = subset_by_index
    if not 0 <= lo <= hi <= size:
        raise ValueError(
            f"{what}: subset_by_index must be (lo, hi) with 0 <= lo <= hi <= {size}, got "
            f"{subset_by_index}{errors.where()}"
        )
    return hi - lo


def _nan_unless_finite(x: Any, outs: list[Any]) -> list[Any]:
    """``outs`` with NaN for each matrix of ``x`` that has a NaN or infinite entry (a fixed
    number of Jacobi sweeps would otherwise give an arbitrary answer): LAPACK's ``info``."""
    batch = get_aval(x).ndim - 2
    if get_aval(x).dtype.kind == "c":
        finite = is_finite(real_part(x)) & is_finite(imag(x))
    else:
        finite = is_finite(x)
    finite = finite.all(axis=(-2, -1))
    masked = []
    for out in outs:
        aval = get_aval(out)
        ok = finite.reshape(finite.shape + (1,) * (aval.ndim - batch))
        masked.append(where_broadcast(ok, out, np.asarray(np.nan, aval.dtype)).astype(aval.dtype))
    return masked


def _tangent_of(t: Any) -> Any:
    return instantiate(t) if type(t) is Zero else t


# --------------------------------------------------------------------------------------------
# eigh: v (..., n, d), w (..., d) real ascending, of the Hermitian matrix given by the
# ``lower`` (or upper) triangle


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    n, _ = _check_matrix(x, "eigh")
    d = _subset_size("eigh", subset_by_index, n)
    batch = x.shape[:-2]
    return [ShapedArray((*batch, n, d), x.dtype), ShapedArray((*batch, d), _real(x.dtype))]


def _eigh_algorithm(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    # Jacobi's eigenvalues come sorted whatever sort_eigenvalues says (a valid order for
    # sort_eigenvalues=False too); the algorithm hint is for the platforms that have several.
    w, v = batched(eigh_single, hermitian_from_triangle(x, lower))
    if subset_by_index is not None:
        lo, hi = subset_by_index
        v, w = v[..., lo:hi], w[..., lo:hi]
    return _nan_unless_finite(x, [v, w])


def _eigh_reference(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    out_avals = _eigh_abstract_eval(
        ShapedArray(np.shape(x), np.asarray(x).dtype),
        lower=lower,
        sort_eigenvalues=sort_eigenvalues,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    lo, hi = subset_by_index or (0, np.shape(x)[-1])

    def single(matrix):
        w, v = np.linalg.eigh(matrix, UPLO="L" if lower else "U")
        return [v[:, lo:hi], w[lo:hi]]

    return _numpy_per_matrix(single, x, out_avals)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    """dw_i = Re(v_i^H dA v_i); dV = V (F * V^H dA V), F_ij = 1 / (w_j - w_i) off the diagonal
    (nondegenerate perturbation theory, JAX's rule; for complex input the eigenvectors' phases
    are a gauge this fixes by v_i^H dv_i = 0)."""
    (a,), (da,) = primals, tangents
    n = get_aval(a).shape[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError(
            f"eigh: derivatives are not defined for a partial eigendecomposition "
            f"(subset_by_index={subset_by_index}){errors.where()}"
        )
    v, w = eigh_p.bind(
        a,
        lower=lower,
        sort_eigenvalues=sort_eigenvalues,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    dtype = get_aval(v).dtype
    # the primitive reads one triangle: the tangent of the matrix it factorises is the
    # Hermitian matrix made from that triangle of da
    da = hermitian_from_triangle(_tangent_of(da), lower)
    vdv = conj_transpose(v) @ (da @ v)
    gaps = w[..., None, :] - w[..., :, None]
    same = gaps == 0
    f = where_broadcast(same, 0.0, 1.0 / where_broadcast(same, 1.0, gaps)).astype(dtype)
    dw = real_part(main_diagonal(vdv))
    return [v, w], [v @ (f * vdv), dw]


eigh_p = _define(
    "eigh", _eigh_abstract_eval, _eigh_algorithm, reference=_eigh_reference, jvp=_eigh_jvp
)


# --------------------------------------------------------------------------------------------
# svd: s (..., k) real descending, then u and vt when compute_uv


def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    m, n = _check_matrix(x, "svd", square=False)
    rank = min(m, n)
    if subset_by_index is not None and full_matrices and tuple(subset_by_index) != (0, rank):
        raise ValueError(
            f"svd: full_matrices and subset_by_index cannot both be set{errors.where()}"
        )
    k = _subset_size("svd", subset_by_index, rank)
    batch = x.shape[:-2]
    s = ShapedArray((*batch, k), _real(x.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray((*batch, m, m if full_matrices else k), x.dtype)
    vt = ShapedArray((*batch, n if full_matrices else k, n), x.dtype)
    return [s, u, vt]


def _svd_algorithm(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    result = jacobi_svd(x, full_matrices, compute_uv)
    if not compute_uv:
        s = result
        return _nan_unless_finite(
            x, [s if subset_by_index is None else s[..., slice(*subset_by_index)]]
        )
    u, s, vt = result
    if subset_by_index is not None and not full_matrices:
        lo, hi = subset_by_index
        s, u, vt = s[..., lo:hi], u[..., lo:hi], vt[..., lo:hi, :]
    return _nan_unless_finite(x, [s, u, vt])


def _svd_reference(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    out_avals = _svd_abstract_eval(
        ShapedArray(np.shape(x), np.asarray(x).dtype),
        full_matrices=full_matrices,
        compute_uv=compute_uv,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    lo, hi = subset_by_index or (0, min(np.shape(x)[-2:]))

    def single(matrix):
        if not compute_uv:
            return [np.linalg.svd(matrix, compute_uv=False)[lo:hi]]
        u, s, vt = np.linalg.svd(matrix, full_matrices=full_matrices)
        if not full_matrices:
            u, s, vt = u[:, lo:hi], s[lo:hi], vt[lo:hi]
        return [s, u, vt]

    return _numpy_per_matrix(single, x, out_avals)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    """JAX's rule (Giles, "An extended collection of matrix derivative results", 3.2),
    computed on the thin factors; the extra columns of a full U (or rows of a full V^H) move
    only as much as keeps the factor unitary."""
    (a,), (da,) = primals, tangents
    da = _tangent_of(da)
    dtype = get_aval(a).dtype
    m, n = get_aval(a).shape[-2:]
    s, u, vt = svd_p.bind(
        a,
        full_matrices=False,
        compute_uv=True,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    ut, v = conj_transpose(u), conj_transpose(vt)
    ds_matrix = ut @ da @ v
    ds = real_part(main_diagonal(ds_matrix))
    if not compute_uv:
        return [s], [ds]
    k = get_aval(s).shape[-1]
    s_row = s[..., None, :]
    s_column = transpose_last_axes(s_row)
    eye = identity_matrix(k, get_aval(s).dtype)
    f = 1 / ((s_row + s_column) * (s_row - s_column) + eye) - eye
    s_zero = (s == 0).astype(get_aval(s).dtype)
    s_inv = 1 / (s + s_zero) - s_zero
    ds_s = s_row.astype(dtype) * ds_matrix
    s_ds = s_column.astype(dtype) * ds_matrix
    du_dv_diagonal = 0.5 * (ds_matrix - conj_transpose(ds_matrix)) * (eye * s_inv[..., None, :])
    du = u @ (f.astype(dtype) * (ds_s + conj_transpose(ds_s)) + du_dv_diagonal.astype(dtype))
    dv = v @ (f.astype(dtype) * (s_ds + conj_transpose(s_ds)))
    if m > n:
        da_v = da @ v
        du = du + (da_v - u @ (ut @ da_v)) / s_row.astype(dtype)
    if n > m:
        dah_u = conj_transpose(da) @ u
        dv = dv + (dah_u - v @ (vt @ dah_u)) / s_row.astype(dtype)
    if not full_matrices or m == n:
        return [s, u, vt], [ds, du, conj_transpose(dv)]
    full_s, full_u, full_vt = svd_p.bind(
        a, full_matrices=True, compute_uv=True, subset_by_index=subset_by_index, algorithm=algorithm
    )
    du, dvt = (
        _completed(du, full_u, k, columns=True),
        _completed(conj_transpose(dv), full_vt, k, columns=False),
    )
    return [full_s, full_u, full_vt], [ds, du, dvt]


def _completed(d_thin: Any, full: Any, k: int, *, columns: bool) -> Any:
    """The tangent of a full unitary factor from its first k columns' (rows' for V^H): the
    rest turn by ``-Q1 (dQ1^H Q2)``, which keeps ``Q^H Q = I`` to first order."""
    if not columns:
        d_thin, full = conj_transpose(d_thin), conj_transpose(full)
    q1, q2 = full[..., :, :k], full[..., :, k:]
    d_rest = -(q1 @ (conj_transpose(d_thin) @ q2))
    d_full = concatenate([d_thin, d_rest], get_aval(full).ndim - 1)
    return d_full if columns else conj_transpose(d_full)


svd_p = _define("svd", _svd_abstract_eval, _svd_algorithm, reference=_svd_reference, jvp=_svd_jvp)


# --------------------------------------------------------------------------------------------
# eig: w (..., n) complex, then vl and vr (..., n, n) complex when asked for


def _eig_abstract_eval(
    x,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    n, _ = _check_matrix(x, "eig")
    complex_dtype = dtypes.complex_dtype(np.float32 if x.dtype in _HALF else _real(x.dtype))
    batch = x.shape[:-2]
    vectors = int(bool(compute_left_eigenvectors)) + int(bool(compute_right_eigenvectors))
    return [ShapedArray((*batch, n), complex_dtype)] + [
        ShapedArray((*batch, n, n), complex_dtype)
    ] * vectors


def _eig_algorithm(
    x,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    a = convert_element_type(x, dtypes.complex_dtype(_real(get_aval(x).dtype)))
    left, right = bool(compute_left_eigenvectors), bool(compute_right_eigenvectors)
    return list(batched(lambda m: eig_single(m, left, right), a))


def _geev_normalised(v: np.ndarray) -> np.ndarray:
    """Columns of unit 2-norm whose largest entry is real and positive."""
    v = v / np.linalg.norm(v, axis=0, keepdims=True)
    lead = v[np.argmax(np.abs(v), axis=0), np.arange(v.shape[1])]
    return v * np.conj(lead / np.abs(lead))


def _eig_reference(x, **params):
    out_avals = _eig_abstract_eval(ShapedArray(np.shape(x), np.asarray(x).dtype), **params)
    complex_dtype = out_avals[0].dtype

    def single(matrix):
        w, vr = np.linalg.eig(matrix.astype(complex_dtype))
        vr = _geev_normalised(vr) if vr.size else vr
        out = [w]
        if params["compute_left_eigenvectors"]:
            vl = np.conj(np.linalg.inv(vr)).T if vr.size else vr
            out.append(_geev_normalised(vl) if vl.size else vl)
        if params["compute_right_eigenvectors"]:
            out.append(vr)
        return out

    return _numpy_per_matrix(single, x, out_avals)


def _eig_jvp(
    primals,
    tangents,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    """JAX's rule: dw = diag(V^-1 dA V); the eigenvectors' (under geev's normalisation) only
    when ``enable_eigvec_derivs`` opts in (they assume distinct eigenvalues)."""
    (a,), (da,) = primals, tangents
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "eig: derivatives of non-symmetric eigenvectors are only valid under assumptions "
            "on the input that ember cannot check (distinct eigenvalues); pass "
            f"enable_eigvec_derivs=True to ember.lax.linalg.eig to opt in{errors.where()}"
        )
    outs = eig_p.bind(
        a,
        compute_left_eigenvectors=compute_left_eigenvectors,
        compute_right_eigenvectors=True,
        enable_eigvec_derivs=enable_eigvec_derivs,
        implementation=implementation,
    )
    w, vr = outs[0], outs[-1]
    da = convert_element_type(_tangent_of(da), get_aval(vr).dtype)
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        return [w], [eigenvalue_tangents(vr, da)]
    dw, dvr = eigvec_tangents(w, vr, da)
    primal_out, tangent_out = [w], [dw]
    if compute_left_eigenvectors:
        # left eigenvectors are the right ones of a^H, for the eigenvalues conj(w)
        _, dvl = eigvec_tangents(conj_if_complex(w), outs[1], conj_transpose(da))
        primal_out.append(outs[1])
        tangent_out.append(dvl)
    if compute_right_eigenvectors:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


eig_p = _define("eig", _eig_abstract_eval, _eig_algorithm, reference=_eig_reference, jvp=_eig_jvp)


# --------------------------------------------------------------------------------------------
# schur: T, then Z when compute_schur_vectors (x = Z T Z^H; real x gives gees's real form)


def _schur_abstract_eval(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    _check_matrix(x, "schur")
    if sort_eig_vals:
        raise NotImplementedError(
            f"schur: sort_eig_vals=True (LAPACK's eigenvalue ordering) is not supported"
            f"{errors.where()}"
        )
    return [ShapedArray(x.shape, x.dtype)] * (2 if compute_schur_vectors else 1)


def _schur_algorithm(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    single = complex_schur_single if get_aval(x).dtype.kind == "c" else real_schur_single
    t, z = batched(single, x)
    return [t, z] if compute_schur_vectors else [t]


schur_p = _define("schur", _schur_abstract_eval, _schur_algorithm)


# --------------------------------------------------------------------------------------------
# hessenberg (gehrd) and tridiagonal (sytrd/hetrd): LAPACK's packed Householder forms


def _hessenberg_abstract_eval(x):
    n, _ = _check_matrix(x, "hessenberg")
    return [ShapedArray(x.shape, x.dtype), ShapedArray((*x.shape[:-2], max(n - 1, 0)), x.dtype)]


def _hessenberg_algorithm(x):
    return list(batched(hessenberg_packed, x))


hessenberg_p = _define("hessenberg", _hessenberg_abstract_eval, _hessenberg_algorithm)


def _tridiagonal_abstract_eval(x, *, lower):
    n, _ = _check_matrix(x, "tridiagonal")
    batch = x.shape[:-2]
    real = _real(x.dtype)
    return [
        ShapedArray(x.shape, x.dtype),
        ShapedArray((*batch, n), real),
        ShapedArray((*batch, max(n - 1, 0)), real),
        ShapedArray((*batch, max(n - 1, 0)), x.dtype),
    ]


def _tridiagonal_algorithm(x, *, lower):
    return list(batched(lambda m: tridiagonal_packed(m, lower), x))


tridiagonal_p = _define("tridiagonal", _tridiagonal_abstract_eval, _tridiagonal_algorithm)
