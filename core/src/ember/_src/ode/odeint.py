"""``odeint``: adaptive Dormand-Prince integration of ``dy/dt = func(y, t, *args)``, as
``jax.experimental.ode.odeint``, differentiable in reverse mode by the adjoint method.

The forward pass steps a flat state (flat_state.py) from ``t[0]`` with the Dormand-Prince
pieces of dopri.py: a ``while_loop`` per output time takes steps until it passes that time,
and the step's quartic interpolant gives the value there. The reverse pass (``custom_vjp``)
does not differentiate through the loop: it integrates the adjoint system backwards between
consecutive output times (Chen et al., "Neural Ordinary Differential Equations", 2018,
appendix C), with this same ``odeint``, so its memory does not grow with the number of steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval, is_arraylike
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.contractions import dot
from ember._src.numpy.nonzero import where
from ember._src.numpy.polynomials import polyval
from ember._src.numpy.ufunc import maximum, minimum
from ember._src.ode import dopri
from ember._src.ode.flat_state import ravel
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.control_flow.scan import scan
from ember._src.transforms.autodiff import vjp
from ember._src.transforms.custom_derivatives import custom_vjp
from ember._src.transforms.custom_gradient import closure_convert
from ember._src.transforms.jit import jit
from ember._src.tree.util import tree_leaves, tree_map

_ORDER = 4  # of the embedded solution, which sets the initial step's error


def odeint(
    func: Callable[..., Any],
    y0: Any,
    t: Any,
    *args: Any,
    rtol: float = 1.4e-8,
    atol: float = 1.4e-8,
    mxstep: float = np.inf,
    hmax: float = np.inf,
) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; ``y`` at every time in ``t``.

    Args:
      func: the time derivative, ``func(y, t, *args)``, of ``y``'s structure and shapes.
      y0: the initial state, an array or a pytree of arrays.
      t: the output times, a 1-d float array, strictly increasing (not checked: a traced
        ``t`` could not be).
      *args: extra arguments of ``func``: arrays, scalars or pytrees of them (differentiable).
      rtol, atol: the relative and absolute local error tolerances of a step.
      mxstep: the most steps (accepted or rejected) taken to reach each output time; past
        it the output is extrapolated from the last step.
      hmax: the largest step.

    Returns:
      ``y0``'s structure, each leaf with a new leading axis of length ``len(t)``.
    """
    for arg in tree_leaves(args):
        if not is_arraylike(arg):
            raise TypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {arg!r}"
                f"{errors.where()}"
            )
    t = creation.asarray(t)
    if not dtypes.is_float(get_aval(t).dtype):
        raise TypeError(f"t must be an array of floats, but got {t}{errors.where()}")
    if get_aval(t).ndim != 1:
        raise ValueError(f"odeint: t must be 1-d, got shape {get_aval(t).shape}{errors.where()}")
    # Values func closes over that carry derivatives become explicit arguments, so the
    # adjoint pass sees them (custom_vjp rejects closed-over differentiated values).
    converted, hoisted = closure_convert(func, y0, t[0], *args)
    if not hoisted and _hashable(func):
        # Nothing to hoist: func itself computes the same, and as the compiled program's key
        # it is the same object on every call, so repeated eager calls compile once.
        converted = func
    return _odeint_pytree(converted, rtol, atol, mxstep, hmax, y0, t, *args, *hoisted)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@jit(static_argnums=(0, 1, 2, 3, 4))
def _odeint_pytree(func: Callable, rtol, atol, mxstep, hmax, y0: Any, ts: Any, *args: Any):
    y0_flat, unravel = ravel(y0)
    state_dtype = get_aval(y0_flat).dtype

    def flat_func(y, t, *args):
        return ravel(func(unravel(y), t, *args))[0].astype(state_dtype)

    return unravel(_odeint(flat_func, rtol, atol, mxstep, hmax, y0_flat, ts, *args))


