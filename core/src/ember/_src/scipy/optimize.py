"""``ember.scipy.optimize.minimize``: BFGS and L-BFGS with a strong-Wolfe line search, as
``jax.scipy.optimize``.

Everything is a ``while_loop`` over arrays, so ``minimize`` runs under ``jit`` and ``vmap``.
The line search is the bracketing-then-zoom search of Nocedal and Wright (Algorithms 3.5 and
3.6) with safeguarded quadratic interpolation. Status codes: 0 converged, 1 out of
iterations, 2 + the line search's status when it fails (1: no step satisfying the Wolfe
conditions within its iteration budget, 2: not a descent direction).

L-BFGS (JAX's method name 'l-bfgs-experimental-do-not-rely-on-this') keeps the last ``maxcor``
step/gradient-change pairs instead of a dense inverse Hessian and uses JAX's status codes:
0 converged, 1 out of iterations, 2 out of function evaluations, 3 out of gradient evaluations,
4 insufficient progress (the decrease fell below ``ftol``), 5 the line search failed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, linalg as nla, manipulation
from ember._src.numpy.contractions import dot, matmul, vdot
from ember._src.numpy.nonzero import where
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.transforms.autodiff import value_and_grad

_C1, _C2 = 1e-4, 0.9  # sufficient decrease and curvature constants of the Wolfe conditions


class OptimizeResults(NamedTuple):
    """What ``minimize`` returns (``hess_inv`` is None for L-BFGS)."""

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


class _Search(NamedTuple):
    """Line-search state: the last step tried (prev), the bracket (lo, hi) once found."""

    i: Any
    zooming: Any
    done: Any
    a_prev: Any
    f_prev: Any
    d_prev: Any
    a_lo: Any
    f_lo: Any
    d_lo: Any
    a_hi: Any
    f_hi: Any
    d_hi: Any
    a: Any
    f: Any
    g: Any
    nfev: Any


def _scalar(value: Any, dtype: Any) -> Any:
    return np.asarray(value, dtype)


def _interpolate(s: _Search, dtype: Any) -> Any:
    """A trial step inside the bracket: the quadratic through f_lo, d_lo and f_hi where it lies
    well inside, else the midpoint."""
    width = s.a_hi - s.a_lo
    denominator = 2 * (s.f_hi - s.f_lo - s.d_lo * width)
    safe = where(enp.equal(denominator, 0), _scalar(1, dtype), denominator)
    quadratic = s.a_lo - s.d_lo * width * width / safe
    low = enp.minimum(s.a_lo, s.a_hi) + 0.1 * enp.abs(width)
    high = enp.maximum(s.a_lo, s.a_hi) - 0.1 * enp.abs(width)
    inside = (denominator > 0) & (quadratic >= low) & (quadratic <= high)
    return where(inside, quadratic, s.a_lo + width / 2)


def _slope(g: Any, p: Any) -> Any:
    """The derivative of the objective along ``p``, given its gradient ``g`` as ``grad`` returns
    it (for complex x the conjugate of the steepest-ascent direction, hence no conjugation)."""
    return enp.real(dot(g, p))


def _inner(a: Any, b: Any) -> Any:
    """The real inner product of two points of x's space (complex x as pairs of reals)."""
    return enp.real(dot(enp.conjugate(a), b))


