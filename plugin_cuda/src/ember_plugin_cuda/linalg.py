"""Linear algebra on NVIDIA GPUs through cuSOLVER and cuBLAS: lowering rules for platform
``cuda`` that emit the custom calls of the CUDA plugin's FFI extension (``cusolver_*_ffi``,
registered with XLA's CUDA plugin before its client starts, see ``plugin.py``).

Each rule follows JAX's GPU lowering of the primitive of the same name: the operand and
results travel as column-major matrices (the layout cuSOLVER's Fortran-order routines read),
leading dimensions are a batch the handler loops over (or hands to a batched routine), and
each factorisation's ``info`` result turns the matrices of a failed factorisation into NaN,
as JAX does. Triangular solves become StableHLO's ``triangular_solve``, which XLA's GPU
compiler itself rewrites into cuBLAS ``trsm``.

The rules take JAX's primitive parameters (``eigh``: ``lower``; ``svd``: ``full_matrices``,
``compute_uv``; ``qr``: ``full_matrices``; ``triangular_solve``: ``left_side``, ``lower``,
``transpose_a``, ``conjugate_a``, ``unit_diagonal``). ``register`` installs a rule only for the
primitives ember defines: ember's own linear algebra is written with generic ops (loops of
Householder, Jacobi and Cholesky steps), so where ember has no primitive of a name there is
nothing to override, and ``register`` says which names it skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.extend import LoweringRegistry, RuleContext, ShapedArray

# The FFI handlers' names, as the CUDA plugin's extension registers them.
POTRF = "cusolver_potrf_ffi"
GETRF = "cusolver_getrf_ffi"
GEQRF = "cusolver_geqrf_ffi"
ORGQR = "cusolver_orgqr_ffi"
SYEVD = "cusolver_syevd_ffi"
GESVDJ = "cusolver_gesvdj_ffi"
GESVD = "cusolver_gesvd_ffi"
PIVOTS_TO_PERMUTATION = "cu_lu_pivots_to_permutation"

# cuSOLVER's Jacobi SVD is the faster one up to this size (JAX's choice, after NVIDIA's GTC
# 2019 figures); beyond it, the QR-based gesvd.
JACOBI_SVD_MAX_DIM = 1024
# gesvdjBatched has no economic mode and pays off up to 32x32: below that, JAX asks for the
# full U and V and slices them.
BATCHED_JACOBI_MAX_DIM = 32

SOLVER_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


# --------------------------------------------------------------------------------------------
# Emitting an FFI custom call


def _column_major(rank: int) -> str:
    """The layout of a batch of Fortran-order matrices: the row dimension varies fastest."""
    minor_to_major = (rank - 2, rank - 1, *range(rank - 3, -1, -1))
    return _layout(minor_to_major)


def _row_major(rank: int) -> str:
    return _layout(tuple(range(rank - 1, -1, -1)))


def _layout(minor_to_major: Sequence[int]) -> str:
    if not minor_to_major:
        return "dense<> : tensor<0xindex>"
    dims = ", ".join(str(d) for d in minor_to_major)
    return f"dense<[{dims}]> : tensor<{len(minor_to_major)}xindex>"


def _attribute(value: Any) -> str:
    """A backend_config dictionary entry's value: XLA's FFI decodes each by its MLIR type."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, np.uint8):
        return f"{int(value)} : ui8"
    if isinstance(value, (int, np.int32)):
        return f"{int(value)} : i32"
    raise TypeError(f"an FFI attribute must be a bool, uint8 or int32, got {value!r}")


