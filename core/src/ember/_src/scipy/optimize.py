"""``ember.scipy.optimize.minimize``: BFGS with a strong-Wolfe line search, as
``jax.scipy.optimize``.

Everything is a ``while_loop`` over arrays, so ``minimize`` runs under ``jit`` and ``vmap``.
The line search is the bracketing-then-zoom search of Nocedal and Wright (Algorithms 3.5 and
3.6) with safeguarded quadratic interpolation. Status codes: 0 converged, 1 out of
iterations, 2 + the line search's status when it fails (1: no step satisfying the Wolfe
conditions within its iteration budget, 2: not a descent direction).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, linalg as nla
from ember._src.numpy.contractions import matmul, vdot
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


def _line_search(fun_and_grad, x, p, f0, g0, maxiter: int):
    """(step, f, g, function evaluations, status) along the direction ``p`` from ``x``."""
    dtype = get_aval(x).dtype
    d0 = vdot(g0, p)
    zero = _scalar(0, dtype)

    def evaluate(a):
        f, g = fun_and_grad(x + a * p)
        return f, g, vdot(g, p)

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


_BFGS_OPTIONS = ("maxiter", "norm", "gtol", "line_search_maxiter")


def minimize(
    fun: Callable,
    x0: Any,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> OptimizeResults:
    """Minimise ``fun(x, *args)`` over a 1-d ``x`` from ``x0``. ``method`` is 'BFGS'; options
    are ``maxiter`` (default 200 * x0.size), ``norm`` (of the gradient, default inf),
    ``gtol`` (default 1e-5) and ``line_search_maxiter`` (default 10). ``tol`` is accepted and
    unused, as in JAX."""
    del tol
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple, got {type(args).__name__}")
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise ValueError(f"minimize: method {method!r} not recognized (use 'BFGS')")
    options = dict(options or {})
    unknown = sorted(set(options) - set(_BFGS_OPTIONS))
    if unknown:
        raise errors.EmberTypeError(f"minimize: unknown BFGS options {unknown}{errors.where()}")
    x0 = creation.asarray(x0)
    aval = get_aval(x0)
    if aval.ndim != 1:
        raise ValueError(f"minimize: x0 must be 1-dimensional, got shape {aval.shape}")
    if not dtypes.is_inexact(aval.dtype):
        x0 = x0.astype(dtypes.default_float())
    s = _bfgs(
        lambda x: fun(x, *args),
        x0,
        options.get("maxiter"),
        options.get("norm", np.inf),
        options.get("gtol", 1e-5),
        int(options.get("line_search_maxiter", 10)),
    )
    return OptimizeResults(
        x=s.x,
        success=s.converged & enp.logical_not(s.failed),
        status=s.status,
        fun=s.f,
        jac=s.g,
        hess_inv=s.h,
        nfev=s.nfev,
        njev=s.ngev,
        nit=s.k,
    )
