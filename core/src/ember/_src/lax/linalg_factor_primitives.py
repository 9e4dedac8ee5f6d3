"""The factorisation primitives, named and parametrised as JAX's ``lax.linalg`` ones so that
plugins override them per platform by name: ``cholesky``, ``triangular_solve``, ``lu``,
``lu_pivots_to_permutation`` and ``tridiagonal_solve`` (the QR family is in
``linalg_qr_primitives``, what they share in ``linalg_primitive_rules``).

Operands are stacks of matrices (any leading batch axes). Results follow LAPACK's conventions
on every path (packed factors, zero-based int32 pivots, larfg's reflector signs), and a
factorisation that fails (cholesky of a matrix that is not positive definite) gives NaN in
every entry of *that* matrix. The generic lowerings are StableHLO's own ``cholesky`` and
``triangular_solve``, and ember's loops (``lax.linalg_*``) lowered through their jaxprs. The
reference rules are NumPy (``linalg_factor_reference``) or the
same loops evaluated with the reference rules. Half-precision matrices are computed in
float32."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_tangents, instantiate
from ember._src.interpreters.batching import not_mapped
from ember._src.lax import linalg_factor_reference as numpy_rules
from ember._src.lax.linalg_cholesky import cholesky_single
from ember._src.lax.linalg_lu import lu_pivoted, pivots_to_permutation
from ember._src.lax.linalg_operands import (
    batched,
    conj_if_complex,
    identity_matrix,
    main_diagonal,
    real_part,
    transpose_last_axes,
    where_broadcast,
)
from ember._src.lax.linalg_primitive_rules import (
    batch_at_front,
    batch_dims_split,
    check_batch,
    check_matrix,
    check_same_dtype,
    fail_shape,
    in_float32,
    tril,
    triu,
    zeros_results,
)
from ember._src.lax.linalg_tridiagonal import thomas
from ember._src.lax.slicing import full
from ember._src.lowering.expressions import lower_expression, lower_via, reference_via
from ember._src.primitives.arithmetic import imag, real
from ember._src.primitives.comparisons import is_finite
from ember._src.primitives.reduce import reduce_and
from ember._src.primitives.shape import (
    broadcast_to_shape,
    convert_element_type,
    move_axis,
    reshape,
)
from ember._src.primitives.slicing import concatenate

_HALF = dtypes.HALF_FLOATS
_INT32 = np.dtype(np.int32)


# --------------------------------------------------------------------------------------------
# cholesky


def _cholesky_abstract_eval(x):
    check_matrix("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)


def nan_where_failed(factor: Any, ok: Any) -> Any:
    """``factor`` with every entry of each matrix whose ``ok`` (one per matrix) is false
    replaced by NaN: how a failed factorisation of one matrix of a stack shows."""
    dtype = get_aval(factor).dtype
    ok = broadcast_to_shape(ok[..., None, None], get_aval(factor).shape)
    return where_broadcast(ok, factor, np.asarray(np.nan, dtype)).astype(dtype)


def _finite(x: Any) -> Any:
    if get_aval(x).dtype.kind == "c":
        return is_finite(real(x)) & is_finite(imag(x))
    return is_finite(x)


def _cholesky_checked(raw: Any) -> Any:
    """StableHLO's Cholesky result made LAPACK's: the strictly upper part (left undefined)
    zeroed, and NaN for each matrix that is not positive definite (a diagonal entry that is
    not positive, or any entry not finite)."""
    lower = tril(raw)
    positive = reduce_and(real_part(main_diagonal(lower)) > 0, axes=(get_aval(lower).ndim - 2,))
    ndim = get_aval(lower).ndim
    finite = reduce_and(_finite(lower), axes=(ndim - 2, ndim - 1))
    return nan_where_failed(lower, positive & finite)


def _cholesky_half(x: Any) -> Any:
    factor = cholesky_p.bind(convert_element_type(x, np.float32))
    return convert_element_type(factor, get_aval(x).dtype)


@in_float32
def _cholesky_loop(x: Any) -> Any:
    if get_aval(x).size == 0:  # nothing to factorise (nor to slice a loop's column from)
        return x
    return _cholesky_checked(batched(cholesky_single, x))


def _cholesky_lowering(ctx, x):
    (aval,) = ctx.avals_in
    if aval.size == 0:
        return zeros_results(ctx)[0]
    if aval.dtype in _HALF:
        return lower_expression(ctx, _cholesky_half, [x], {})[0]
    out = ctx.avals_out[0].update(sharding=None)
    raw = ctx.op("stablehlo.cholesky", [x], out, {"lower": "true"})
    return lower_expression(ctx, _cholesky_checked, [raw], {})[0]


def _cholesky_reference(x):
    return numpy_rules.cholesky(x)


def _cholesky_jvp(primals, tangents):
    """JAX's rule (Murray, arXiv:1602.07527): ``L_dot = L phi(L^-1 sigma_dot L^-H)``, phi
    keeping the lower triangle with its diagonal halved; sigma_dot is taken as Hermitian."""
    (x,), (sigma_dot,) = primals, tangents
    lower = cholesky_p.bind(x)
    if type(sigma_dot) is Zero:
        return lower, Zero(tangent_aval(get_aval(lower)))
    solve = dict(lower=True, conjugate_a=True, unit_diagonal=False)
    tmp = triangular_solve_p.bind(lower, sigma_dot, left_side=False, transpose_a=True, **solve)
    inner = triangular_solve_p.bind(
        lower, tmp, left_side=True, transpose_a=False, **{**solve, "conjugate_a": False}
    )
    n = get_aval(x).shape[-1]
    halve = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
    phi = inner * halve.astype(get_aval(inner).dtype)
    return lower, lower @ phi


cholesky_p = rules.define_primitive(
    "cholesky",
    abstract_eval=_cholesky_abstract_eval,
    jvp=_cholesky_jvp,
    batch=rules.per_primitive(batch_at_front),
    # XLA's own Cholesky is slower on CPU than the column loop (a 128 x 128 float32 stack of 8:
    # 55 ms against 2 ms); elsewhere it is the platform's (cuSOLVER's on GPU)
    lowering={
        None: _cholesky_lowering,
        "cpu": lower_via(_cholesky_loop, multiple_results=False),
    },
    reference=_cholesky_reference,
    sharding=batch_dims_split((2,), lambda: 2),
)


# --------------------------------------------------------------------------------------------
# triangular_solve


def _triangular_solve_abstract_eval(
    a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal
):
    what = "triangular_solve"
    check_matrix(what, a, square=True)
    check_matrix(what, b)
    check_same_dtype(what, a, b)
    check_batch(what, a, b, 2, "b")
    common = b.shape[-2] if left_side else b.shape[-1]
    if common != a.shape[-1]:
        side = "rows" if left_side else "columns"
        raise fail_shape(
            what, f"b ({b.str_short()}) must have {a.shape[-1]} {side} to meet a ({a.str_short()})"
        )
    return ShapedArray(b.shape, b.dtype)


def _transpose_attr(transpose_a: bool, conjugate_a: bool, dtype: np.dtype) -> str:
    if not transpose_a:
        return "#stablehlo<transpose NO_TRANSPOSE>"
    adjoint = conjugate_a and dtype.kind == "c"
    return f"#stablehlo<transpose {'ADJOINT' if adjoint else 'TRANSPOSE'}>"


def _triangular_solve_rewritten(a: Any, b: Any, **params: Any) -> Any:
    """The solve StableHLO can do directly: in float32 for half precision, and with a
    conjugated (not transposed) ``a`` conjugated first."""
    dtype = get_aval(b).dtype
    if params["conjugate_a"] and not params["transpose_a"]:
        a, params = conj_if_complex(a), {**params, "conjugate_a": False}
    if dtype in _HALF:
        a, b = convert_element_type(a, np.float32), convert_element_type(b, np.float32)
    return convert_element_type(triangular_solve_p.bind(a, b, **params), dtype)


def _triangular_solve_lowering(
    ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal
):
    params = dict(
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    out = ctx.avals_out[0]
    if out.size == 0:
        return zeros_results(ctx)[0]
    dtype = ctx.avals_in[0].dtype
    if dtype in _HALF or (conjugate_a and not transpose_a and dtype.kind == "c"):
        return lower_expression(ctx, _triangular_solve_rewritten, [a, b], params)[0]

    def flag(value: bool) -> str:
        return "true" if value else "false"

    attrs = {
        "left_side": flag(left_side),
        "lower": flag(lower),
        "unit_diagonal": flag(unit_diagonal),
        "transpose_a": _transpose_attr(transpose_a, conjugate_a, dtype),
    }
    return ctx.op("stablehlo.triangular_solve", [a, b], out.update(sharding=None), attrs)


def _triangular_solve_reference(a, b, **params):
    return numpy_rules.triangular_solve(a, b, **params)


def _solve_tangent_in_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """The tangent of the solution for a tangent ``g_a`` of ``a`` (JAX's rule):
    ``-op(a)^-1 op(g_a) x`` (left) or ``-x op(g_a) op(a)^-1``, g_a restricted to the triangle
    that is read, the products ordered to be cheapest."""
    m, n = get_aval(ans).shape[-2:]
    g_a = tril(g_a, -1 if unit_diagonal else 0) if lower else triu(g_a, 1 if unit_diagonal else 0)
    g_a = -g_a
    g_a = transpose_last_axes(g_a) if transpose_a else g_a
    g_a = conj_if_complex(g_a) if conjugate_a else g_a
    params = dict(
        lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a, unit_diagonal=unit_diagonal
    )

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, left_side=left_side, **params)

    if left_side:
        return a_inverse(g_a @ ans) if m > n else a_inverse(g_a) @ ans
    return a_inverse(ans @ g_a) if m < n else ans @ a_inverse(g_a)


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    t_a, t_b = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    tangent = Zero(tangent_aval(get_aval(ans)))
    if type(t_b) is not Zero:
        tangent = triangular_solve_p.bind(a, t_b, **params)
    if type(t_a) is not Zero:
        tangent = add_tangents(tangent, _solve_tangent_in_a(t_a, ans, a, **params))
    return ans, tangent


def _triangular_solve_transpose(ct, a, b, **params):
    """Linear in b: the cotangent of b solves with op(a) transposed (conjugation stays, so
    the transpose, not the adjoint, is taken)."""
    if is_undefined(a):
        raise TypeError("internal error: triangular_solve transposed with respect to a")
    if type(ct) is Zero:
        return [None, None]
    params = {**params, "transpose_a": not params["transpose_a"]}
    return [None, triangular_solve_p.bind(a, ct, **params)]


def _triangular_solve_batch(vals, dims, **params):
    """An unbatched ``a`` solves for every batched ``b`` at once: b's batch axis folds into
    its columns (left side) or rows (right side), as JAX does, instead of copying ``a``."""
    a, b = vals
    a_dim, b_dim = dims
    if a_dim is not not_mapped or get_aval(b).ndim != get_aval(a).ndim + 1:
        return batch_at_front(triangular_solve_p)(vals, dims, **params)
    side = -1 if params["left_side"] else -2
    ndim = get_aval(b).ndim
    b = move_axis(b, b_dim, ndim + side)
    shape = get_aval(b).shape
    if params["left_side"]:
        folded = (*shape[:-2], shape[-2] * shape[-1])
    else:
        folded = (*shape[:-3], shape[-3] * shape[-2], shape[-1])
    x = triangular_solve_p.bind(a, reshape(b, folded), **params)
    return reshape(x, shape), ndim + side


triangular_solve_p = rules.define_primitive(
    "triangular_solve",
    abstract_eval=_triangular_solve_abstract_eval,
    jvp=_triangular_solve_jvp,
    transpose=_triangular_solve_transpose,
    batch=_triangular_solve_batch,
    lowering=_triangular_solve_lowering,
    reference=_triangular_solve_reference,
    sharding=batch_dims_split((2, 2), lambda **_: 2),
)


# --------------------------------------------------------------------------------------------
# lu and lu_pivots_to_permutation


def _lu_abstract_eval(x):
    check_matrix("lu", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    return [
        ShapedArray(x.shape, x.dtype),
        ShapedArray((*batch, min(m, n)), _INT32),
        ShapedArray((*batch, m), _INT32),
    ]


@in_float32
def _lu_expression(x):
    return batched(lu_pivoted, x)


def _lu_jvp_single(lu, a_dot, permutation):
    """JAX's rule for one matrix (de Hoog, Anderssen and Lukas): with ``W = L^-1 P a_dot
    U^-1``, ``L_dot = L tril(W, -1)`` and ``U_dot = triu(W) U``, L padded to (m, m) with the
    identity and U to (n, n)."""
    m, n = get_aval(lu).shape
    k = min(m, n)
    dtype = get_aval(lu).dtype
    lower = tril(lu[:, :k], -1)
    if m > k:
        lower = _pad_columns(lower, m - k)
    lower = lower + identity_matrix(m, dtype)
    upper = triu(lu[:k, :])
    if n > k:
        upper = _pad_rows(upper, n - k) + _corner_identity(n, k, dtype)
    solve = dict(lower=True, transpose_a=False, conjugate_a=False)
    la = triangular_solve_p.bind(
        lower, a_dot[permutation], left_side=True, unit_diagonal=True, **solve
    )
    lau = triangular_solve_p.bind(
        upper, la, left_side=False, **{**solve, "lower": False}, unit_diagonal=False
    )
    return lower @ tril(lau, -1) + triu(lau) @ upper


def _pad_columns(x: Any, count: int) -> Any:
    rows = get_aval(x).shape[0]
    return concatenate([x, full((rows, count), 0, get_aval(x).dtype)], 1)


def _pad_rows(x: Any, count: int) -> Any:
    columns = get_aval(x).shape[1]
    return concatenate([x, full((count, columns), 0, get_aval(x).dtype)], 0)


def _corner_identity(n: int, k: int, dtype: Any) -> Any:
    """The (n, n) matrix with ones on the diagonal from position k on."""
    return convert_element_type(np.diag(np.arange(n) >= k).astype(np.float32), dtype)


def _lu_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    lu, pivots, permutation = lu_p.bind(x)
    int_zeros = [Zero(tangent_aval(get_aval(v))) for v in (pivots, permutation)]
    if type(x_dot) is Zero:
        return [lu, pivots, permutation], [Zero(tangent_aval(get_aval(lu))), *int_zeros]
    lu_dot = batched(_lu_jvp_single, lu, x_dot, permutation, core_ndims=(2, 2, 1))
    return [lu, pivots, permutation], [lu_dot, *int_zeros]


lu_p = rules.define_primitive(
    "lu",
    abstract_eval=_lu_abstract_eval,
    jvp=_lu_jvp,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_lu_expression, multiple_results=True),
    reference=reference_via(_lu_expression, multiple_results=True),
    sharding=batch_dims_split((2,), lambda: (2, 1, 1)),
    multiple_results=True,
)


def _lu_pivots_to_permutation_abstract_eval(pivots, *, permutation_size):
    what = "lu_pivots_to_permutation"
    if pivots.dtype != _INT32 or pivots.ndim < 1:
        raise errors.EmberTypeError(
            f"{what}: pivots must be int32 of shape (..., k), got {pivots.str_short()}"
            f"{errors.where()}"
        )
    if pivots.shape[-1] > permutation_size:
        raise fail_shape(
            what, f"pivots ({pivots.str_short()}) longer than permutation_size={permutation_size}"
        )
    return ShapedArray((*pivots.shape[:-1], permutation_size), _INT32)


def _lu_pivots_to_permutation_expression(pivots, *, permutation_size):
    if 0 in get_aval(pivots).shape[:-1] or permutation_size == 0:
        return full((*get_aval(pivots).shape[:-1], permutation_size), 0, _INT32)
    return batched(lambda p: pivots_to_permutation(p, permutation_size), pivots, core_ndims=(1,))


lu_pivots_to_permutation_p = rules.define_primitive(
    "lu_pivots_to_permutation",
    abstract_eval=_lu_pivots_to_permutation_abstract_eval,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_lu_pivots_to_permutation_expression, multiple_results=False),
    reference=reference_via(_lu_pivots_to_permutation_expression, multiple_results=False),
    sharding=batch_dims_split((1,), lambda **_: 1),
)

# --------------------------------------------------------------------------------------------
# tridiagonal_solve


def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    what = "tridiagonal_solve"
    if d.ndim < 1 or dl.shape != d.shape or du.shape != d.shape:
        raise fail_shape(
            what,
            f"dl, d and du must have one shape (..., m), got {dl.str_short()}, "
            f"{d.str_short()} and {du.str_short()}",
        )
    if b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
        raise fail_shape(what, f"b must have shape {d.shape} + (n,), got {b.str_short()}")
    check_same_dtype(what, dl, d, du, b)
    if not dtypes.is_inexact(b.dtype):
        raise errors.EmberTypeError(
            f"{what}: expected floating-point or complex operands, got {b.str_short()}"
            f"{errors.where()}"
        )
    return ShapedArray(b.shape, b.dtype)


@in_float32
def _tridiagonal_solve_expression(dl, d, du, b, *, perturb_singular):
    """The Thomas algorithm; dl[0] and du[-1] lie outside the matrix and are not read."""
    m = get_aval(d).shape[-1]
    dtype = get_aval(d).dtype
    dl = where_broadcast(np.arange(m) == 0, 0, dl).astype(dtype)
    du = where_broadcast(np.arange(m) == m - 1, 0, du).astype(dtype)
    if perturb_singular:  # as JAX's portable path: LAPACK's gtsv pivots, the Thomas loop not
        raise NotImplementedError(
            f"tridiagonal_solve: perturb_singular=True needs a platform's own solver (the "
            f"CPU plugin's LAPACK gtsv); the portable algorithm does not pivot{errors.where()}"
        )
    return batched(thomas, dl, d, du, b, core_ndims=(1, 1, 1, 2))


def _tridiagonal_product(dl: Any, d: Any, du: Any, x: Any) -> Any:
    """``T x`` for the tridiagonal T of dl, d, du (dl[0] and du[-1] not read)."""
    m = get_aval(d).shape[-1]
    y = d[..., None] * x
    if m > 1:
        below = dl[..., 1:, None] * x[..., :-1, :]
        above = du[..., :-1, None] * x[..., 1:, :]
        axis = get_aval(x).ndim - 2
        zero_row = full((*get_aval(x).shape[:-2], 1, get_aval(x).shape[-1]), 0, get_aval(x).dtype)
        y = y + concatenate([zero_row, below], axis) + concatenate([above, zero_row], axis)
    return y


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    dl, d, du, b = primals
    *diagonals_dot, b_dot = tangents
    ans = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    if all(type(t) is Zero for t in tangents):
        return ans, Zero(tangent_aval(get_aval(ans)))
    rhs = b_dot
    if not all(type(t) is Zero for t in diagonals_dot):
        product = _tridiagonal_product(*(instantiate(t) for t in diagonals_dot), ans)
        rhs = add_tangents(rhs, -product)
    rhs = instantiate(rhs)
    return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    """Linear in b: the cotangent solves with the transposed matrix, whose sub- and
    superdiagonals are du and dl shifted by one."""
    if any(is_undefined(v) for v in (dl, d, du)):
        raise TypeError("internal error: tridiagonal_solve transposed with respect to T")
    if type(ct) is Zero:
        return [None, None, None, None]
    axis = get_aval(du).ndim - 1
    zero = full((*get_aval(du).shape[:-1], 1), 0, get_aval(du).dtype)
    dl_t = concatenate([zero, du[..., :-1]], axis)
    du_t = concatenate([dl[..., 1:], zero], axis)
    solved = tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)
    return [None, None, None, solved]


tridiagonal_solve_p = rules.define_primitive(
    "tridiagonal_solve",
    abstract_eval=_tridiagonal_solve_abstract_eval,
    jvp=_tridiagonal_solve_jvp,
    transpose=_tridiagonal_solve_transpose,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_tridiagonal_solve_expression, multiple_results=False),
    reference=reference_via(_tridiagonal_solve_expression, multiple_results=False),
    sharding=batch_dims_split((1, 1, 1, 2), lambda **_: 2),
)