def ffi_call(
    ctx: RuleContext,
    target: str,
    operands: Sequence[str],
    avals_in: Sequence[ShapedArray],
    avals_out: Sequence[ShapedArray],
    *,
    aliases: dict[int, int] | None = None,
    column_major: bool = True,
    matrix_rank: int = 2,
    **attributes: Any,
) -> list[str]:
    """Emit a typed-FFI custom call (API version 4) to ``target``; returns the results' SSA
    names. The operands and results of the largest rank are (stacks of) matrices, laid out
    column-major when ``column_major``; the others (pivots, taus, info) row-major. The batch
    is the leading ``rank - matrix_rank`` dimensions, named in ``num_batch_dims`` as JAX does
    so that XLA's partitioner may split the batch."""
    top = max(len(a.shape) for a in avals_in)

    def layouts(avals: Sequence[ShapedArray]) -> str:
        entries = [
            _column_major(len(a.shape))
            if column_major and len(a.shape) == top
            else _row_major(len(a.shape))
            for a in avals
        ]
        return "[" + ", ".join(entries) + "]"

    config = ", ".join(f"{k} = {_attribute(v)}" for k, v in sorted(attributes.items()))
    attrs = {
        "call_target_name": f'"{target}"',
        "api_version": "4 : i32",
        "backend_config": "{" + config + "}",
        "operand_layouts": layouts(avals_in),
        "result_layouts": layouts(avals_out),
    }
    if aliases:
        attrs["output_operand_aliases"] = _aliases(aliases, len(avals_out))
    discardable = {"mhlo.frontend_attributes": f'{{num_batch_dims = "{top - matrix_rank}"}}'}
    return ctx.op(
        "stablehlo.custom_call", list(operands), list(avals_out), attrs, discardable=discardable
    )


def _aliases(aliases: dict[int, int], num_results: int) -> str:
    """``{operand: result}``: the result reuses the operand's buffer (the routines work in
    place). A call with one result names no tuple index."""
    entries = [
        f"#stablehlo.output_operand_alias<output_tuple_indices = "
        f"{'[]' if num_results == 1 else [result]}, "
        f"operand_index = {operand}, operand_tuple_indices = []>"
        for operand, result in sorted(aliases.items())
    ]
    return "[" + ", ".join(entries) + "]"


# --------------------------------------------------------------------------------------------
# Small StableHLO helpers


def _batch_and_matrix(aval: ShapedArray, what: str) -> tuple[tuple[int, ...], int, int]:
    if len(aval.shape) < 2:
        raise ValueError(f"{what}: expected a matrix or a stack of matrices, got {aval.shape}")
    if np.dtype(aval.dtype) not in [np.dtype(t) for t in SOLVER_DTYPES]:
        raise TypeError(
            f"{what} on cuda: cuSOLVER takes float32, float64, complex64 or complex128, "
            f"got {aval.dtype}"
        )
    *batch, m, n = aval.shape
    return tuple(batch), m, n


def _real_dtype(dtype: Any) -> np.dtype:
    return np.empty((), dtype).real.dtype


def _info_ok(ctx: RuleContext, info: str, batch: tuple[int, ...], direction: str = "EQ") -> str:
    """``info <direction> 0`` per matrix of the batch: the routine succeeded on it."""
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    zero = ctx.full(0, info_aval)
    return ctx.op(
        "stablehlo.compare",
        [info, zero],
        ShapedArray(batch, np.dtype(np.bool_)),
        {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": "#stablehlo<comparison_type SIGNED>",
        },
    )


def _nan_where_failed(ctx: RuleContext, ok: str, x: str, aval: ShapedArray, batch) -> str:
    """``x`` with every matrix (or vector) whose factorisation failed replaced by NaN."""
    mask = ctx.broadcast_in_dim(
        ok, ShapedArray(aval.shape, np.dtype(np.bool_)), list(range(len(batch)))
    )
    nan = np.nan + 1j * np.nan if np.issubdtype(aval.dtype, np.complexfloating) else np.nan
    return ctx.op("stablehlo.select", [mask, x, ctx.full(nan, aval)], aval)


def _slice(ctx: RuleContext, x: str, aval_in: ShapedArray, limits: Sequence[int]) -> str:
    rank = len(aval_in.shape)
    return ctx.op(
        "stablehlo.slice",
        [x],
        ShapedArray(tuple(limits), aval_in.dtype),
        {
            "start_indices": _i64s([0] * rank),
            "limit_indices": _i64s(limits),
            "strides": _i64s([1] * rank),
        },
    )


def _i64s(values: Sequence[int]) -> str:
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in values) if values else "") + ">"


def _adjoint(ctx: RuleContext, x: str, aval: ShapedArray) -> tuple[str, ShapedArray]:
    """The conjugate transpose of a stack of matrices."""
    rank = len(aval.shape)
    *batch, m, n = aval.shape
    out = ShapedArray((*batch, n, m), aval.dtype)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    y = ctx.op("stablehlo.transpose", [x], out, {"permutation": _i64s(perm)})
    return _conjugate(ctx, y, out), out


