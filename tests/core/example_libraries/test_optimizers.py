"""ember.example_libraries.optimizers: update rules and schedules against the numbers JAX 0.10's
optimizers give for the same programs, the state as a pytree, and JAX's signatures."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.example_libraries import optimizers as O  # noqa: N812


def _quadratic_run(opt, jit=True, steps=5):
    """Five steps on sum(w**2) + (b-1)**2 from fixed parameters (a pytree with a scalar)."""
    init, update, get = opt
    state = init({"w": jnp.array([[1.0, 2.0], [3.0, -4.0]]), "b": jnp.array(0.5)})

    def loss(p):
        return jnp.sum(p["w"] ** 2) + (p["b"] - 1.0) ** 2

    upd = ember.jit(update) if jit else update
    for i in range(steps):
        state = upd(i, ember.grad(loss)(get(state)), state)
    return get(state)


# JAX 0.10.2, the same program: (b, w) after five jitted updates.
JAX_QUADRATIC = {
    "sgd": (0.83616, [[0.32767996, 0.65535992], [0.98304003, -1.31071985]]),
    "momentum": (1.29021001, [[-0.58041996, -1.16083992], [-1.74125993, 2.32167983]]),
    "nesterov": (1.20785868, [[-0.41571754, -0.83143508], [-1.24715257, 1.66287017]]),
    "adagrad": (0.59330308, [[0.90588933, 1.90549743], [2.90536833, -3.90530443]]),
    "rmsprop": (0.99782538, [[0.19979513, 1.04892719], [2.00670385, -2.98727798]]),
    "rmsprop_momentum": (1.25936675, [[-0.7854203, -0.53574276], [0.24142128, -1.14503527]]),
    "adam": (0.97218227, [[0.50796741, 1.50295961], [2.50178337, -3.50127125]]),
    "adamax": (0.89981616, [[0.55155396, 1.52577758], [2.51696372, -3.51251459]]),
    "sm3": (0.59330308, [[0.92749906, 1.90549743], [2.90536833, -3.90530443]]),
    "adam_exp": (0.77548939, [[0.72075009, 1.71965885], [2.71938181, -3.71925735]]),
    "sgd_inv": (0.78368002, [[0.43263996, 0.86527991], [1.29791999, -1.73055983]]),
    "sgd_poly": (0.66808581, [[0.66382849, 1.32765698], [1.99148548, -2.65531397]]),
    "sgd_pw": (0.74598402, [[0.50803196, 1.01606393], [1.52409601, -2.03212786]]),
}

OPTIMIZERS = {
    "sgd": lambda: O.sgd(0.1),
    "momentum": lambda: O.momentum(0.1, 0.9),
    "nesterov": lambda: O.nesterov(0.1, 0.9),
    "adagrad": lambda: O.adagrad(0.1),
    "rmsprop": lambda: O.rmsprop(0.1),
    "rmsprop_momentum": lambda: O.rmsprop_momentum(0.1),
    "adam": lambda: O.adam(0.1),
    "adamax": lambda: O.adamax(0.1),
    "sm3": lambda: O.sm3(0.1),
    "adam_exp": lambda: O.adam(O.exponential_decay(0.1, 2, 0.5)),
    "sgd_inv": lambda: O.sgd(O.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
    "sgd_poly": lambda: O.sgd(O.polynomial_decay(0.1, 3, 0.01, 2.0)),
    "sgd_pw": lambda: O.sgd(O.piecewise_constant([1, 3], [0.1, 0.05, 0.01])),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_trajectory_matches_jax(name):
    b, w = JAX_QUADRATIC[name]
    params = _quadratic_run(OPTIMIZERS[name]())
    np.testing.assert_allclose(params["b"], b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["w"], w, rtol=1e-5, atol=1e-6)
    assert params["b"].shape == () and params["w"].shape == (2, 2)


@pytest.mark.parametrize("name", ["adam", "sm3", "rmsprop_momentum"])
def test_optimizer_eager_update_agrees_with_jitted(name):
    eager = _quadratic_run(OPTIMIZERS[name](), jit=False)
    jitted = _quadratic_run(OPTIMIZERS[name]())
    for key in ("b", "w"):
        np.testing.assert_allclose(eager[key], jitted[key], rtol=1e-5, atol=1e-6)


def test_sgd_first_step_by_hand():
    init, update, get = O.sgd(0.5)
    state = update(0, {"a": jnp.array([2.0, -4.0])}, init({"a": jnp.array([1.0, 1.0])}))
    np.testing.assert_allclose(get(state)["a"], [0.0, 3.0])


def test_optimizer_state_is_a_pytree_through_jit():
    init, update, get = O.momentum(0.1, 0.9)
    params = [jnp.ones(3), (jnp.zeros((2, 2)),)]
    state = init(params)
    assert isinstance(state, O.OptimizerState)
    leaves = ember.tree_util.tree_leaves(state)
    assert len(leaves) == 4  # a (param, velocity) pair per parameter leaf
    new = ember.jit(update)(0, [jnp.ones(3), (jnp.ones((2, 2)),)], state)
    assert isinstance(new, O.OptimizerState) and new.tree_def == state.tree_def
    np.testing.assert_allclose(get(new)[0], np.full(3, 0.9))
    np.testing.assert_allclose(ember.jit(get)(new)[1][0], np.full((2, 2), -0.1))


def test_sm3_keeps_a_scalar_parameter_scalar_under_jit():
    init, update, get = O.sm3(0.1)
    state = ember.jit(update)(0, jnp.array(2.0), init(jnp.array(1.0)))
    out = ember.jit(get)(state)
    assert out.shape == ()
    np.testing.assert_allclose(out, 0.99, rtol=1e-6)  # (1 - 0.9) * 2 / sqrt(4) = 0.1


def test_update_with_mismatched_gradient_tree_is_a_type_error():
    init, update, _ = O.sgd(0.1)
    state = init({"a": jnp.ones(2)})
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(0, {"b": jnp.ones(2)}, state)


def test_update_rule_changing_its_state_structure_is_a_type_error():
    @O.optimizer
    def broken(step_size):
        return (lambda x: (x, x)), (lambda i, g, s: (s[0],)), (lambda s: s[0])

    init, update, _ = broken(0.1)
    with pytest.raises(TypeError, match="did not match its input structure"):
        update(0, jnp.ones(2), init(jnp.ones(2)))


def test_custom_optimizer_through_the_decorator():
    @O.optimizer
    def sign_sgd(step_size):
        step_size = O.make_schedule(step_size)
        return (lambda x: x), (lambda i, g, x: x - step_size(i) * jnp.sign(g)), (lambda x: x)

    init, update, get = sign_sgd(0.25)
    out = get(update(0, (jnp.array([3.0, -0.5]),), init((jnp.array([1.0, 1.0]),))))
    np.testing.assert_allclose(out[0], [0.75, 1.25])


# JAX 0.10.2: schedule(i) for i in range(6).
JAX_SCHEDULES = [
    (
        lambda: O.exponential_decay(0.1, 2, 0.5),
        [0.1, 0.0707106781, 0.05, 0.0353553391, 0.025, 0.0176776695],
    ),  # fmt: skip
    (
        lambda: O.inverse_time_decay(0.1, 2, 0.5),
        [0.1, 0.08, 0.0666666667, 0.0571428571, 0.05, 0.0444444444],
    ),  # fmt: skip
    (
        lambda: O.inverse_time_decay(0.1, 2, 0.5, True),
        [0.1, 0.1, 0.0666666701, 0.0666666701, 0.05, 0.05],
    ),  # fmt: skip
    (lambda: O.polynomial_decay(0.1, 3, 0.01, 2.0), [0.1, 0.05, 0.02, 0.01, 0.01, 0.01]),
    (
        lambda: O.piecewise_constant([1, 3], [0.1, 0.05, 0.01]),
        [0.1, 0.1, 0.05, 0.05, 0.01, 0.01],
    ),  # fmt: skip
    (lambda: O.constant(0.3), [0.3] * 6),
    (lambda: O.make_schedule(0.3), [0.3] * 6),
]


@pytest.mark.parametrize("make,expected", JAX_SCHEDULES)
def test_schedules(make, expected):
    schedule = make()
    np.testing.assert_allclose([float(schedule(i)) for i in range(6)], expected, rtol=1e-6)
    # Schedules also take a traced step number.
    traced = ember.jit(lambda i: jnp.asarray(schedule(i), jnp.float32))(jnp.int32(4))
    np.testing.assert_allclose(traced, expected[4], rtol=1e-6)


def test_schedule_errors():
    assert O.make_schedule(O.constant(1.0))(0) == 1.0
    with pytest.raises(TypeError):
        O.make_schedule(np.ones(3))
    with pytest.raises(ValueError, match="one shorter"):
        O.piecewise_constant([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="sequences"):
        O.piecewise_constant(1, [0.1, 0.2])


def test_l2_norm_and_clip_grads():
    g = {"a": jnp.array([3.0, 4.0]), "b": jnp.array([[12.0]])}
    assert float(O.l2_norm(g)) == 13.0
    clipped = O.clip_grads(g, 6.5)
    np.testing.assert_allclose(clipped["a"], [1.5, 2.0])
    np.testing.assert_allclose(clipped["b"], [[6.0]])
    untouched = O.clip_grads(g, 20.0)
    np.testing.assert_allclose(untouched["a"], [3.0, 4.0])


def test_unpack_and_pack_optimizer_state_round_trip():
    init, update, get = O.adam(0.1)
    state = init({"w": jnp.ones((2, 3)), "b": jnp.zeros(3)})
    state = update(0, {"w": jnp.ones((2, 3)), "b": jnp.ones(3)}, state)
    marked = O.unpack_optimizer_state(state)
    assert set(marked) == {"w", "b"} and isinstance(marked["w"], O.JoinPoint)
    x, m, v = marked["w"].subtree
    np.testing.assert_allclose(m, np.full((2, 3), 0.1), rtol=1e-6)
    again = O.pack_optimizer_state(marked)
    assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
    for a, b in zip(ember.tree_util.tree_leaves(again), ember.tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="JoinPoint"):
        O.pack_optimizer_state({"w": jnp.ones(2)})


def test_optimizer_signatures_match_jax():
    assert str(inspect.signature(O.adam)) == "(step_size, b1=0.9, b2=0.999, eps=1e-08)"
    assert str(inspect.signature(O.rmsprop_momentum)) == (
        "(step_size, gamma=0.9, eps=1e-08, momentum=0.9)"
    )
    assert str(inspect.signature(O.inverse_time_decay)) == (
        "(step_size, decay_steps, decay_rate, staircase=False)"
    )
    assert O.Optimizer._fields == ("init_fn", "update_fn", "params_fn")
    assert O.OptimizerState._fields == ("packed_state", "tree_def", "subtree_defs")
