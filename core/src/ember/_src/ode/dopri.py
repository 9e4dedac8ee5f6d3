"""The Dormand-Prince 5(4) pieces of an adaptive Runge-Kutta integrator, on flat states.

One step (``runge_kutta_step``) gives the fifth-order solution, its error estimate (the
difference to the embedded fourth-order one) and the seven stage derivatives; the error is
measured against the tolerances (``mean_error_ratio``); the controller picks the next step
from it (``optimal_step_size``); the stages give a quartic through the step
(``interp_fit_dopri``), so outputs between steps cost no extra evaluations; and
``initial_step_size`` guesses the first step (Hairer, Norsett and Wanner, *Solving Ordinary
Differential Equations I*, sec. II.4). Dormand and Prince, "A family of embedded Runge-Kutta
formulae", 1980; the midpoint weights of the dense output are Shampine's (1986).

``fun(y, t)`` is the right-hand side on a 1-d state ``y``; ``dt`` is a scalar array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._src.core import get_aval
from ember._src.lax.numeric import Precision
from ember._src.numpy import creation, elementwise as enp, linalg, manipulation, reductions
from ember._src.numpy.contractions import dot
from ember._src.numpy.nonzero import where
from ember._src.numpy.ufunc import maximum, minimum
from ember._src.primitives.control_flow.loops import fori_loop

# The nodes (c), the stage weights (a, one row per stage after the first), the fifth-order
# solution weights (b) and b minus the embedded fourth-order weights (the error estimate).
# The last stage is evaluated at the new solution (b equals a's last row), so it is the next
# step's first derivative: "first same as last".
_NODES = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0, 0.0]
_STAGE_WEIGHTS = [
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
]
_SOLUTION_WEIGHTS = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_ERROR_WEIGHTS = [
    35 / 384 - 1951 / 21600,
    0,
    500 / 1113 - 22642 / 50085,
    125 / 192 - 451 / 720,
    -2187 / 6784 - -12231 / 42400,
    11 / 84 - 649 / 6300,
    -1.0 / 60.0,
]
# Weights of the stages for the solution at the middle of the step (halved: the step is dt).
_MIDPOINT_WEIGHTS = [
    6025192743 / 30085553152 / 2,
    0,
    51252292925 / 65400821598 / 2,
    -2691868925 / 45128329728 / 2,
    187940372067 / 1594534317056 / 2,
    -1776094331 / 19743644256 / 2,
    11237099 / 235043384 / 2,
]


def _combine(weights: Any, stages: Any) -> Any:
    """``weights @ stages`` at full precision: the tableau's digits are the method's order."""
    return dot(weights, stages, precision=Precision.HIGHEST)


def _dtype(x: Any) -> Any:
    return get_aval(x).dtype


def runge_kutta_step(fun: Callable, y0: Any, f0: Any, t0: Any, dt: Any) -> tuple:
    """One Dormand-Prince step from ``(t0, y0)`` with ``f0 = fun(y0, t0)``:
    ``(y1, f1, y1_error, stages)``, ``stages`` of shape ``(7, n)``."""
    dtype = _dtype(f0)
    nodes = creation.array(_NODES, dtype=_dtype(dt))
    stage_weights = creation.array(_STAGE_WEIGHTS, dtype=dtype)
    dt_y = dt.astype(dtype)

    # One loop over the stages, not six copies of fun, keeps the program small; the zero
    # weights of the not-yet-computed stages make the full-row product exact.
    def stage(i, stages):
        t = t0 + dt * nodes[i - 1]
        y = y0 + dt_y * _combine(stage_weights[i - 1, :], stages)
        return stages.at[i, :].set(fun(y, t))

    stages = creation.zeros((7, get_aval(f0).shape[0]), dtype).at[0, :].set(f0)
    stages = fori_loop(1, 7, stage, stages)
    y1 = dt_y * _combine(creation.array(_SOLUTION_WEIGHTS, dtype=dtype), stages) + y0
    y1_error = dt_y * _combine(creation.array(_ERROR_WEIGHTS, dtype=dtype), stages)
    return y1, stages[-1], y1_error, stages


def interp_fit_dopri(y0: Any, y1: Any, stages: Any, dt: Any) -> Any:
    """The coefficients (highest power first, shape ``(5, n)``) of the quartic in the step's
    relative time ``s`` in [0, 1] through y0, the midpoint solution and y1 with the
    derivatives at both ends."""
    dtype = _dtype(y0)
    dt = dt.astype(dtype)
    y_mid = y0 + dt * _combine(creation.array(_MIDPOINT_WEIGHTS, dtype=dtype), stages)
    dy0, dy1 = stages[0], stages[-1]
    a = -2.0 * dt * dy0 + 2.0 * dt * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dt * dy0 - 3.0 * dt * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dt * dy0 + dt * dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return manipulation.stack([a, b, c, dt * dy0, y0])


def _abs2(x: Any) -> Any:
    if _dtype(x).kind == "c":
        return enp.real(x) ** 2 + enp.imag(x) ** 2
    return x**2


def mean_error_ratio(error: Any, rtol: float, atol: float, y0: Any, y1: Any) -> Any:
    """The root-mean-square of the error relative to the tolerance; a step is accepted when
    it is at most 1."""
    tolerance = atol + rtol * maximum(enp.abs(y0), enp.abs(y1))
    ratio = error / tolerance.astype(_dtype(error))
    return enp.sqrt(reductions.mean(_abs2(ratio)))


def optimal_step_size(
    last_step: Any,
    error_ratio: Any,
    safety: float = 0.9,
    ifactor: float = 10.0,
    dfactor: float = 0.2,
    order: float = 5.0,
) -> Any:
    """The next step: ``last_step`` scaled by ``safety * error_ratio ** (-1 / order)``, at most
    ``ifactor`` times larger, and after a rejected step at most ``1 / dfactor`` times smaller
    (after an accepted one it never shrinks)."""
    dfactor = where(error_ratio < 1, 1.0, dfactor)
    factor = minimum(ifactor, maximum(error_ratio ** (-1.0 / order) * safety, dfactor))
    return where(error_ratio == 0, last_step * ifactor, last_step * factor)


def initial_step_size(
    fun: Callable, t0: Any, y0: Any, order: int, rtol: float, atol: float, f0: Any
) -> Any:
    """A first step whose error is about the tolerance: from the sizes of y0, f0 and an
    estimate of the second derivative, after one explicit Euler probe."""
    dtype = _dtype(y0)
    scale = (atol + enp.abs(y0) * rtol).astype(dtype)
    d0 = linalg.norm(y0 / scale)
    d1 = linalg.norm(f0 / scale)
    h0 = where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    y1 = y0 + h0.astype(dtype) * f0
    f1 = fun(y1, t0 + h0)
    d2 = linalg.norm((f1 - f0) / scale) / h0
    h1 = where(
        (d1 <= 1e-15) & (d2 <= 1e-15),
        maximum(1e-6, h0 * 1e-3),
        (0.01 / maximum(d1, d2)) ** (1.0 / (order + 1.0)),
    )
    return minimum(100.0 * h0, h1)