def _line_search(fun_and_grad, x, p, f0, g0, maxiter: int):
    """(step, f, g, function evaluations, status) along the direction ``p`` from ``x``."""
    dtype = dtypes.real_dtype(get_aval(x).dtype)  # the step is real even when x is complex
    d0 = _slope(g0, p)
    zero = _scalar(0, dtype)

    def evaluate(a):
        f, g = fun_and_grad(x + a * p)
        return f, g, _slope(g, p)

    def searching(s: _Search):
        return enp.logical_not(s.done) & (s.i < maxiter)

    def step(s: _Search) -> _Search:
        a = where(
            s.zooming, _interpolate(s, dtype), where(s.i == 0, _scalar(1, dtype), 2 * s.a_prev)
        )
        f, g, d = evaluate(a)
        armijo_fails = f > f0 + _C1 * a * d0
        curvature_holds = enp.abs(d) <= -_C2 * d0
        # bracketing phase (Algorithm 3.5)
        upper = armijo_fails | ((s.i > 0) & (f >= s.f_prev))
        turned = enp.logical_not(upper) & enp.logical_not(curvature_holds) & (d >= 0)
        found = enp.logical_not(upper) & curvature_holds
        # zoom phase (Algorithm 3.6)
        shrink = armijo_fails | (f >= s.f_lo)
        z_found = enp.logical_not(shrink) & curvature_holds
        flip = enp.logical_not(shrink) & enp.logical_not(curvature_holds)
        flip = flip & (d * (s.a_hi - s.a_lo) >= 0)
        move_lo = enp.logical_not(shrink) & enp.logical_not(curvature_holds)

        def pick(bracket_value, zoom_value):
            return where(s.zooming, zoom_value, bracket_value)

        # the new bracket (lo, hi), as each phase would set it
        lo_a = pick(where(upper, s.a_prev, a), where(move_lo, a, s.a_lo))
        lo_f = pick(where(upper, s.f_prev, f), where(move_lo, f, s.f_lo))
        lo_d = pick(where(upper, s.d_prev, d), where(move_lo, d, s.d_lo))
        hi_a = pick(where(upper, a, s.a_prev), where(shrink, a, where(flip, s.a_lo, s.a_hi)))
        hi_f = pick(where(upper, f, s.f_prev), where(shrink, f, where(flip, s.f_lo, s.f_hi)))
        hi_d = pick(where(upper, d, s.d_prev), where(shrink, d, where(flip, s.d_lo, s.d_hi)))
        done = pick(found, z_found)
        return _Search(
            i=s.i + 1,
            zooming=s.zooming | upper | turned,
            done=done,
            a_prev=a,
            f_prev=f,
            d_prev=d,
            a_lo=lo_a,
            f_lo=lo_f,
            d_lo=lo_d,
            a_hi=hi_a,
            f_hi=hi_f,
            d_hi=hi_d,
            a=where(done, a, s.a),
            f=where(done, f, s.f),
            g=where(done, g, s.g),
            nfev=s.nfev + 1,
        )

    start = _Search(
        i=np.int32(0),
        zooming=np.bool_(False),
        done=np.bool_(False),
        a_prev=zero,
        f_prev=f0,
        d_prev=d0,
        a_lo=zero,
        f_lo=f0,
        d_lo=d0,
        a_hi=zero,
        f_hi=f0,
        d_hi=d0,
        a=zero,
        f=f0,
        g=g0,
        nfev=np.int32(0),
    )
    descent = d0 < 0
    # a direction that does not descend is not searched at all
    start = start._replace(done=enp.logical_not(descent))
    s = while_loop(searching, step, start)
    status = where(descent, where(s.done, 0, 1), 2).astype(np.int32)
    return s.a, s.f, s.g, s.nfev, status