def _integrate(func: Callable, rtol, atol, mxstep, hmax, y0: Any, ts: Any, *args: Any) -> Any:
    """The solution, shape ``(len(ts), y0.size)``, by adaptive steps (no custom derivative)."""
    time_dtype = get_aval(ts).dtype

    def fun(y, t):
        return func(y, t, *args)

    def next_step(dt, error_ratio):
        dt = dopri.optimal_step_size(dt, error_ratio).astype(time_dtype)
        return minimum(maximum(dt, 0.0), hmax)

    def to_output_time(carry, target_t):
        def unfinished(state):
            steps, _, _, t, dt, _, _ = state
            going = (t < target_t) & (dt > 0)  # a zero step would never get there
            return going if math.isinf(mxstep) else going & (steps < mxstep)

        def step(state):
            steps, y, f, t, dt, last_t, interp = state
            next_y, next_f, error, stages = dopri.runge_kutta_step(fun, y, f, t, dt)
            error_ratio = dopri.mean_error_ratio(error, rtol, atol, y, next_y)
            accepted = error_ratio <= 1.0
            new_dt = next_step(dt, error_ratio)  # smaller after a rejection, to retry
            new = [next_y, next_f, t + dt, t, dopri.interp_fit_dopri(y, next_y, stages, dt)]
            old = [y, f, t, last_t, interp]
            y, f, t, last_t, interp = [where(accepted, a, b) for a, b in zip(new, old)]
            return steps + 1, y, f, t, new_dt, last_t, interp

        _, *carry = while_loop(unfinished, step, (0, *carry))
        _, _, t, _, last_t, interp = carry
        # The last accepted step spans [last_t, t] and passes target_t (unless mxstep ran out).
        relative_time = (target_t - last_t) / (t - last_t)
        return carry, polyval(interp, relative_time.astype(get_aval(interp).dtype))

    t0 = ts[0]
    f0 = fun(y0, t0)
    dt = dopri.initial_step_size(fun, t0, y0, _ORDER, rtol, atol, f0).astype(time_dtype)
    dt = minimum(maximum(dt, 0.0), hmax)
    interp = manipulation.stack([y0] * 5)  # constant until the first step is accepted
    _, ys = scan(to_output_time, [y0, f0, t0, dt, t0, interp], ts[1:])
    return manipulation.concatenate([y0[None], ys])


_odeint = custom_vjp(_integrate, nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, residuals, g):
    """The adjoint method: from the last output time back to the first, integrate the state
    backwards together with its cotangent ``y_bar`` (``d y_bar/dt = -y_bar . df/dy``), the
    cotangent of ``t[0]`` and of ``args`` (accumulating ``y_bar . df/dt`` and
    ``y_bar . df/dargs``), adding each output's cotangent when passing its time."""
    ys, ts, args = residuals
    time_dtype = get_aval(ts).dtype

    def augmented_dynamics(state, minus_t, *args):
        # Backwards in t is forwards in -t, which odeint needs (increasing times).
        y, y_bar, _, _ = state
        y_dot, pullback = vjp(func, y, -minus_t, *args)
        y_bar_dot, t_bar_dot, *args_bar_dot = pullback(y_bar)
        return -y_dot, y_bar_dot, t_bar_dot, tuple(args_bar_dot)

    def to_previous_time(carry, i):
        y_bar, t0_bar, args_bar = carry
        # Moving the output time t[i] moves y(t[i]) along f.
        t_bar = enp.real(dot(func(ys[i], ts[i], *args), g[i])).astype(time_dtype)
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            augmented_dynamics,
            (ys[i], y_bar, t0_bar, args_bar),
            manipulation.stack([-ts[i], -ts[i - 1]]),
            *args,
            rtol=rtol,
            atol=atol,
            mxstep=mxstep,
            hmax=hmax,
        )
        y_bar, t0_bar, args_bar = tree_map(lambda x: x[1], (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], creation.zeros((), time_dtype), tuple(tree_map(creation.zeros_like, args)))
    steps_back = creation.arange(get_aval(ts).shape[0] - 1, 0, -1)
    (y_bar, t0_bar, args_bar), ts_bar_reversed = scan(to_previous_time, init, steps_back)
    ts_bar = manipulation.concatenate([t0_bar[None], ts_bar_reversed[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)
