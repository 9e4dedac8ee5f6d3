"""Linear algebra on NVIDIA GPUs through cuSOLVER: lowering rules for platform ``cuda`` that
emit the custom calls of the CUDA plugin's FFI handlers (``cusolver_*_ffi``,
``cu_lu_pivots_to_permutation``; registered with XLA's CUDA plugin before its client starts,
see ``plugin.py``).

Each rule follows JAX's GPU lowering of the primitive of the same name, through the kit's
``ember_plugin_kit.linalg_ffi``: column-major matrices, a leading batch the handler loops over
(or hands to a batched routine), and each factorisation's ``info`` turns the matrices it
failed on into NaN. ``qr`` needs no rule of its own (its generic lowering binds ``geqrf`` and
``householder_product``), nor ``triangular_solve`` (its generic lowering is StableHLO's
``triangular_solve``, which XLA's GPU compiler turns into cuBLAS ``trsm``). Other dtypes
(float16, bfloat16), empty operands and parameters cuSOLVER has no routine for are left to
the generic lowerings.

The handlers' names carry a prefix, ``cu`` here (JAX's ROCm plugin names the same handlers
``hip``): ``register(registry, platform, prefix)`` takes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.extend import LoweringRegistry, RuleContext, ShapedArray
from ember_plugin_kit.linalg_ffi import (
    INT32,
    add_scalar,
    adjoint,
    batch_of,
    call_rule,
    ffi_call,
    info_ok,
    is_empty,
    is_linalg_dtype,
    nan_where_failed,
    real_dtype,
    slice_to,
    triangle,
)

PREFIX = "cu"

# cuSOLVER's Jacobi SVD is the faster one up to this size (JAX's choice, after NVIDIA's GTC
# 2019 figures); beyond it, the QR-based gesvd.
JACOBI_SVD_MAX_DIM = 1024
# gesvdjBatched has no economic mode and pays off up to 32x32: below that, JAX asks for the
# full U and V and slices them.
BATCHED_JACOBI_MAX_DIM = 32


def solver_target(prefix: str, routine: str) -> str:
    """``cusolver_potrf_ffi`` for prefix ``cu`` and routine ``potrf``."""
    return f"{prefix}solver_{routine}_ffi"


def _enum_name(value: Any) -> str | None:
    return None if value is None else getattr(value, "name", str(value))


# --------------------------------------------------------------------------------------------
# The rules (called for cuSOLVER's dtypes and non-empty operands only, see ``_override``)


def cholesky_rule(ctx: RuleContext, x: str, *, prefix: str) -> str:
    """The lower Cholesky factor (potrf), strictly upper part zeroed; NaN where a matrix is
    not positive definite."""
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    factor, info = ffi_call(
        ctx,
        solver_target(prefix, "potrf"),
        [x],
        [aval],
        [aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
        lower=True,
    )
    factor = triangle(ctx, factor, aval, lower=True)
    return nan_where_failed(ctx, info_ok(ctx, info, batch), factor, aval, batch)


def lu_pivots_to_permutation_rule(
    ctx: RuleContext, pivots: str, *, permutation_size: int, prefix: str
) -> str:
    """The permutation the zero-based row swaps ``pivots`` make (a GPU kernel of the plugin)."""
    del permutation_size  # the result's shape says it
    (perm,) = ffi_call(
        ctx,
        f"{prefix}_lu_pivots_to_permutation",
        [pivots],
        list(ctx.avals_in),
        list(ctx.avals_out),
        column_major=False,
        matrix_rank=1,
    )
    return perm


def lu_rule(ctx: RuleContext, x: str, *, prefix: str) -> list[str]:
    """(lu, pivots, permutation) of partial-pivoting LU (getrf), pivots zero-based; NaN in
    ``lu`` where the routine failed (a negative info: singular matrices still factor)."""
    (aval,) = ctx.avals_in
    _, pivots_aval, perm_aval = ctx.avals_out
    batch = batch_of(aval)
    lu, pivots, info = ffi_call(
        ctx,
        solver_target(prefix, "getrf"),
        [x],
        [aval],
        [aval, pivots_aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
    )
    pivots = add_scalar(ctx, pivots, pivots_aval, -1)  # cuSOLVER counts rows from one
    lu = nan_where_failed(ctx, info_ok(ctx, info, batch, "GE"), lu, aval, batch)
    perm = call_rule(
        ctx,
        lu_pivots_to_permutation_rule,
        [pivots],
        [pivots_aval],
        [perm_aval],
        permutation_size=perm_aval.shape[-1],
        prefix=prefix,
    )
    return [lu, pivots, perm]


def geqrf_rule(ctx: RuleContext, x: str, *, prefix: str) -> list[str]:
    """(packed, taus): Householder QR (geqrf)."""
    (aval,) = ctx.avals_in
    return ffi_call(
        ctx, solver_target(prefix, "geqrf"), [x], [aval], list(ctx.avals_out), aliases={0: 0}
    )


def householder_product_rule(ctx: RuleContext, a: str, taus: str, *, prefix: str) -> str:
    """Q's first n columns from the reflectors (orgqr; ungqr for complex, same handler)."""
    a_aval, taus_aval = ctx.avals_in
    (q,) = ffi_call(
        ctx,
        solver_target(prefix, "orgqr"),
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
    prefix: str,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> list[str]:
    """(v, w): eigenvectors and ascending eigenvalues (syevd, or the Jacobi solver for
    ``EighImplementation.JACOBI``), from the ``lower`` triangle; NaN where the routine did not
    converge."""
    del sort_eigenvalues  # cuSOLVER sorts
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    n = aval.shape[-1]
    w_aval = ShapedArray((*batch, n), real_dtype(aval.dtype))
    # algorithm 0: cuSOLVER's default (syevd; batched Jacobi for small matrices), 1: QR,
    # 2: Jacobi, as JAX's handler reads it
    choice = {None: 0, "QR": 1, "JACOBI": 2}[_enum_name(algorithm)]
    v, w, info = ffi_call(
        ctx,
        solver_target(prefix, "syevd"),
        [x],
        [aval],
        [aval, w_aval, ShapedArray(batch, INT32)],
        aliases={0: 0},
        lower=bool(lower),
        algorithm=np.uint8(choice),
    )
    ok = info_ok(ctx, info, batch)
    v = nan_where_failed(ctx, ok, v, aval, batch)
    w = nan_where_failed(ctx, ok, w, w_aval, batch)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        zeros = [0] * len(batch)
        v, _ = slice_to(ctx, v, aval, (*batch, n, hi), (*zeros, 0, lo))
        w, _ = slice_to(ctx, w, w_aval, (*batch, hi), (*zeros, lo))
    return [v, w]


def _eigh_supports(*, algorithm: Any = None, **_: Any) -> bool:
    return _enum_name(algorithm) in (None, "QR", "JACOBI")


def svd_rule(
    ctx: RuleContext,
    x: str,
    *,
    full_matrices: bool,
    compute_uv: bool,
    prefix: str,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> list[str]:
    """``[s, u, vt]`` (``[s]`` without ``compute_uv``): cuSOLVER's Jacobi SVD (gesvdj) up to
    1024 x 1024 or for ``SvdAlgorithm.JACOBI``, its QR-based gesvd beyond or for
    ``SvdAlgorithm.QR``; NaN where the routine failed."""
    (aval,) = ctx.avals_in
    batch = batch_of(aval)
    m, n = aval.shape[-2:]
    k = min(m, n)
    s_aval = ShapedArray((*batch, k), real_dtype(aval.dtype))
    info_aval = ShapedArray(batch, INT32)
    name = _enum_name(algorithm)
    jacobi = name == "JACOBI" or (
        name in (None, "DEFAULT") and m <= JACOBI_SVD_MAX_DIM and n <= JACOBI_SVD_MAX_DIM
    )
    solve = _gesvdj if jacobi else _gesvd
    s, u, vt, u_aval, vt_aval = solve(
        ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv, prefix
    )
    zeros = [0] * len(batch)
    lo, hi = subset_by_index if subset_by_index is not None else (0, k)
    s, _ = slice_to(ctx, s, s_aval, (*batch, hi), (*zeros, lo))
    if not compute_uv:
        return [s]
    if (lo, hi) != (0, k):
        u, _ = slice_to(ctx, u, u_aval, (*batch, m, hi), (*zeros, 0, lo))
        vt, _ = slice_to(ctx, vt, vt_aval, (*batch, hi, n), (*zeros, lo, 0))
    return [s, u, vt]


def _svd_supports(*, algorithm: Any = None, **_: Any) -> bool:
    return _enum_name(algorithm) in (None, "DEFAULT", "QR", "JACOBI")


def _gesvdj(ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv, prefix):
    m, n = aval.shape[-2:]
    k = min(m, n)
    econ = not full_matrices and m > BATCHED_JACOBI_MAX_DIM and n > BATCHED_JACOBI_MAX_DIM
    # gesvdj writes U and V (not V^H), whether or not they are wanted.
    u_aval = ShapedArray((*batch, m, k if econ else m), aval.dtype)
    v_aval = ShapedArray((*batch, n, k if econ else n), aval.dtype)
    _, s, u, v, info = ffi_call(
        ctx,
        solver_target(prefix, "gesvdj"),
        [x],
        [aval],
        [aval, s_aval, u_aval, v_aval, info_aval],
        aliases={0: 0},
        full_matrices=not econ,
        compute_uv=bool(compute_uv),
    )
    ok = info_ok(ctx, info, batch)
    s = nan_where_failed(ctx, ok, s, s_aval, batch)
    if not compute_uv:
        return s, None, None, None, None
    vt, vt_aval = adjoint(ctx, v, v_aval)
    if not full_matrices and not econ:
        u, u_aval = slice_to(ctx, u, u_aval, (*batch, m, k))
        vt, vt_aval = slice_to(ctx, vt, vt_aval, (*batch, k, n))
    u = nan_where_failed(ctx, ok, u, u_aval, batch)
    vt = nan_where_failed(ctx, ok, vt, vt_aval, batch)
    return s, u, vt, u_aval, vt_aval


def _gesvd(ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv, prefix):
    m, n = aval.shape[-2:]
    k = min(m, n)
    # gesvd wants m >= n: a wide matrix is handed over row-major, i.e. as its transpose,
    # whose U and V^H are the matrix's V^H and U swapped.
    transposed = m < n
    u_aval = ShapedArray((*batch, m, m if full_matrices else k), aval.dtype)
    vt_aval = ShapedArray((*batch, n if full_matrices else k, n), aval.dtype)
    outs = [aval, s_aval, vt_aval, u_aval] if transposed else [aval, s_aval, u_aval, vt_aval]
    _, s, first, second, info = ffi_call(
        ctx,
        solver_target(prefix, "gesvd"),
        [x],
        [aval],
        [*outs, info_aval],
        aliases={0: 0},
        column_major=not transposed,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        transposed=transposed,
    )
    u, vt = (second, first) if transposed else (first, second)
    ok = info_ok(ctx, info, batch)
    s = nan_where_failed(ctx, ok, s, s_aval, batch)
    if not compute_uv:
        return s, None, None, None, None
    u = nan_where_failed(ctx, ok, u, u_aval, batch)
    vt = nan_where_failed(ctx, ok, vt, vt_aval, batch)
    return s, u, vt, u_aval, vt_aval


def _always(**_: Any) -> bool:
    return True


# --------------------------------------------------------------------------------------------
# Registration

# rule, and which parameters it takes (``supports(**params)``; the others: generic lowering)
RULES: dict[str, tuple[Callable[..., Any], Callable[..., bool]]] = {
    "cholesky": (cholesky_rule, _always),
    "lu": (lu_rule, _always),
    "lu_pivots_to_permutation": (lu_pivots_to_permutation_rule, _always),
    "geqrf": (geqrf_rule, _always),
    "householder_product": (householder_product_rule, _always),
    "eigh": (eigh_rule, _eigh_supports),
    "svd": (svd_rule, _svd_supports),
}


def _override(
    name: str, solver_rule: Callable[..., Any], supports: Callable[..., bool], generic
) -> Callable[..., Any]:
    """The GPU rule of primitive ``name``: cuSOLVER where it applies, else ``generic``."""

    def rule(ctx: RuleContext, *operands: str, **params: Any) -> Any:
        operand = ctx.avals_in[0]
        dtype_ok = name == "lu_pivots_to_permutation" or is_linalg_dtype(operand.dtype)
        if dtype_ok and not is_empty([*ctx.avals_in, *ctx.avals_out]) and supports(**params):
            return solver_rule(ctx, *operands, **params)
        return generic(ctx, *operands, **params)

    rule.__name__ = rule.__qualname__ = f"gpu_solver_{name}_lowering"
    rule.__doc__ = getattr(solver_rule, "__doc__", None)
    return rule


def register(registry: LoweringRegistry, platform: str, prefix: str = PREFIX) -> list[str]:
    """Lower each primitive of ``RULES`` through the ``prefix`` solver's handlers on
    ``platform``; returns the names registered."""
    registered = []
    for name, (solver_rule, supports) in RULES.items():
        rule = functools.partial(solver_rule, prefix=prefix)
        functools.update_wrapper(rule, solver_rule)
        registry.register_by_name(
            name, _override(name, rule, supports, registry.generic(name)), platform=platform
        )
        registered.append(name)
    return registered
