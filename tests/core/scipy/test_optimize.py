"""ember.scipy.optimize.minimize (BFGS and L-BFGS) against SciPy and JAX's pinned answers, under
jit and vmap."""

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


LBFGS = "l-bfgs-experimental-do-not-rely-on-this"  # JAX's name for the method


def _scipy_lbfgsb(numpy_fun, x0):
    return scipy.optimize.minimize(numpy_fun, np.asarray(x0, np.float64), method="L-BFGS-B")


def _numpy_rosenbrock(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def test_lbfgs_rosenbrock_matches_scipy():
    x0 = np.array([-1.2, 1.0], np.float32)
    result = optimize.minimize(rosenbrock, x0, method=LBFGS)
    _close(result.x, _scipy_lbfgsb(_numpy_rosenbrock, x0).x, rtol=1e-3, atol=1e-3)
    assert bool(result.success) and int(result.status) == 0
    assert float(result.fun) < 1e-8 and np.abs(np.asarray(result.jac)).max() < 1e-5
    assert result.hess_inv is None
    assert 20 <= int(result.nit) <= 60 and int(result.nfev) == int(result.njev) > int(result.nit)


def test_lbfgs_rosenbrock_stops_on_too_little_progress():
    # in float32 the decrease near the minimum falls below ftol before the gradient test
    # passes: JAX's status 4 (insufficient progress), which is not success
    result = optimize.minimize(rosenbrock, enp.zeros(5), method=LBFGS)
    _close(result.x, _scipy_lbfgsb(_numpy_rosenbrock, np.zeros(5)).x, rtol=1e-3, atol=1e-3)
    assert float(result.fun) < 1e-8
    assert int(result.status) == 4 and not bool(result.success)


_A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], np.float32)
_B = np.array([1.0, 2.0, 3.0], np.float32)


def quadratic(x):
    return 0.5 * x @ _A @ x - _B @ x


def test_lbfgs_quadratic_matches_jax_and_scipy():
    result = optimize.minimize(quadratic, enp.zeros(3), method=LBFGS)
    # JAX 0.10.2 (float32): x, 6 iterations, 8 evaluations
    _close(result.x, [0.22222175, 0.11111486, 1.44444], rtol=1e-5, atol=1e-6)
    assert int(result.nit) == 6 and int(result.nfev) == int(result.njev) == 8
    assert bool(result.success) and int(result.status) == 0
    expected = _scipy_lbfgsb(lambda x: float(0.5 * x @ _A @ x - _B @ x), np.zeros(3)).x
    _close(result.x, expected, rtol=1e-4, atol=1e-5)
    _close(result.x, np.linalg.solve(_A, _B), rtol=1e-5, atol=1e-5)


def test_lbfgs_options():
    def solve(**options):
        return optimize.minimize(quadratic, enp.zeros(3), method=LBFGS, options=options)

    out_of_iterations = solve(maxiter=2)
    assert int(out_of_iterations.status) == 1 and int(out_of_iterations.nit) == 2
    assert not bool(out_of_iterations.success)
    out_of_evaluations = solve(maxfun=3)
    assert int(out_of_evaluations.status) == 2 and int(out_of_evaluations.nfev) >= 3
    assert int(solve(maxgrad=3).status) == 3
    # one stored pair still gets close; the two-norm test converges like the inf-norm one
    _close(solve(maxcor=1).x, np.linalg.solve(_A, _B), rtol=1e-3, atol=1e-3)
    _close(solve(norm=2).x, np.linalg.solve(_A, _B), rtol=1e-5, atol=1e-5)
    # an ftol this large stops after the first step
    assert int(solve(ftol=1e3).status) == 4 and int(solve(ftol=1e3).nit) == 1


def test_lbfgs_converged_start_takes_no_step():
    result = optimize.minimize(lambda x: enp.sum(x**2), enp.zeros(2), method=LBFGS)
    assert int(result.nit) == 0 and int(result.nfev) == 1 and bool(result.success)


def test_lbfgs_jit_and_vmap_over_starting_points():
    def solve(x0):
        return optimize.minimize(rosenbrock, x0, method=LBFGS).x

    starts = np.array([[-1.2, 1.0], [2.0, 2.0], [0.5, -0.5]], np.float32)
    _close(ember.jit(solve)(starts[0]), [1.0, 1.0], rtol=1e-3, atol=1e-3)
    _close(ember.vmap(solve)(starts), np.ones((3, 2)), rtol=1e-3, atol=1e-3)


def test_lbfgs_bad_input():
    with pytest.raises(ValueError, match="not recognized"):
        optimize.minimize(rosenbrock, enp.zeros(2), method="l-bfgs")
    with pytest.raises(TypeError, match="xtol"):
        optimize.minimize(rosenbrock, enp.zeros(2), method=LBFGS, options={"xtol": 1.0})
    with pytest.raises(TypeError, match="line_search_maxiter"):
        # a BFGS option is not an L-BFGS one (L-BFGS's is maxls)
        optimize.minimize(
            rosenbrock, enp.zeros(2), method=LBFGS, options={"line_search_maxiter": 5}
        )
    with pytest.raises(ValueError, match="maxcor"):
        optimize.minimize(rosenbrock, enp.zeros(2), method=LBFGS, options={"maxcor": 0})


def test_lbfgs_complex_variables_match_the_real_pairs():
    target = np.array([1 + 2j, -1j], np.complex64)

    def objective(z):
        return enp.sum(enp.abs(z - target) ** 4) + enp.sum(enp.abs(z) ** 2)

    result = optimize.minimize(objective, np.zeros(2, np.complex64), method=LBFGS)
    as_pairs = optimize.minimize(
        lambda v: objective(v[:2] + 1j * v[2:]), np.zeros(4, np.float32), method=LBFGS
    )
    _close(result.x, np.asarray(as_pairs.x)[:2] + 1j * np.asarray(as_pairs.x)[2:], rtol=1e-5)
    assert int(result.nit) == int(as_pairs.nit) and bool(result.success)
    # JAX 0.10.2's optimum (it stops there with status 4)
    _close(result.x, [0.60699195 + 1.2139839j, -0.41018078j], rtol=1e-3, atol=1e-3)
    assert np.asarray(result.fun).dtype == np.float32