class _State(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x: Any
    f: Any
    g: Any
    h: Any
    status: Any


def _norm(g: Any, ord: Any) -> Any:
    return nla.norm(g, ord=ord)


def _bfgs(fun, x0, maxiter, norm, gtol, line_search_maxiter) -> _State:
    fun_and_grad = value_and_grad(fun)
    dtype = get_aval(x0).dtype
    n = get_aval(x0).shape[0]
    maxiter = n * 200 if maxiter is None else int(maxiter)
    f0, g0 = fun_and_grad(x0)
    eye = creation.eye(n, dtype=dtype)
    start = _State(
        converged=_norm(g0, norm) < gtol,
        failed=np.bool_(False),
        k=np.int32(0),
        nfev=np.int32(1),
        ngev=np.int32(1),
        x=x0,
        f=f0,
        g=g0,
        h=eye,
        status=np.int32(0),
    )

    def running(s: _State):
        return enp.logical_not(s.converged) & enp.logical_not(s.failed) & (s.k < maxiter)

    def iterate(s: _State) -> _State:
        p = -matmul(s.h, s.g)
        a, f, g, evaluations, search_status = _line_search(
            fun_and_grad, s.x, p, s.f, s.g, line_search_maxiter
        )
        failed = search_status != 0
        step = a * p
        y = g - s.g
        curvature = vdot(y, step)
        rho = 1 / where(enp.equal(curvature, 0), _scalar(1, dtype), curvature)
        left = eye - rho * step[:, None] * y[None, :]
        updated = matmul(matmul(left, s.h), left.T) + rho * step[:, None] * step[None, :]
        # a step without positive curvature would make the inverse Hessian indefinite
        h = where(curvature > 0, updated, s.h)
        x = where(failed, s.x, s.x + step)
        return _State(
            converged=_norm(g, norm) < gtol,
            failed=failed,
            k=s.k + 1,
            nfev=s.nfev + evaluations,
            ngev=s.ngev + evaluations,
            x=x,
            f=where(failed, s.f, f),
            g=where(failed, s.g, g),
            h=where(failed, s.h, h),
            status=where(failed, 2 + search_status, 0).astype(np.int32),
        )

    s = while_loop(running, iterate, start)
    status = where(s.converged, 0, where(s.failed, s.status, where(s.k >= maxiter, 1, -1)))
    return s._replace(status=status.astype(np.int32))


class _LbfgsState(NamedTuple):
    """L-BFGS state; the histories hold the newest pair last (zeros before they fill)."""

    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x: Any
    f: Any
    g: Any
    s_history: Any
    y_history: Any
    rho_history: Any
    gamma: Any
    status: Any


def _two_loop_recursion(s: _LbfgsState, maxcor: int) -> Any:
    """The search direction -H g, H the L-BFGS inverse Hessian (Nocedal and Wright, Algorithm
    7.4; for complex x, Sorber, Van Barel and De Lathauwer 2012, as JAX). Unfilled history
    slots are zeros and contribute nothing, so the loops are static."""
    q = -enp.conjugate(s.g)
    alphas = [None] * maxcor
    for i in reversed(range(maxcor)):  # newest to oldest
        alphas[i] = s.rho_history[i] * _inner(s.s_history[i], q)
        q = q - alphas[i] * enp.conjugate(s.y_history[i])
    q = s.gamma * q
    for i in range(maxcor):  # oldest to newest
        beta = s.rho_history[i] * enp.real(dot(s.y_history[i], q))
        q = q + (alphas[i] - beta) * s.s_history[i]
    return q


def _push(history: Any, new: Any) -> Any:
    """Drop the oldest entry (first) and append ``new`` as the newest (last)."""
    return manipulation.concatenate([history[1:], new[None]], axis=0)


def _lbfgs(fun, x0, maxiter, norm, maxcor, ftol, gtol, maxfun, maxgrad, maxls) -> _LbfgsState:
    fun_and_grad = value_and_grad(fun)
    dtype = get_aval(x0).dtype
    real = dtypes.real_dtype(dtype)  # of the curvature pairs' scalars
    n = get_aval(x0).shape[0]
    # as in JAX: with no limit given, the iterations are limited to 200 per variable
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = 200 * n
    maxiter, maxfun, maxgrad = (np.inf if v is None else v for v in (maxiter, maxfun, maxgrad))
    f0, g0 = fun_and_grad(x0)
    start = _LbfgsState(
        converged=_norm(g0, norm) < gtol,
        failed=np.bool_(False),
        k=np.int32(0),
        nfev=np.int32(1),
        ngev=np.int32(1),
        x=x0,
        f=f0,
        g=g0,
        s_history=creation.zeros((maxcor, n), dtype),
        y_history=creation.zeros((maxcor, n), dtype),
        rho_history=creation.zeros((maxcor,), real),
        gamma=_scalar(1, real),
        status=np.int32(0),
    )

    def running(s: _LbfgsState):
        return enp.logical_not(s.converged) & enp.logical_not(s.failed)

    def iterate(s: _LbfgsState) -> _LbfgsState:
        p = _two_loop_recursion(s, maxcor)
        a, f, g, evaluations, search_status = _line_search(fun_and_grad, s.x, p, s.f, s.g, maxls)
        search_failed = search_status != 0
        step = a * p
        y = g - s.g
        curvature = _slope(y, step)
        # a pair without positive curvature would make the inverse Hessian indefinite: skip it
        keep = (curvature > 0) & enp.logical_not(search_failed)
        safe_curvature = where(keep, curvature, _scalar(1, real))
        k, nfev, ngev = s.k + 1, s.nfev + evaluations, s.ngev + evaluations
        converged = enp.logical_not(search_failed) & (_norm(g, norm) < gtol)
        status = where(s.f - f < ftol, 4, 0)
        status = where(ngev >= maxgrad, 3, status)
        status = where(nfev >= maxfun, 2, status)
        status = where(k >= maxiter, 1, status)
        status = where(search_failed, 5, status)
        status = where(converged, 0, status).astype(np.int32)
        return _LbfgsState(
            converged=converged,
            failed=status > 0,
            k=k,
            nfev=nfev,
            ngev=ngev,
            x=where(search_failed, s.x, s.x + step),
            f=where(search_failed, s.f, f),
            g=where(search_failed, s.g, g),
            s_history=where(keep, _push(s.s_history, step), s.s_history),
            y_history=where(keep, _push(s.y_history, y), s.y_history),
            rho_history=where(keep, _push(s.rho_history, 1 / safe_curvature), s.rho_history),
            gamma=where(keep, safe_curvature / _inner(y, y), s.gamma),
            status=status,
        )

    return while_loop(running, iterate, start)


_BFGS_OPTIONS = ("maxiter", "norm", "gtol", "line_search_maxiter")
_LBFGS_METHOD = "l-bfgs-experimental-do-not-rely-on-this"
_LBFGS_OPTIONS = ("maxiter", "norm", "maxcor", "ftol", "gtol", "maxfun", "maxgrad", "maxls")


def _checked_options(method: str, options: Mapping[str, Any] | None, known: tuple) -> dict:
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise errors.EmberTypeError(
            f"minimize: unknown {method} options {unknown} (known: {list(known)}){errors.where()}"
        )
    return options


def minimize(
    fun: Callable,
    x0: Any,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> OptimizeResults:
    """Minimise ``fun(x, *args)`` over a 1-d ``x`` from ``x0``.

    ``method`` 'BFGS' takes the options ``maxiter`` (default 200 * x0.size), ``norm`` (of the
    gradient, default inf), ``gtol`` (default 1e-5) and ``line_search_maxiter`` (default 10).
    ``method`` 'l-bfgs-experimental-do-not-rely-on-this' (JAX's name) takes ``maxiter``,
    ``norm``, ``maxcor`` (stored pairs, default 10), ``ftol`` (least decrease per step, default
    2.22e-9), ``gtol``, ``maxfun`` and ``maxgrad`` (evaluation budgets; with none of maxiter,
    maxfun, maxgrad given, maxiter is 200 * x0.size) and ``maxls`` (line-search steps, default
    20); its ``hess_inv`` is None. ``tol`` is accepted and unused, as in JAX."""
    del tol
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple, got {type(args).__name__}")
    name = method.lower() if isinstance(method, str) else None
    if name not in ("bfgs", _LBFGS_METHOD):
        raise ValueError(
            f"minimize: method {method!r} not recognized (use 'BFGS' or {_LBFGS_METHOD!r})"
        )
    known = _BFGS_OPTIONS if name == "bfgs" else _LBFGS_OPTIONS
    options = _checked_options(method, options, known)
    x0 = creation.asarray(x0)
    aval = get_aval(x0)
    if aval.ndim != 1:
        raise ValueError(f"minimize: x0 must be 1-dimensional, got shape {aval.shape}")
    if not dtypes.is_inexact(aval.dtype):
        x0 = x0.astype(dtypes.default_float())
    objective = lambda x: fun(x, *args)
    if name == _LBFGS_METHOD:
        maxcor = int(options.get("maxcor", 10))
        if maxcor < 1:
            raise ValueError(f"minimize: maxcor must be at least 1, got {maxcor}")
        s = _lbfgs(
            objective,
            x0,
            options.get("maxiter"),
            options.get("norm", np.inf),
            maxcor,
            options.get("ftol", 2.220446049250313e-09),
            options.get("gtol", 1e-5),
            options.get("maxfun"),
            options.get("maxgrad"),
            int(options.get("maxls", 20)),
        )
        hess_inv = None
    else:
        s = _bfgs(
            objective,
            x0,
            options.get("maxiter"),
            options.get("norm", np.inf),
            options.get("gtol", 1e-5),
            int(options.get("line_search_maxiter", 10)),
        )
        hess_inv = s.h
    return OptimizeResults(
        x=s.x,
        success=s.converged & enp.logical_not(s.failed),
        status=s.status,
        fun=s.f,
        jac=s.g,
        hess_inv=hess_inv,
        nfev=s.nfev,
        njev=s.ngev,
        nit=s.k,
    )
