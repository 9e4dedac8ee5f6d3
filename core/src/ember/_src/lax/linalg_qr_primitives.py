"""The QR primitives, named and parametrised as JAX's: ``geqrf`` and ``geqp3`` (packed
Householder QR with LAPACK's reflector signs; geqp3 pivots columns, zero-based),
``householder_product`` (Q from the reflectors) and ``qr``, which binds them, so a platform
that overrides those three gets a fast ``qr``. Generic lowerings are ember's loops
(``linalg_packed_qr``, ``linalg_householder``), reference rules the same loops evaluated with
the reference rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.lax.linalg_factor_primitives import lu_p, triangular_solve_p
from ember._src.lax.linalg_householder import householder_q
from ember._src.lax.linalg_operands import (
    batched,
    conj_transpose,
)
from ember._src.lax.linalg_packed_qr import geqp3_packed, geqrf_packed
from ember._src.lax.linalg_primitive_rules import (
    batch_at_front,
    batch_dims_split,
    check_batch,
    check_matrix,
    check_same_dtype,
    eye_like,
    fail_shape,
    in_float32,
    tril,
    triu,
)
from ember._src.lax.slicing import full
from ember._src.lowering.expressions import lower_via, reference_via
from ember._src.primitives.arithmetic import real
from ember._src.primitives.shape import (
    broadcast_to_shape,
    convert_element_type,
)
from ember._src.primitives.slicing import concatenate

_INT32 = np.dtype(np.int32)


# --------------------------------------------------------------------------------------------
# geqrf, geqp3, householder_product


def _geqrf_abstract_eval(x):
    check_matrix("geqrf", x)
    *batch, m, n = x.shape
    return [ShapedArray(x.shape, x.dtype), ShapedArray((*batch, min(m, n)), x.dtype)]


@in_float32
def _geqrf_expression(x):
    return batched(geqrf_packed, x)


geqrf_p = rules.define_primitive(
    "geqrf",
    abstract_eval=_geqrf_abstract_eval,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_geqrf_expression, multiple_results=True),
    reference=reference_via(_geqrf_expression, multiple_results=True),
    sharding=batch_dims_split((2,), lambda: (2, 1)),
    multiple_results=True,
)


def _geqp3_abstract_eval(x, jpvt):
    what = "geqp3"
    check_matrix(what, x)
    *batch, m, n = x.shape
    if jpvt.dtype != _INT32 or jpvt.shape != (*batch, n):
        raise errors.EmberTypeError(
            f"{what}: jpvt must be int32 of shape {(*batch, n)}, got {jpvt.str_short()}"
            f"{errors.where()}"
        )
    return [
        ShapedArray(x.shape, x.dtype),
        ShapedArray(jpvt.shape, _INT32),
        ShapedArray((*batch, min(m, n)), x.dtype),
    ]


@in_float32
def _geqp3_expression(x, jpvt):
    return batched(geqp3_packed, x, jpvt, core_ndims=(2, 1))


geqp3_p = rules.define_primitive(
    "geqp3",
    abstract_eval=_geqp3_abstract_eval,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_geqp3_expression, multiple_results=True),
    reference=reference_via(_geqp3_expression, multiple_results=True),
    sharding=batch_dims_split((2, 1), lambda: (2, 1, 1)),
    multiple_results=True,
)


def _householder_product_abstract_eval(a, taus):
    what = "householder_product"
    check_matrix(what, a)
    check_same_dtype(what, a, taus)
    check_batch(what, a, taus, 1, "taus")
    m, n = a.shape[-2:]
    if m < n:
        raise fail_shape(what, f"a must have at least as many rows as columns, got {a.str_short()}")
    if taus.shape[-1] > n:
        raise fail_shape(what, f"taus ({taus.str_short()}) has more than {n} reflectors")
    return ShapedArray(a.shape, a.dtype)


@in_float32
def _householder_product_expression(a, taus):
    n = get_aval(a).shape[-1]
    return batched(lambda m, t: householder_q(m, t, n), a, taus, core_ndims=(2, 1))


householder_product_p = rules.define_primitive(
    "householder_product",
    abstract_eval=_householder_product_abstract_eval,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_householder_product_expression, multiple_results=False),
    reference=reference_via(_householder_product_expression, multiple_results=False),
    sharding=batch_dims_split((2, 1), lambda: 2),
)


# --------------------------------------------------------------------------------------------
# qr


def _qr_abstract_eval(x, *, pivoting, full_matrices, use_magma):
    check_matrix("qr", x)
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    outs = [ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype)]
    if pivoting:
        outs.append(ShapedArray((*batch, n), _INT32))
    return outs


def _qr_expression(x, *, pivoting, full_matrices, use_magma):
    """JAX's construction: the packed factorisation, then Q from its reflectors (x padded to
    (m, m) when Q is the full one), R its upper triangle."""
    *batch, m, n = get_aval(x).shape
    dtype = get_aval(x).dtype
    k = m if full_matrices else min(m, n)
    if m == 0 or n == 0:
        q = eye_like(full((*batch, m, n), 0, dtype), m, k)
        outs = [q, full((*batch, k, n), 0, dtype)]
        if pivoting:
            outs.append(broadcast_to_shape(np.arange(n, dtype=np.int32), (*batch, n)))
        return outs
    if pivoting:
        r, p, taus = geqp3_p.bind(x, full((*batch, n), 0, _INT32))
    else:
        r, taus = geqrf_p.bind(x)
    if m < n:
        q = householder_product_p.bind(r[..., :m, :m], taus)
    elif full_matrices and m > n:
        padded = concatenate([r, full((*batch, m, m - n), 0, dtype)], len(batch) + 1)
        q = householder_product_p.bind(padded, taus)
    else:
        q = householder_product_p.bind(r, taus)
        r = r[..., :n, :n]
    r = triu(r)
    return [q, r, p] if pivoting else [q, r]


def _thin_qr_tangent(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """JAX's rule for (m, n) matrices with m >= n (Townsend's derivation)."""
    dx_rinv = triangular_solve_p.bind(
        r,
        dx,
        left_side=False,
        lower=False,
        transpose_a=False,
        conjugate_a=False,
        unit_diagonal=False,
    )
    qt_dx_rinv = conj_transpose(q) @ dx_rinv
    below = tril(qt_dx_rinv, -1)
    skew = below - conj_transpose(below)
    if get_aval(skew).dtype.kind == "c":  # the correction complex inputs need
        n = get_aval(r).shape[-1]
        imaginary = qt_dx_rinv - convert_element_type(real(qt_dx_rinv), get_aval(skew).dtype)
        skew = skew + eye_like(skew, n, n) * imaginary
    dq = q @ (skew - qt_dx_rinv) + dx_rinv
    dr = (qt_dx_rinv - skew) @ r
    return dq, dr


def _solve_adjoint(a: Any, b: Any) -> Any:
    """x with ``a^H x = b`` (one square matrix), through ``lu``: ``a = P^T L U``."""
    lu, _, permutation = lu_p.bind(a)
    solve = dict(left_side=True, transpose_a=True, conjugate_a=True)
    y = triangular_solve_p.bind(lu, b, lower=False, unit_diagonal=False, **solve)
    w = triangular_solve_p.bind(lu, y, lower=True, unit_diagonal=True, **solve)
    return full(get_aval(w).shape, 0, get_aval(w).dtype).at[permutation].set(w)


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    (x,), (dx,) = primals, tangents
    params = dict(pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    q, r, *p = qr_p.bind(x, **params)
    outs = [q, r, *p]
    if type(dx) is Zero:
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    *batch, m, n = get_aval(x).shape
    if pivoting:  # x[..., :, p] = q r
        x, dx = _permute_columns(x, p[0]), _permute_columns(dx, p[0])
    axis = len(batch)
    if m < n:  # X = [X1 X2] = Q [R1 R2]: X1 is a square QR, R2 = Q^H X2
        dq, dr1 = _thin_qr_tangent(q, r[..., :, :m], dx[..., :, :m])
        x2 = (
            x[..., :, m:]
            if not pivoting
            else batched(lambda a, perm: a[:, perm], x, p[0], core_ndims=(2, 1))[..., :, m:]
        )
        dr2 = conj_transpose(dq) @ x2 + conj_transpose(q) @ dx[..., :, m:]
        dr = concatenate([dr1, dr2], axis + 1)
    else:
        q_mn = q[..., :, :n] if full_matrices else q
        r_nn = r[..., :n, :n] if full_matrices else r
        dq, dr = _thin_qr_tangent(q_mn, r_nn, dx)
        if full_matrices and m > n:
            dq, dr = _full_qr_tangent(q, q_mn, dq, dr, n)
    tangents_out = [dq, dr]
    if pivoting:
        tangents_out.append(Zero(tangent_aval(get_aval(p[0]))))
    return outs, tangents_out


def _permute_columns(x: Any, permutation: Any) -> Any:
    return batched(lambda a, p: a[:, p], x, permutation, core_ndims=(2, 1))


def _full_qr_tangent(q: Any, q_mn: Any, dq_mn: Any, dr_nn: Any, n: int) -> tuple[Any, Any]:
    """The tangent of the full Q's last m - n columns (JAX's rule, arXiv:2409.13374, eqs. 32
    and 33) and R's zero rows."""
    batch = get_aval(q).shape[:-2]
    m = get_aval(q).shape[-1]
    q_nn, q_pn, q_mp = q_mn[..., :n, :], q_mn[..., n:, :], q[..., :, n:]
    dq_nn, dq_pn = dq_mn[..., :n, :], dq_mn[..., n:, :]
    shifted = q_nn - eye_like(q_nn, n, n)
    z_pn_h = batched(_solve_adjoint, shifted, conj_transpose(q_pn), core_ndims=(2, 2))
    z_pn = conj_transpose(z_pn_h)
    dq_mp = dq_mn @ z_pn_h - (q_mn + q_mp @ z_pn) @ conj_transpose(dq_pn - z_pn @ dq_nn)
    dq = concatenate([dq_mn, dq_mp], len(batch) + 1)
    zeros = full((*batch, m - n, n), 0, get_aval(dr_nn).dtype)
    return dq, concatenate([dr_nn, zeros], len(batch))


def _qr_out_cores(*, pivoting, full_matrices, use_magma):
    return (2, 2, 1) if pivoting else (2, 2)


qr_p = rules.define_primitive(
    "qr",
    abstract_eval=_qr_abstract_eval,
    jvp=_qr_jvp,
    batch=rules.per_primitive(batch_at_front),
    lowering=lower_via(_qr_expression, multiple_results=True),
    reference=reference_via(_qr_expression, multiple_results=True),
    sharding=batch_dims_split((2,), _qr_out_cores),
    multiple_results=True,
)
