"""ember.experimental.ode.odeint: solutions against closed forms and SciPy, the adjoint
gradients against finite differences and against differentiating a fixed-step RK4, pytrees,
jit, vmap, argument errors, and answers pinned from JAX 0.10.2."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import ember
import ember.numpy as jnp
from ember.experimental.ode import odeint
from ember.test_util import check_grads


@pytest.fixture
def x64():
    with ember.config.option("enable_x64", True):
        yield


def decay(y, t, k):
    return -k * y


def oscillator(y, t, omega):
    position, velocity = y[0], y[1]
    return jnp.stack([velocity, -(omega**2) * position])


def lotka_volterra(y, t, a, b, c, d):
    prey, predator = y[0], y[1]
    return jnp.stack([a * prey - b * prey * predator, c * prey * predator - d * predator])


def forced(y, t, a, b):
    """The program whose answers are pinned from JAX 0.10.2."""
    return jnp.stack([a * y[0] - b * y[0] * y[1], -y[1] + 0.5 * y[0] * y[1] + jnp.sin(t)])


def rk4(func, y0, t, *args, substeps=40):
    """Classical fixed-step RK4 written out, so ember differentiates straight through it."""
    ys, y = [y0], y0
    for start, stop in zip(t[:-1], t[1:]):
        h = (stop - start) / substeps
        for n in range(substeps):
            s = start + n * h
            k1 = func(y, s, *args)
            k2 = func(y + h / 2 * k1, s + h / 2, *args)
            k3 = func(y + h / 2 * k2, s + h / 2, *args)
            k4 = func(y + h * k3, s + h, *args)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return jnp.stack(ys)


def test_exponential_decay_matches_the_closed_form(x64):
    t = np.linspace(0.0, 5.0, 11)
    y0 = np.array([1.0, -3.0, 0.25])
    ys = odeint(decay, jnp.asarray(y0), jnp.asarray(t), 0.8)
    assert ys.shape == (11, 3) and ys.dtype == np.float64
    np.testing.assert_allclose(ys, np.exp(-0.8 * t)[:, None] * y0, rtol=1e-6, atol=1e-12)


def test_harmonic_oscillator_matches_the_closed_form(x64):
    t = np.linspace(0.0, 10.0, 21)
    omega = 1.7
    ys = odeint(oscillator, jnp.array([1.0, 0.0]), jnp.asarray(t), omega, rtol=1e-10, atol=1e-10)
    expected = np.stack([np.cos(omega * t), -omega * np.sin(omega * t)], axis=1)
    np.testing.assert_allclose(ys, expected, atol=1e-8)


def test_lotka_volterra_matches_scipy(x64):
    params = (1.5, 1.0, 1.0, 3.0)
    t = np.linspace(0.0, 15.0, 31)
    y0 = np.array([10.0, 5.0])  # far from equilibrium: sharp spikes in the prey
    ys = odeint(lotka_volterra, jnp.asarray(y0), jnp.asarray(t), *params, rtol=1e-9, atol=1e-9)
    reference = solve_ivp(
        lambda s, y: np.asarray(lotka_volterra(y, s, *params)),
        (t[0], t[-1]),
        y0,
        method="DOP853",
        t_eval=t,
        rtol=1e-12,
        atol=1e-12,
    )
    np.testing.assert_allclose(ys, reference.y.T, rtol=1e-6, atol=1e-8)


def test_pytree_state_gives_stacked_pytree(x64):
    def dynamics(state, t, omega):
        return {"x": state["v"], "v": -(omega**2) * state["x"], "decay": [-state["decay"][0]]}

    y0 = {"x": jnp.array([1.0, 2.0]), "v": jnp.zeros(2), "decay": [jnp.float64(3.0)]}
    t = np.linspace(0.0, 2.0, 5)
    ys = odeint(dynamics, y0, jnp.asarray(t), 2.0)
    assert set(ys) == {"x", "v", "decay"}
    assert ys["x"].shape == (5, 2) and ys["decay"][0].shape == (5,)
    np.testing.assert_allclose(ys["x"], np.cos(2 * t)[:, None] * [1.0, 2.0], atol=1e-7)
    np.testing.assert_allclose(ys["v"], -2 * np.sin(2 * t)[:, None] * [1.0, 2.0], atol=1e-7)
    np.testing.assert_allclose(ys["decay"][0], 3.0 * np.exp(-t), rtol=1e-7)


def test_gradients_match_finite_differences(x64):
    t = jnp.array([0.0, 0.5, 1.2])
    y0 = jnp.array([1.0, 0.5])

    def solve(y0, t, a, b):
        return odeint(forced, y0, t, a, b, rtol=1e-10, atol=1e-10)

    check_grads(solve, (y0, t, 1.1, 0.4), order=1, modes=["rev"], atol=1e-5, rtol=1e-5)


def test_gradients_match_differentiating_rk4(x64):
    t = jnp.array([0.0, 0.7, 1.5])
    y0 = jnp.array([2.0, 1.0])
    params = (1.5, 1.0, 1.0, 3.0)

    def loss(solver, y0, t, *params):
        ys = solver(lotka_volterra, y0, t, *params)
        return jnp.sum(ys**2 * jnp.array([1.0, 0.3]))

    def adaptive(*a):
        return odeint(*a, rtol=1e-10, atol=1e-10)

    argnums = tuple(range(1, 7))
    got = ember.grad(loss, argnums=argnums)(adaptive, y0, t, *params)
    want = ember.grad(loss, argnums=argnums)(rk4, y0, t, *params)
    assert np.all(np.asarray(got[0]) != 0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_gradient_reaches_values_the_dynamics_close_over(x64):
    def final(k):
        return odeint(lambda y, t: -k * y, jnp.array([2.0]), jnp.array([0.0, 1.5]))[-1, 0]

    # d/dk 2 exp(-1.5 k) = -3 exp(-1.5 k)
    np.testing.assert_allclose(ember.grad(final)(0.6), -3.0 * np.exp(-0.9), rtol=1e-6)


def test_jit_and_vmap_over_y0(x64):
    t = jnp.linspace(0.0, 1.0, 4)

    def solve(y0):
        return odeint(decay, y0, t, 1.3)

    y0s = jnp.array([[1.0, 2.0], [-1.0, 0.5], [4.0, 0.0]])
    batched = ember.vmap(solve)(y0s)
    jitted = ember.jit(ember.vmap(solve))(y0s)
    expected = np.exp(-1.3 * np.asarray(t))[None, :, None] * np.asarray(y0s)[:, None, :]
    assert batched.shape == (3, 4, 2)
    np.testing.assert_allclose(batched, expected, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(jitted, expected, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(ember.jit(solve)(y0s[1]), expected[1], rtol=1e-7, atol=1e-12)


def test_hmax_and_mxstep():
    t = jnp.array([0.0, 1.0])
    y0 = jnp.array([1.0])
    capped = odeint(decay, y0, t, 1.0, hmax=0.01)
    np.testing.assert_allclose(capped[-1], [np.exp(-1.0)], rtol=1e-5)
    # Two steps cannot reach t = 1 from the initial step: the output is extrapolated from them,
    # not the solution.
    short = odeint(decay, y0, t, 1.0, mxstep=2)
    assert abs(float(short[-1, 0]) - np.exp(-1.0)) > 1e-2


def test_args_must_be_arrays():
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(decay, jnp.array([1.0]), jnp.array([0.0, 1.0]), "fast")
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(decay, jnp.array([1.0]), jnp.array([0.0, 1.0]), (1.0, object()))
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(decay, jnp.array([1.0]), jnp.array([0, 1]), 1.0)


def test_pinned_answers_from_jax(x64):
    y0, t = jnp.array([1.0, 0.5]), jnp.linspace(0.0, 3.0, 4)
    ys = odeint(forced, y0, t, 1.1, 0.4)
    jax_ys = [
        [1.0, 0.5],
        [2.3797785412971435, 0.8686111265433404],
        [3.622063445842732, 2.928408711112511],
        [1.8652104565258274, 5.250704995919476],
    ]
    np.testing.assert_allclose(ys, jax_ys, rtol=1e-12)

    def loss(y0, t, a, b):
        return jnp.sum(odeint(forced, y0, t, a, b) ** 2)

    grads = ember.grad(loss, argnums=(0, 1, 2, 3))(y0, t, 1.1, 0.4)
    jax_grads = [
        [54.68629118240288, -39.37410017117073],
        [-57.51118599609941, 10.272324221373811, 17.363235783150394, -9.194157814708245],
        160.96911396294306,
        -287.8739490018912,
    ]
    for g, w in zip(grads, jax_grads):
        np.testing.assert_allclose(g, w, rtol=1e-9)


def test_pinned_float32_answer_from_jax():
    ys = odeint(
        lambda y, t: -y + jnp.cos(t), jnp.float32(1.0), jnp.linspace(0.0, 1.0, 3, dtype=np.float32)
    )
    assert ys.dtype == np.float32
    np.testing.assert_allclose(ys, [1.0, 0.981769, 0.8748265], rtol=1e-6)
