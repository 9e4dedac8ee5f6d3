"""ember.scipy.optimize.minimize (BFGS) against SciPy, under jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import ember
import ember.numpy as enp
from ember.scipy import optimize
from tests.core.util import assert_close


def _close(actual, expected, rtol=1e-4, atol=1e-5):
    assert_close(actual, expected, rtol=rtol, atol=atol)


def rosenbrock(x):
    return enp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_minimize_bfgs_rosenbrock():
    result = optimize.minimize(rosenbrock, enp.zeros(2), method="BFGS")
    expected = scipy.optimize.minimize(
        lambda x: float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)),
        np.zeros(2),
        method="BFGS",
    )
    _close(result.x, expected.x, rtol=1e-3, atol=1e-3)
    assert bool(result.success) and int(result.status) == 0
    assert float(result.fun) < 1e-8 and np.abs(np.asarray(result.jac)).max() < 1e-5
    assert int(result.nfev) == int(result.njev) > int(result.nit) > 0
    # hess_inv approximates the inverse Hessian at the optimum, [[0.5, 1], [1, 2.002]]
    _close(result.hess_inv, np.linalg.inv([[802.0, -400.0], [-400.0, 200.0]]), rtol=0.05)


@pytest.mark.slow
def test_minimize_args_jit_and_vmap():
    def objective(x, a):
        return enp.sum((x - a) ** 2) + enp.sum(x**4)

    def solve(a):
        return optimize.minimize(objective, enp.zeros(3), (a,), method="bfgs").x

    targets = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]], np.float32)
    # the optimum solves 2 (x - a) + 4 x^3 = 0 in each coordinate
    expected = [[np.roots([4, 0, 2, -2 * t]).real.max() for t in row] for row in targets]
    _close(ember.jit(solve)(targets[0]), expected[0], rtol=1e-4)
    _close(ember.vmap(solve)(targets), expected, rtol=1e-4)


def test_minimize_out_of_iterations():
    result = optimize.minimize(rosenbrock, enp.zeros(3), method="BFGS", options={"maxiter": 3})
    assert int(result.status) == 1 and not bool(result.success) and int(result.nit) == 3


def test_minimize_converged_start_takes_no_step():
    result = optimize.minimize(lambda x: enp.sum(x**2), enp.zeros(2), method="BFGS")
    assert int(result.nit) == 0 and int(result.nfev) == 1 and bool(result.success)


def test_minimize_bad_input():
    with pytest.raises(ValueError, match="not recognized"):
        optimize.minimize(rosenbrock, enp.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match="1-dimensional"):
        optimize.minimize(rosenbrock, enp.zeros((2, 2)), method="BFGS")
    with pytest.raises(TypeError, match="tuple"):
        optimize.minimize(rosenbrock, enp.zeros(2), [1.0], method="BFGS")
    with pytest.raises(TypeError, match="options"):
        optimize.minimize(rosenbrock, enp.zeros(2), method="BFGS", options={"xtol": 1.0})