def _conjugate(ctx: RuleContext, x: str, aval: ShapedArray) -> str:
    """The complex conjugate (``x`` itself when real)."""
    if not np.issubdtype(aval.dtype, np.complexfloating):
        return x
    real = ShapedArray(aval.shape, _real_dtype(aval.dtype))
    re = ctx.op("stablehlo.real", [x], real)
    im = ctx.op("stablehlo.negate", [ctx.op("stablehlo.imag", [x], real)], real)
    return ctx.op("stablehlo.complex", [re, im], aval)


def _triangle(ctx: RuleContext, x: str, aval: ShapedArray, *, lower: bool) -> str:
    """``x`` with the entries above (``lower``) or below the diagonal zeroed."""
    rank = len(aval.shape)
    index = ShapedArray(aval.shape, np.dtype(np.int32))
    rows = ctx.op("stablehlo.iota", [], index, {"iota_dimension": f"{rank - 2} : i64"})
    cols = ctx.op("stablehlo.iota", [], index, {"iota_dimension": f"{rank - 1} : i64"})
    keep = ctx.op(
        "stablehlo.compare",
        [rows, cols],
        ShapedArray(aval.shape, np.dtype(np.bool_)),
        {
            "comparison_direction": f"#stablehlo<comparison_direction {'GE' if lower else 'LE'}>",
            "compare_type": "#stablehlo<comparison_type SIGNED>",
        },
    )
    return ctx.op("stablehlo.select", [keep, x, ctx.full(0, aval)], aval)


def _whole_spectrum(what: str, subset_by_index: tuple[int, int] | None, size: int) -> None:
    if subset_by_index is not None and tuple(subset_by_index) != (0, size):
        raise NotImplementedError(
            f"{what} on cuda: subset_by_index={subset_by_index} is not supported (the "
            f"routines compute all {size})"
        )


# --------------------------------------------------------------------------------------------
# The rules


def cholesky_rule(ctx: RuleContext, x: str) -> str:
    """The lower Cholesky factor (potrf); NaN where a matrix is not positive definite."""
    (aval,) = ctx.avals_in
    batch, _, _ = _batch_and_matrix(aval, "cholesky")
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    factor, info = ffi_call(ctx, POTRF, [x], [aval], [aval, info_aval], aliases={0: 0}, lower=True)
    factor = _nan_where_failed(ctx, _info_ok(ctx, info, batch), factor, aval, batch)
    # potrf leaves the upper triangle as it found it: zero it, as JAX's cholesky does.
    return _triangle(ctx, factor, aval, lower=True)


def lu_rule(ctx: RuleContext, x: str) -> list[str]:
    """(lu, pivots, permutation) of partial-pivoting LU (getrf), pivots zero-based; NaN in
    ``lu`` where the routine failed (a negative info: singular matrices still factor)."""
    (aval,) = ctx.avals_in
    batch, m, n = _batch_and_matrix(aval, "lu")
    pivots_aval = ShapedArray((*batch, min(m, n)), np.dtype(np.int32))
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    lu, pivots, info = ffi_call(
        ctx, GETRF, [x], [aval], [aval, pivots_aval, info_aval], aliases={0: 0}
    )
    # cuSOLVER's pivots count from one, JAX's (and ember's) from zero.
    pivots = ctx.op("stablehlo.subtract", [pivots, ctx.full(1, pivots_aval)], pivots_aval)
    lu = _nan_where_failed(ctx, _info_ok(ctx, info, batch, "GE"), lu, aval, batch)
    perm_aval = ShapedArray((*batch, m), np.dtype(np.int32))
    (perm,) = ffi_call(
        ctx,
        PIVOTS_TO_PERMUTATION,
        [pivots],
        [pivots_aval],
        [perm_aval],
        column_major=False,
        matrix_rank=1,
    )
    return [lu, pivots, perm]


