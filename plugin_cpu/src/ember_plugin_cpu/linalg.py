"""Linear algebra on the CPU through LAPACK: lowering rules for platform ``cpu`` that call
jaxlib's LAPACK handlers (``lapack_<s|d|c|z><routine>_ffi``, registered with XLA's CPU client
by the kit's jaxlib bridge when the backend starts, see ``plugin.py``).

Each rule follows JAX's CPU lowering of the primitive of the same name: the routine's matrices
travel column-major, leading dimensions are a batch the handler loops over, and a routine's
``info`` turns the matrices it failed on into NaN (``ember_plugin_kit.linalg_ffi``). LAPACK
works in float32, float64, complex64 and complex128: other dtypes (float16, bfloat16), empty
operands and the parameters LAPACK has no routine for (a Jacobi eigensolver, sorted Schur
forms, ...) are left to the primitive's generic lowering.

``qr`` needs no rule of its own: its generic lowering binds ``geqrf``/``geqp3`` and
``householder_product``, which lower here to geqrf/geqp3 and orgqr/ungqr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.extend import LoweringRegistry, RuleContext, ShapedArray
from ember_plugin_kit.linalg_ffi import (
    INT32,
    TYPE_LETTER,
    add_scalar,
    batch_of,
    both,
    call_rule,
    complex_from_parts,
    conjugate,
    ffi_call,
    finite_or_zero,
    info_ok,
    is_complex,
    is_empty,
    is_linalg_dtype,
    letter,
    nan_where_failed,
    real_dtype,
    slice_to,
    triangle,
)

# The values of jaxlib's LAPACK enums (``jaxlib.cpu._lapack.eig/schur/svd``), pinned: each is
# the ASCII code of LAPACK's one-letter option (JOBVL/JOBVR, JOBVS, SORT, JOBZ). The tests
# check them against jaxlib's through the kit's bridge.
COMPUTE_VECTORS = letter("V")  # eig.ComputationMode.kComputeEigenvectors, schur's too
NO_VECTORS = letter("N")  # eig.ComputationMode.kNoEigenvectors, schur's too
NO_SORT = letter("N")  # schur.Sort.kNoSortEigenvalues
SVD_FULL = letter("A")  # svd.ComputationMode.kComputeFullUVt
SVD_ECONOMIC = letter("S")  # svd.ComputationMode.kComputeMinUVt
SVD_NO_UV = letter("N")  # svd.ComputationMode.kNoComputeUVt

# The handler for tridiagonal systems solved with pivots perturbed away from zero (one for
# every dtype).
PERTURBED_TRIDIAGONAL_SOLVE = "tridiagonal_solve_perturbed_ffi"


def lapack_target(routine: str, dtype: Any) -> str:
    """The handler's name: ``lapack_spotrf_ffi`` for routine ``potrf`` in float32. Its first
    use (lowering the first program with linear algebra) loads SciPy's LAPACK into the
    handlers."""
    # Imported here, as in plugin.make_backend: loading the plugin never imports jaxlib.
    from ember_plugin_kit.pjrt import initialize_lapack  # noqa: PLC0415

    initialize_lapack()
    return f"lapack_{TYPE_LETTER[np.dtype(dtype)]}{routine}_ffi"


def _enum_name(value: Any) -> str | None:
    """The member name of an enum parameter (``SvdAlgorithm.QR`` -> ``"QR"``), None if unset."""
    return None if value is None else getattr(value, "name", str(value))


# --------------------------------------------------------------------------------------------
# The rules: each is only called for LAPACK's dtypes and non-empty operands (see ``_override``)


def cholesky_rule(ctx: RuleContext, x: str) -> str:
    """The lower factor (potrf), its strictly upper part zeroed; NaN where a matrix is not
    positive definite."""
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    factor, info = ffi_call(
        ctx,
        lapack_target("potrf", aval.dtype),
        [x],
        [aval],
        [aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
        uplo=letter("L"),
    )
    factor = triangle(ctx, factor, aval, lower=True)
    return nan_where_failed(ctx, info_ok(ctx, info, batch), factor, aval, batch)


def triangular_solve_rule(
    ctx: RuleContext,
    a: str,
    b: str,
    *,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    conjugate_a: bool,
    unit_diagonal: bool,
) -> str:
    """``op(a) x = b`` or ``x op(a) = b`` (trsm), in b's buffer."""
    a_aval, b_aval = ctx.avals_in
    if conjugate_a and not transpose_a:
        # trsm has no "conjugate without transposing": conjugate a first.
        a = conjugate(ctx, a, a_aval)
        conjugate_a = False
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    (x,) = ffi_call(
        ctx,
        lapack_target("trsm", a_aval.dtype),
        [a, b],
        [a_aval, b_aval],
        [b_aval],
        aliases={1: 0},
        side=letter("L" if left_side else "R"),
        uplo=letter("L" if lower else "U"),
        trans_x=letter(trans),
        diag=letter("U" if unit_diagonal else "N"),
    )
    return x


