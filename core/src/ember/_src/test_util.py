"""``check_grads``: numerical checks of jvp and vjp against finite differences.

Forward mode is checked directly: ``jvp(f, x, t)`` against the central difference
``(f(x + eps t) - f(x - eps t)) / 2 eps`` along a random direction ``t``. Reverse mode is
checked against forward mode by the adjoint identity ``<vjp(ct), t> == <ct, jvp(t)>`` for a
random cotangent ``ct`` (against the central difference where ``f`` has no forward mode: a
``custom_vjp`` function). Higher orders repeat both checks on the derivative functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.transforms.autodiff import jvp, vjp
from ember._src.tree.util import tree_flatten, tree_map, tree_unflatten

_DEFAULT_EPS = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-5}
_DEFAULT_TOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5}


def _tolerance(leaves: Sequence[Any], table: dict, given: float | None) -> float:
    if given is not None:
        return given
    worst = max((table.get(np.dtype(_real(get_aval(x).dtype)), 1e-1) for x in leaves), default=1e-5)
    return worst


def _real(dtype: np.dtype) -> np.dtype:
    return (
        np.dtype(np.float32)
        if dtype == np.complex64
        else (np.dtype(np.float64) if dtype == np.complex128 else dtype)
    )


def _random_like(rng: np.random.Generator, x: Any) -> np.ndarray:
    aval = get_aval(x)
    values = rng.standard_normal(aval.shape)
    if aval.dtype.kind == "c":
        values = values + 1j * rng.standard_normal(aval.shape)
    return np.asarray(values, aval.dtype)


def _inner(xs: Sequence[Any], ys: Sequence[Any]) -> complex:
    # Bilinear, not sesquilinear: transposition does not conjugate (JAX's convention).
    return complex(
        sum(
            np.sum(np.asarray(x, np.complex128) * np.asarray(y, np.complex128))
            for x, y in zip(xs, ys)
        )
    )


def _assert_close(what: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    got_leaves, want_leaves = tree_flatten(got)[0], tree_flatten(want)[0]
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        g, w = np.asarray(g, np.complex128), np.asarray(w, np.complex128)
        if not np.allclose(g, w, atol=atol, rtol=rtol):
            worst = np.max(np.abs(g - w))
            raise AssertionError(
                f"check_grads: {what} differs at output leaf #{i} (max abs error {worst:.3g}, "
                f"atol={atol:g}, rtol={rtol:g})\n  got:      {g}\n  expected: {w}"
            )


def check_jvp(f, args, *, atol=None, rtol=None, eps=None, rng=None) -> None:
    rng = rng or np.random.default_rng(0)
    leaves, tree = tree_flatten(tuple(args))
    eps = _tolerance(leaves, _DEFAULT_EPS, eps)
    atol = _tolerance(leaves, _DEFAULT_TOL, atol)
    rtol = _tolerance(leaves, _DEFAULT_TOL, rtol)
    tangents = [_random_like(rng, x) for x in leaves]
    _, out_tangent = jvp(f, tuple(args), tuple(tree_unflatten(tree, tangents)))
    numeric = _numerical_jvp(f, leaves, tree, tangents, eps)
    _assert_close("jvp vs finite differences", out_tangent, numeric, atol, rtol)


def _numerical_jvp(f, leaves, tree, tangents, eps: float) -> Any:
    """The central difference ``(f(x + eps t) - f(x - eps t)) / 2 eps``, in complex128."""

    def shifted(sign: float) -> Any:
        moved = [
            np.asarray(np.asarray(x) + sign * eps * t, get_aval(x).dtype)
            for x, t in zip(leaves, tangents)
        ]
        return f(*tree_unflatten(tree, moved))

    plus, minus = shifted(1.0), shifted(-1.0)
    return tree_map(
        lambda p, m: (np.asarray(p, np.complex128) - np.asarray(m, np.complex128)) / (2 * eps),
        plus,
        minus,
    )


def check_vjp(f, args, *, atol=None, rtol=None, eps=None, rng=None) -> None:
    rng = rng or np.random.default_rng(1)
    leaves, tree = tree_flatten(tuple(args))
    atol = _tolerance(leaves, _DEFAULT_TOL, atol)
    rtol = _tolerance(leaves, _DEFAULT_TOL, rtol)
    out, pullback = vjp(f, *args)
    out_leaves, out_tree = tree_flatten(out)
    cotangent = [_random_like(rng, y) for y in out_leaves]
    in_cts = tree_flatten(pullback(tree_unflatten(out_tree, cotangent)))[0]
    tangents = [_random_like(rng, x) for x in leaves]
    try:
        _, out_tangent = jvp(f, tuple(args), tuple(tree_unflatten(tree, tangents)))
    except errors.LoweringError:
        # f has no forward mode (a custom_vjp function defines only a reverse rule): compare
        # with finite differences instead, as JAX's check_vjp always does.
        eps = _tolerance(leaves, _DEFAULT_EPS, eps)
        out_tangent = _numerical_jvp(f, leaves, tree, tangents, eps)
    lhs = _inner(in_cts, tangents)
    rhs = _inner(cotangent, tree_flatten(out_tangent)[0])
    # Transposition does not conjugate (JAX's convention), so for maps that are only
    # real-linear (real, imag, conj, complex outputs of real inputs) the identity holds for
    # the real part of the bilinear pairing; for complex-linear maps it holds in full.
    lhs, rhs = lhs.real, rhs.real
    scale = max(abs(lhs), abs(rhs), 1.0)
    if abs(lhs - rhs) > atol + rtol * scale:
        raise AssertionError(
            f"check_grads: vjp disagrees with jvp: <vjp(ct), t> = {lhs:.6g} but "
            f"<ct, jvp(t)> = {rhs:.6g} (atol={atol:g}, rtol={rtol:g})"
        )


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
) -> None:
    """Check ``f``'s derivatives up to ``order`` numerically; raise AssertionError if wrong.

    ``modes``: ``"fwd"`` checks jvp against finite differences, ``"rev"`` checks vjp against
    jvp. Tolerances default by dtype (looser for float32 than float64).
    """
    args = tuple(args)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; use 'fwd' and/or 'rev'")
    for leaf in tree_flatten(args)[0]:
        if not dtypes.is_inexact(get_aval(leaf).dtype):
            raise TypeError(f"check_grads needs floating-point arguments, got {get_aval(leaf)}")
    tol = {"atol": atol, "rtol": rtol}
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, **tol)
    if "rev" in modes:
        check_vjp(f, args, eps=eps, **tol)
    if order > 1:
        rng = np.random.default_rng(order)
        if "fwd" in modes:
            tangents = tuple(tree_map(lambda x: _random_like(rng, x), args))
            check_grads(
                lambda *xs: jvp(f, xs, tangents)[1], args, order - 1, ("fwd",), **tol, eps=eps
            )
        if "rev" in modes:
            out = f(*args)
            cts = tree_map(lambda y: _random_like(rng, y), out)
            check_grads(lambda *xs: vjp(f, *xs)[1](cts), args, order - 1, ("rev",), **tol, eps=eps)