def qr_rule(
    ctx: RuleContext,
    x: str,
    *,
    full_matrices: bool = True,
    pivoting: bool = False,
    use_magma: Any = None,
) -> list[str]:
    """(q, r): Householder QR (geqrf), then q formed from the reflectors (orgqr)."""
    del use_magma  # MAGMA is ROCm's and CPU's; cuSOLVER here
    if pivoting:
        raise NotImplementedError("qr on cuda: pivoting=True (geqp3) is not supported")
    (aval,) = ctx.avals_in
    batch, m, n = _batch_and_matrix(aval, "qr")
    k = min(m, n)
    taus_aval = ShapedArray((*batch, k), aval.dtype)
    packed, taus = ffi_call(ctx, GEQRF, [x], [aval], [aval, taus_aval], aliases={0: 0})
    q_cols = m if full_matrices else k
    # orgqr forms q in place of the reflectors: give it an m x q_cols matrix, padding with
    # zero columns (a complete q from a wide-enough buffer) or cutting off the extra ones.
    q_in_aval = ShapedArray((*batch, m, q_cols), aval.dtype)
    if q_cols > n:
        rank = len(aval.shape)
        q_in = ctx.op(
            "stablehlo.pad",
            [packed, ctx.constant(0, ShapedArray((), aval.dtype))],
            q_in_aval,
            {
                "edge_padding_low": _i64s([0] * rank),
                "edge_padding_high": _i64s([0] * (rank - 1) + [q_cols - n]),
                "interior_padding": _i64s([0] * rank),
            },
        )
    elif q_cols < n:
        q_in = _slice(ctx, packed, aval, (*batch, m, q_cols))
    else:
        q_in = packed
    (q,) = ffi_call(ctx, ORGQR, [q_in, taus], [q_in_aval, taus_aval], [q_in_aval], aliases={0: 0})
    r_rows = m if full_matrices else k
    r_aval = ShapedArray((*batch, r_rows, n), aval.dtype)
    r = packed if r_rows == m else _slice(ctx, packed, aval, r_aval.shape)
    return [q, _triangle(ctx, r, r_aval, lower=False)]