def lu_rule(ctx: RuleContext, x: str, *, pivots_to_permutation: Callable[..., Any]) -> list[str]:
    """(lu, pivots, permutation) of partial-pivoting LU (getrf), pivots zero-based. A singular
    matrix factors (positive info: a zero pivot); a negative info is a failure: NaN."""
    (aval,) = ctx.avals_in
    _, pivots_aval, perm_aval = ctx.avals_out
    batch = batch_of(aval)
    lu, pivots, info = ffi_call(
        ctx,
        lapack_target("getrf", aval.dtype),
        [x],
        [aval],
        [aval, pivots_aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
    )
    pivots = add_scalar(ctx, pivots, pivots_aval, -1)  # LAPACK counts rows from one
    lu = nan_where_failed(ctx, info_ok(ctx, info, batch, "GE"), lu, aval, batch)
    perm = call_rule(
        ctx,
        pivots_to_permutation,
        [pivots],
        [pivots_aval],
        [perm_aval],
        permutation_size=perm_aval.shape[-1],
    )
    return [lu, pivots, perm]


def geqrf_rule(ctx: RuleContext, x: str) -> list[str]:
    """(packed, taus): Householder QR (geqrf), R above the reflectors."""
    (aval,) = ctx.avals_in
    return ffi_call(
        ctx, lapack_target("geqrf", aval.dtype), [x], [aval], list(ctx.avals_out), aliases={0: 0}
    )


def geqp3_rule(ctx: RuleContext, x: str, jpvt: str, **_: Any) -> list[str]:
    """(packed, jpvt, taus): column-pivoted Householder QR (geqp3); jpvt zero-based. The
    jpvt operand is LAPACK's: a nonzero entry moves that column to the front."""
    aval, jpvt_aval = ctx.avals_in
    packed, jpvt_out, taus = ffi_call(
        ctx,
        lapack_target("geqp3", aval.dtype),
        [x, jpvt],
        [aval, jpvt_aval],
        list(ctx.avals_out),
        aliases={0: 0, 1: 1},
    )
    return [packed, add_scalar(ctx, jpvt_out, jpvt_aval, -1), taus]


def householder_product_rule(ctx: RuleContext, a: str, taus: str) -> str:
    """Q's first n columns from the reflectors (orgqr; ungqr for complex)."""
    a_aval, taus_aval = ctx.avals_in
    routine = "ungqr" if is_complex(a_aval.dtype) else "orgqr"
    (q,) = ffi_call(
        ctx,
        lapack_target(routine, a_aval.dtype),
        [a, taus],
        [a_aval, taus_aval],
        [a_aval],
        aliases={0: 0},
    )
    return q


def eigh_rule(
    ctx: RuleContext,
    x: str,
    *,
    lower: bool,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> list[str]:
    """(v, w): eigenvectors and ascending eigenvalues (syevd; heevd for complex), read from the
    ``lower`` triangle; NaN where the routine did not converge. ``subset_by_index``: the
    columns/eigenvalues lo..hi of the full decomposition."""
    del sort_eigenvalues, algorithm  # LAPACK sorts; _eigh_supports vetted the algorithm
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    n = aval.shape[-1]
    w_aval = ShapedArray((*batch, n), real_dtype(aval.dtype))
    routine = "heevd" if is_complex(aval.dtype) else "syevd"
    x, finite = finite_or_zero(ctx, x, aval, batch)
    v, w, info = ffi_call(
        ctx,
        lapack_target(routine, aval.dtype),
        [x],
        [aval],
        [aval, w_aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
        mode=COMPUTE_VECTORS,
        uplo=letter("L" if lower else "U"),
    )
    ok = both(ctx, info_ok(ctx, info, batch), finite, batch)
    v = nan_where_failed(ctx, ok, v, aval, batch)
    w = nan_where_failed(ctx, ok, w, w_aval, batch)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        v, _ = slice_to(ctx, v, aval, (*batch, n, hi), (*[0] * len(batch), 0, lo))
        w, _ = slice_to(ctx, w, w_aval, (*batch, hi), (*[0] * len(batch), lo))
    return [v, w]


def _eigh_supports(*, algorithm: Any = None, **_: Any) -> bool:
    # LAPACK's divide and conquer stands for JAX's default and QR; a Jacobi or QDWH solver is
    # the generic lowering's.
    return _enum_name(algorithm) in (None, "QR")


def svd_rule(
    ctx: RuleContext,
    x: str,
    *,
    full_matrices: bool,
    compute_uv: bool,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> list[str]:
    """``[s, u, vt]`` (``[s]`` without ``compute_uv``), s descending: divide and conquer
    (gesdd), or gesvd for ``SvdAlgorithm.QR``; NaN where the routine did not converge."""
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    m, n = aval.shape[-2:]
    k = min(m, n)
    routine = "gesvd" if _enum_name(algorithm) == "QR" else "gesdd"
    if not compute_uv:
        mode = SVD_NO_UV
    elif full_matrices:
        mode = SVD_FULL
    else:
        mode = SVD_ECONOMIC
    full = full_matrices or not compute_uv  # the handler's U and VT shapes with mode 'N'
    s_aval = ShapedArray((*batch, k), real_dtype(aval.dtype))
    u_aval = ShapedArray((*batch, m, m if full else k), aval.dtype)
    vt_aval = ShapedArray((*batch, n if full else k, n), aval.dtype)
    x, finite = finite_or_zero(ctx, x, aval, batch)
    _, s, u, vt, info = ffi_call(
        ctx,
        lapack_target(routine, aval.dtype),
        [x],
        [aval],
        [aval, s_aval, u_aval, vt_aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
        mode=mode,
    )
    ok = both(ctx, info_ok(ctx, info, batch), finite, batch)
    s = nan_where_failed(ctx, ok, s, s_aval, batch)
    zeros = [0] * len(batch)
    lo, hi = subset_by_index if subset_by_index is not None else (0, k)
    s, _ = slice_to(ctx, s, s_aval, (*batch, hi), (*zeros, lo))
    if not compute_uv:
        return [s]
    u = nan_where_failed(ctx, ok, u, u_aval, batch)
    vt = nan_where_failed(ctx, ok, vt, vt_aval, batch)
    if (lo, hi) != (0, k):
        u, _ = slice_to(ctx, u, u_aval, (*batch, m, hi), (*zeros, 0, lo))
        vt, _ = slice_to(ctx, vt, vt_aval, (*batch, hi, n), (*zeros, lo, 0))
    return [s, u, vt]


def _svd_supports(*, algorithm: Any = None, **_: Any) -> bool:
    return _enum_name(algorithm) in (None, "DEFAULT", "QR", "DIVIDE_AND_CONQUER")


def eig_rule(
    ctx: RuleContext,
    x: str,
    *,
    compute_left_eigenvectors: bool,
    compute_right_eigenvectors: bool,
    enable_eigvec_derivs: bool = False,
    implementation: Any = None,
) -> list[str]:
    """``[w, vl?, vr?]`` of a general matrix (geev): complex eigenvalues, and eigenvectors of
    unit 2-norm whose largest component is real; NaN where the QR algorithm did not converge."""
    del enable_eigvec_derivs, implementation  # derivatives are the jvp's; vetted by supports
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    n = aval.shape[-1]
    complex_dtype = np.result_type(aval.dtype, np.complex64)
    w_aval = ShapedArray((*batch, n), aval.dtype)  # wr and wi when real
    vectors_aval = ShapedArray(aval.shape, complex_dtype)
    info_aval = ShapedArray(batch, INT32)
    real = not is_complex(aval.dtype)
    x, finite = finite_or_zero(ctx, x, aval, batch)
    outs = ffi_call(
        ctx,
        lapack_target("geev", aval.dtype),
        [x],
        [aval],
        [*([w_aval] * (2 if real else 1)), vectors_aval, vectors_aval, info_aval],
        compute_left=COMPUTE_VECTORS if compute_left_eigenvectors else NO_VECTORS,
        compute_right=COMPUTE_VECTORS if compute_right_eigenvectors else NO_VECTORS,
    )
    *w_parts, vl, vr, info = outs
    w = complex_from_parts(ctx, *w_parts, w_aval) if real else w_parts[0]
    ok = both(ctx, info_ok(ctx, info, batch), finite, batch)
    results = [nan_where_failed(ctx, ok, w, ShapedArray((*batch, n), complex_dtype), batch)]
    if compute_left_eigenvectors:
        results.append(nan_where_failed(ctx, ok, vl, vectors_aval, batch))
    if compute_right_eigenvectors:
        results.append(nan_where_failed(ctx, ok, vr, vectors_aval, batch))
    return results


def _eig_supports(*, implementation: Any = None, **_: Any) -> bool:
    return _enum_name(implementation) in (None, "LAPACK")


def schur_rule(
    ctx: RuleContext,
    x: str,
    *,
    compute_schur_vectors: bool,
    sort_eig_vals: bool = False,
    select_callable: Any = None,
) -> list[str]:
    """``[T, Z?]`` with x = Z T Z^H (gees): T quasi-upper-triangular for real x; NaN where
    the QR algorithm did not converge."""
    del sort_eig_vals, select_callable  # unsorted only: _schur_supports
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    eigvals_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    info_aval = ShapedArray(batch, INT32)
    eigvals = [eigvals_aval] * (1 if is_complex(aval.dtype) else 2)  # w, or wr and wi
    x, finite = finite_or_zero(ctx, x, aval, batch)
    # results: T, Z, the eigenvalues, the count of selected eigenvalues (sdim), info
    t, z, *_, info = ffi_call(
        ctx,
        lapack_target("gees", aval.dtype),
        [x],
        [aval],
        [aval, aval, *eigvals, info_aval, info_aval],
        aliases={0: 0},
        mode=COMPUTE_VECTORS if compute_schur_vectors else NO_VECTORS,
        sort=NO_SORT,
    )
    ok = both(ctx, info_ok(ctx, info, batch), finite, batch)
    results = [nan_where_failed(ctx, ok, t, aval, batch)]
    if compute_schur_vectors:
        results.append(nan_where_failed(ctx, ok, z, aval, batch))
    return results


def _schur_supports(*, sort_eig_vals: bool = False, **_: Any) -> bool:
    return not sort_eig_vals


def hessenberg_rule(ctx: RuleContext, x: str) -> list[str]:
    """(packed, taus): the Hessenberg reduction (gehrd) of the whole matrix."""
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    a_aval, taus_aval = ctx.avals_out
    a, taus, info = ffi_call(
        ctx,
        lapack_target("gehrd", aval.dtype),
        [x],
        [aval],
        [a_aval, taus_aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
        low=np.int32(1),  # reduce rows and columns 1..n (LAPACK's ilo, ihi)
        high=np.int32(aval.shape[-1]),
    )
    ok = info_ok(ctx, info, batch)
    return [
        nan_where_failed(ctx, ok, a, a_aval, batch),
        nan_where_failed(ctx, ok, taus, taus_aval, batch),
    ]


def tridiagonal_rule(ctx: RuleContext, x: str, *, lower: bool) -> list[str]:
    """(packed, d, e, taus): the tridiagonal reduction of a Hermitian matrix (sytrd; hetrd for
    complex) from its ``lower`` triangle."""
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    routine = "hetrd" if is_complex(aval.dtype) else "sytrd"
    *outs, info = ffi_call(
        ctx,
        lapack_target(routine, aval.dtype),
        [x],
        [aval],
        [*ctx.avals_out, ShapedArray(batch, INT32)],
        aliases={0: 0},
        uplo=letter("L" if lower else "U"),
    )
    ok = info_ok(ctx, info, batch)
    return [nan_where_failed(ctx, ok, y, a, batch) for y, a in zip(outs, ctx.avals_out)]


def tridiagonal_solve_rule(
    ctx: RuleContext, dl: str, d: str, du: str, b: str, *, perturb_singular: bool
) -> str:
    """x with A x = b, A tridiagonal (gtsv: LU with partial pivoting); NaN where A is singular.
    ``perturb_singular``: jaxlib's handler that perturbs zero pivots instead."""
    *diag_avals, b_aval = ctx.avals_in
    if perturb_singular:
        (x,) = ffi_call(ctx, PERTURBED_TRIDIAGONAL_SOLVE, [dl, d, du, b], ctx.avals_in, [b_aval])
        return x
    batch = batch_of(b_aval)
    *_, x, info = ffi_call(
        ctx,
        lapack_target("gtsv", b_aval.dtype),
        [dl, d, du, b],
        ctx.avals_in,
        [*diag_avals, b_aval, ShapedArray(batch, INT32)],
        aliases={0: 0, 1: 1, 2: 2, 3: 3},
    )
    return nan_where_failed(ctx, info_ok(ctx, info, batch), x, b_aval, batch)


def _same_batch(ctx: RuleContext, **_: Any) -> bool:
    # trsm loops over one batch: a and b must not broadcast against each other.
    a_aval, b_aval = ctx.avals_in
    return tuple(a_aval.shape[:-2]) == tuple(b_aval.shape[:-2])


def _always(**_: Any) -> bool:
    return True


# --------------------------------------------------------------------------------------------
# Registration

# rule, and which parameters it takes (``supports(**params)``; the others: generic lowering)
RULES: dict[str, tuple[Callable[..., Any], Callable[..., bool]]] = {
    "cholesky": (cholesky_rule, _always),
    "triangular_solve": (triangular_solve_rule, _always),
    "lu": (lu_rule, _always),
    "geqrf": (geqrf_rule, _always),
    "geqp3": (geqp3_rule, _always),
    "householder_product": (householder_product_rule, _always),
    "eigh": (eigh_rule, _eigh_supports),
    "svd": (svd_rule, _svd_supports),
    "eig": (eig_rule, _eig_supports),
    "schur": (schur_rule, _schur_supports),
    "hessenberg": (hessenberg_rule, _always),
    "tridiagonal": (tridiagonal_rule, _always),
    "tridiagonal_solve": (tridiagonal_solve_rule, _always),
}

# Rules whose ``supports`` also looks at the operands.
_SUPPORTS_WITH_CONTEXT = {"triangular_solve": _same_batch}


def _override(
    name: str,
    lapack_rule: Callable[..., Any],
    supports: Callable[..., bool],
    generic: Callable[..., Any],
) -> Callable[..., Any]:
    """The cpu rule of primitive ``name``: LAPACK where it applies, else ``generic``."""
    with_context = _SUPPORTS_WITH_CONTEXT.get(name)

    def rule(ctx: RuleContext, *operands: str, **params: Any) -> Any:
        matrix = ctx.avals_in[-1] if name == "tridiagonal_solve" else ctx.avals_in[0]
        if (
            is_linalg_dtype(matrix.dtype)
            and not is_empty([*ctx.avals_in, *ctx.avals_out])
            and supports(**params)
            and (with_context is None or with_context(ctx))
        ):
            return lapack_rule(ctx, *operands, **params)
        return generic(ctx, *operands, **params)

    rule.__name__ = rule.__qualname__ = f"lapack_{name}_lowering"
    rule.__doc__ = lapack_rule.__doc__
    return rule


def register(registry: LoweringRegistry, platform: str = "cpu") -> list[str]:
    """Lower each primitive of ``RULES`` through LAPACK on ``platform``; returns the names
    registered."""
    registered = []
    for name, (lapack_rule, supports) in RULES.items():
        if name == "lu":
            lapack_rule = functools.partial(
                lu_rule, pivots_to_permutation=registry.generic("lu_pivots_to_permutation")
            )
        registry.register_by_name(
            name, _override(name, lapack_rule, supports, registry.generic(name)), platform=platform
        )
        registered.append(name)
    return registered