def eigh_rule(
    ctx: RuleContext,
    x: str,
    *,
    lower: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> list[str]:
    """(v, w): eigenvectors and ascending eigenvalues of a Hermitian matrix (syevd, reading
    the ``lower`` triangle); NaN where the routine failed to converge."""
    del sort_eigenvalues, algorithm  # syevd's eigenvalues always come sorted
    (aval,) = ctx.avals_in
    batch, m, n = _batch_and_matrix(aval, "eigh")
    if m != n:
        raise ValueError(f"eigh: expected square matrices, got {aval.shape}")
    _whole_spectrum("eigh", subset_by_index, n)
    w_aval = ShapedArray((*batch, n), _real_dtype(aval.dtype))
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    # algorithm 0: cuSOLVER's default (syevd; batched Jacobi for small matrices).
    v, w, info = ffi_call(
        ctx,
        SYEVD,
        [x],
        [aval],
        [aval, w_aval, info_aval],
        aliases={0: 0},
        lower=bool(lower),
        algorithm=np.uint8(0),
    )
    ok = _info_ok(ctx, info, batch)
    return [
        _nan_where_failed(ctx, ok, v, aval, batch),
        _nan_where_failed(ctx, ok, w, w_aval, batch),
    ]


def svd_rule(
    ctx: RuleContext,
    x: str,
    *,
    full_matrices: bool = True,
    compute_uv: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> list[str]:
    """``[s, u, vt]`` (or ``[s]`` without ``compute_uv``): cuSOLVER's Jacobi SVD (gesvdj) up
    to 1024 x 1024, its QR-based gesvd beyond (JAX's default choice; ``algorithm`` is not
    read); NaN where the routine failed."""
    del algorithm
    (aval,) = ctx.avals_in
    batch, m, n = _batch_and_matrix(aval, "svd")
    k = min(m, n)
    _whole_spectrum("svd", subset_by_index, k)
    s_aval = ShapedArray((*batch, k), _real_dtype(aval.dtype))
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    if m <= JACOBI_SVD_MAX_DIM and n <= JACOBI_SVD_MAX_DIM:
        s, u, vt = _gesvdj(ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv)
    else:
        s, u, vt = _gesvd(ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv)
    return [s] if not compute_uv else [s, u, vt]


def _gesvdj(ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv):
    *_, m, n = aval.shape
    k = min(m, n)
    econ = not full_matrices and m > BATCHED_JACOBI_MAX_DIM and n > BATCHED_JACOBI_MAX_DIM
    # gesvdj always writes U and V (not V^H), whether or not they are wanted.
    u_aval = ShapedArray((*batch, m, k if econ else m), aval.dtype)
    v_aval = ShapedArray((*batch, n, k if econ else n), aval.dtype)
    _, s, u, v, info = ffi_call(
        ctx,
        GESVDJ,
        [x],
        [aval],
        [aval, s_aval, u_aval, v_aval, info_aval],
        aliases={0: 0},
        full_matrices=not econ,
        compute_uv=bool(compute_uv),
    )
    ok = _info_ok(ctx, info, batch)
    s = _nan_where_failed(ctx, ok, s, s_aval, batch)
    if not compute_uv:
        return s, None, None
    vt, vt_aval = _adjoint(ctx, v, v_aval)
    if not full_matrices and not econ:
        u = _slice(ctx, u, u_aval, (*batch, m, k))
        u_aval = ShapedArray((*batch, m, k), aval.dtype)
        vt = _slice(ctx, vt, vt_aval, (*batch, k, n))
        vt_aval = ShapedArray((*batch, k, n), aval.dtype)
    u = _nan_where_failed(ctx, ok, u, u_aval, batch)
    vt = _nan_where_failed(ctx, ok, vt, vt_aval, batch)
    return s, u, vt


def _gesvd(ctx, x, aval, batch, s_aval, info_aval, full_matrices, compute_uv):
    *_, m, n = aval.shape
    k = min(m, n)
    # gesvd wants m >= n: a wide matrix is handed over row-major, i.e. as its transpose,
    # whose U and V^H are the matrix's V^H and U swapped.
    transposed = m < n
    if compute_uv:
        u_aval = ShapedArray((*batch, m, m if full_matrices else k), aval.dtype)
        vt_aval = ShapedArray((*batch, n if full_matrices else k, n), aval.dtype)
    else:  # gesvd writes no vectors: scalar placeholders, as JAX passes
        u_aval = vt_aval = ShapedArray((), aval.dtype)
    outs = [aval, s_aval, vt_aval, u_aval] if transposed else [aval, s_aval, u_aval, vt_aval]
    _, s, first, second, info = ffi_call(
        ctx,
        GESVD,
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
    ok = _info_ok(ctx, info, batch)
    s = _nan_where_failed(ctx, ok, s, s_aval, batch)
    if not compute_uv:
        return s, None, None
    return (
        s,
        _nan_where_failed(ctx, ok, u, u_aval, batch),
        _nan_where_failed(ctx, ok, vt, vt_aval, batch),
    )


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
    """StableHLO's triangular_solve, which XLA's GPU compiler turns into cuBLAS trsm (batched
    over leading dimensions)."""
    a_aval, b_aval = ctx.avals_in
    if conjugate_a and not transpose_a:
        # StableHLO has no "conjugate without transposing": conjugate a first.
        a = _conjugate(ctx, a, a_aval)
        conjugate_a = False
    transpose = "NO_TRANSPOSE"
    if transpose_a:
        transpose = "ADJOINT" if conjugate_a else "TRANSPOSE"
    out = ctx.op(
        "stablehlo.triangular_solve",
        [a, b],
        b_aval,
        {
            "left_side": _attribute(bool(left_side)),
            "lower": _attribute(bool(lower)),
            "unit_diagonal": _attribute(bool(unit_diagonal)),
            "transpose_a": f"#stablehlo<transpose {transpose}>",
        },
    )
    return out


# The rules by the name of the primitive each lowers (a rule returns its result's SSA name, or
# a list of names for the primitives with several results).
RULES: dict[str, Callable[..., str | list[str]]] = {
    "cholesky": cholesky_rule,
    "lu": lu_rule,
    "qr": qr_rule,
    "eigh": eigh_rule,
    "svd": svd_rule,
    "triangular_solve": triangular_solve_rule,
}


def register(registry: LoweringRegistry, platform: str) -> list[str]:
    """Lower, on ``platform``, each primitive of ``RULES`` that ember defines with its rule;
    returns the names ember has no primitive for (skipped)."""
    skipped = []
    for name, rule in RULES.items():
        try:
            registry.register(name, rule, platform=platform)
        except ValueError:  # ember defines no primitive of this name
            skipped.append(name)
    return skipped
