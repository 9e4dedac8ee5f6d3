"""ember.example_libraries: optimizers and stax, checked against NumPy and against the numbers
JAX 0.10's example libraries give for the same programs (ember.random is bit-exact with JAX's
threefry, so initial parameters agree too)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.random as random
from ember.example_libraries import (
    optimizers as O,  # noqa: N812
    stax,
)

# --------------------------------------------------------------------------------------------
# optimizers


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


# --------------------------------------------------------------------------------------------
# stax: layers against NumPy


KEY = random.key(5)
X = ((np.arange(2 * 5 * 5 * 2, dtype=np.float32).reshape(2, 5, 5, 2) % 7) - 3) / 3


def test_dense_init_and_apply():
    init, apply = stax.Dense(4)
    shape, (w, b) = init(KEY, (3, 5))
    assert shape == (3, 4) and w.shape == (5, 4) and b.shape == (4,)
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
    np.testing.assert_allclose(apply((w, b), x), x @ np.asarray(w) + np.asarray(b), rtol=1e-5)


def _np_conv_nhwc(x, w, strides):
    """VALID cross-correlation, x NHWC, w HWIO."""
    kh, kw = w.shape[:2]
    oh = (x.shape[1] - kh) // strides[0] + 1
    ow = (x.shape[2] - kw) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * strides[0] : i * strides[0] + kh, j * strides[1] : j * strides[1] + kw]
            out[:, i, j] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def test_conv_init_and_apply():
    init, apply = stax.Conv(3, (2, 3), strides=(1, 2))
    shape, (w, b) = init(KEY, X.shape)
    assert shape == (2, 4, 2, 3) and w.shape == (2, 3, 2, 3) and b.shape == (1, 1, 1, 3)
    expected = _np_conv_nhwc(X, np.asarray(w), (1, 2)) + np.asarray(b)
    np.testing.assert_allclose(apply((w, b), X), expected, rtol=1e-4, atol=1e-5)


# JAX 0.10.2, key(5): output shape, parameter shapes, sum(out), sum(out**2).
JAX_CONV_LAYERS = [
    ("convT", lambda: stax.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME"), X,
     (2, 10, 10, 3), [(3, 3, 2, 3), (1, 1, 1, 3)], 1.233249545097351, 66.75387573242188),
    ("conv1dT", lambda: stax.Conv1DTranspose(2, (3,), strides=(2,)), X[:, 0],
     (2, 11, 2), [(3, 2, 2), (1, 1, 2)], -1.0151482820510864, 11.283269882202148),
    ("gconv", lambda: stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (2, 2), strides=(1, 2)),
     X.transpose(0, 3, 1, 2), (2, 4, 4, 2), [(4, 2, 2, 2), (1, 4, 1, 1)], 0.84758460521698,
     20.517005920410156),
    ("avgsame", lambda: stax.AvgPool((2, 2), strides=(2, 2), padding="SAME"), X,
     (2, 3, 3, 2), [], -1.250000238418579, 5.7430548667907715),
    ("avgspec", lambda: stax.AvgPool((3,), padding="SAME", spec="NCW"),
     X[:, :, 0].transpose(0, 2, 1), (2, 2, 5), [], -0.9444445371627808, 1.935185194015503),
    ("sumpool", lambda: stax.SumPool((2, 2)), X, (2, 4, 4, 2), [], 1.3333330154418945,
     28.444440841674805),
]  # fmt: skip


@pytest.mark.parametrize("case", JAX_CONV_LAYERS, ids=lambda c: c[0])
def test_conv_and_pool_layers_match_jax(case):
    _, make, x, out_shape, param_shapes, total, squares = case
    init, apply = make()
    shape, params = init(KEY, x.shape)
    assert tuple(shape) == out_shape
    assert [p.shape for p in ember.tree_util.tree_leaves(params)] == param_shapes
    out = apply(params, x)
    assert out.shape == out_shape
    np.testing.assert_allclose(float(jnp.sum(out)), total, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(jnp.sum(out**2)), squares, rtol=1e-5)


def _np_windows(x, k, s):
    """All (k x k, stride s) VALID windows of the spatial axes of an NHWC array."""
    oh, ow = (x.shape[1] - k) // s + 1, (x.shape[2] - k) // s + 1
    return np.stack(
        [
            np.stack([x[:, i * s : i * s + k, j * s : j * s + k] for j in range(ow)], 1)
            for i in range(oh)
        ],
        1,
    )  # (N, oh, ow, k, k, C)


@pytest.mark.parametrize(
    "layer,reduce",
    [(stax.MaxPool, np.max), (stax.SumPool, np.sum), (stax.AvgPool, np.mean)],
    ids=["max", "sum", "avg"],
)
def test_pools_against_numpy(layer, reduce):
    init, apply = layer((2, 2), strides=(2, 2))
    shape, params = init(KEY, X.shape)
    assert shape == (2, 2, 2, 2) and params == ()
    expected = reduce(_np_windows(X, 2, 2), axis=(3, 4))
    np.testing.assert_allclose(apply(params, X), expected, rtol=1e-6)


def test_avg_pool_same_padding_divides_by_the_in_bounds_count():
    init, apply = stax.AvgPool((2, 2), strides=(2, 2), padding="SAME")
    x = np.ones((1, 3, 3, 1), np.float32)
    x[0, 2, 2, 0] = 5.0
    out = apply((), x)
    # The bottom-right window holds only the one in-bounds element.
    np.testing.assert_allclose(out[0, :, :, 0], [[1.0, 1.0], [1.0, 5.0]])


def test_batch_norm_against_numpy():
    init, apply = stax.BatchNorm(axis=(0, 1, 2))
    shape, (beta, gamma) = init(KEY, X.shape)
    assert shape == X.shape and beta.shape == (2,) and gamma.shape == (2,)
    beta, gamma = jnp.array([0.5, -1.0]), jnp.array([2.0, 3.0])
    mean = X.mean(axis=(0, 1, 2))
    var = X.var(axis=(0, 1, 2))
    expected = np.asarray(gamma) * (X - mean) / np.sqrt(var + 1e-5) + np.asarray(beta)
    np.testing.assert_allclose(apply((beta, gamma), X), expected, rtol=1e-4, atol=1e-5)
    # Without center/scale the parameters are empty and the output is just standardised.
    init, apply = stax.BatchNorm(axis=np.int64(0), center=False, scale=False)
    _, params = init(KEY, (4, 3))
    assert params == ((), ())
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(
        apply(params, x), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-5
    )


@pytest.mark.parametrize(
    "layer,fn",
    [
        (stax.Tanh, np.tanh),
        (stax.Relu, lambda x: np.maximum(x, 0)),
        (stax.Exp, np.exp),
        (stax.Sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        (stax.Softplus, lambda x: np.log1p(np.exp(x))),
        (stax.Elu, lambda x: np.where(x > 0, x, np.expm1(x))),
        (stax.LeakyRelu, lambda x: np.where(x > 0, x, 0.01 * x)),
        (stax.Identity, lambda x: x),
        (stax.Softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
        (stax.LogSoftmax, lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
        (stax.Gelu, lambda x: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))),
    ],
)
def test_elementwise_layers(layer, fn):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    init, apply = layer
    assert init(KEY, (3, 4)) == ((3, 4), ())
    np.testing.assert_allclose(apply((), x), fn(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_elementwise_passes_keyword_arguments():
    init, apply = stax.elementwise(jnp.sum, axis=1)
    np.testing.assert_allclose(apply((), np.ones((2, 3))), [3.0, 3.0])


def test_flatten_fan_out_parallel_fan_in():
    init, apply = stax.Flatten
    assert init(KEY, (2, 3, 4)) == ((2, 12), ())
    assert apply((), jnp.ones((2, 3, 4))).shape == (2, 12)

    init, apply = stax.serial(
        stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity), stax.FanInConcat()
    )
    shape, params = init(KEY, (4, 5))
    assert shape == (4, 8)
    x = np.ones((4, 5), np.float32)
    out = apply(params, x)
    (w, b), _ = params[1]
    np.testing.assert_allclose(out[:, :3], x @ np.asarray(w) + np.asarray(b), rtol=1e-5)
    np.testing.assert_allclose(out[:, 3:], x)

    init, apply = stax.serial(stax.FanOut(3), stax.FanInSum)
    assert init(KEY, (2,)) == ((2,), [(), ()])
    np.testing.assert_allclose(apply([(), ()], jnp.array([1.0, 2.0])), [3.0, 6.0])


def test_parallel_init_returns_shapes_and_params():
    init, apply = stax.parallel(stax.Dense(2), stax.Relu)
    shapes, params = init(KEY, [(3, 4), (5,)])
    assert list(shapes) == [(3, 2), (5,)]
    assert params[1] == ()


def test_shape_dependent_builds_the_layer_from_the_input_shape():
    init, apply = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2))
    shape, params = init(KEY, (3, 4))
    assert shape == (3, 8)
    assert apply(params, jnp.ones((3, 4))).shape == (3, 8)


def test_dropout():
    init, apply = stax.Dropout(0.7)
    assert init(KEY, (2, 5)) == ((2, 5), ())
    out = apply((), jnp.ones((2, 5)), rng=random.key(3))
    k = 1 / 0.7  # kept elements (kept with probability `rate`, as in JAX) are divided by rate
    expected = [[k, 0.0, k, 0.0, k], [k, k, k, k, k]]  # JAX 0.10.2 with key(3)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="PRNG key"):
        apply((), jnp.ones(3))
    _, apply_test = stax.Dropout(0.7, mode="test")
    np.testing.assert_array_equal(apply_test((), jnp.ones(3), rng=random.key(0)), np.ones(3))


def test_serial_splits_the_key_between_layers():
    init, apply = stax.serial(stax.Dense(3), stax.Dropout(0.5), stax.Dense(1))
    _, params = init(random.key(2), (2, 3))
    out = apply(params, jnp.ones((2, 3)), rng=random.key(4))
    np.testing.assert_allclose(out, [[-0.0045967624], [1.3319881]], rtol=1e-5, atol=1e-6)


def test_stax_initializers_are_jax_names():
    assert stax.glorot is stax.glorot_normal
    assert stax.randn is stax.normal
    assert stax.logsoftmax is stax.log_softmax
    w = stax.randn(0.5)(random.key(0), (1000,))
    assert 0.45 < float(jnp.std(w)) < 0.55


# --------------------------------------------------------------------------------------------
# stax + optimizers: tiny training runs with JAX's numbers


def test_mlp_training_matches_jax():
    x = ((np.arange(24, dtype=np.float32).reshape(6, 4) % 7) - 3) / 3
    y = np.eye(3, dtype=np.float32)[np.arange(6) % 3]
    init, apply = stax.serial(stax.Dense(8), stax.Tanh, stax.Dense(3), stax.LogSoftmax)
    shape, params = init(random.key(0), (-1, 4))
    assert shape == (-1, 3)
    # The first row of the first kernel and the last bias, as JAX draws them from key(0).
    np.testing.assert_allclose(
        params[0][0][0],
        [0.08806364, -0.3378711, -0.54053658, -0.18142106, -0.4375836, 0.12678578, 0.4329615,
         0.21990135],
        rtol=1e-5,
    )  # fmt: skip
    np.testing.assert_allclose(params[2][1], [-0.0006049, -0.02217776, 0.01161267], rtol=1e-5)

    def loss(p):
        return -jnp.mean(jnp.sum(apply(p, x) * y, axis=1))

    opt_init, opt_update, get_params = O.adam(0.05)

    @ember.jit
    def step(i, state):
        value, grads = ember.value_and_grad(loss)(get_params(state))
        return value, opt_update(i, grads, state)

    state, losses = opt_init(params), []
    for i in range(6):
        value, state = step(i, state)
        losses.append(float(value))
    jax_losses = [1.0475786, 0.9100456, 0.7974299, 0.6971716, 0.6071668, 0.5285110]
    np.testing.assert_allclose(losses, jax_losses, rtol=1e-5)


def test_conv_net_forward_matches_jax():
    img = ((np.arange(2 * 6 * 6 * 2, dtype=np.float32).reshape(2, 6, 6, 2) % 5) - 2) / 2
    init, apply = stax.serial(
        stax.Conv(3, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Relu,
        stax.MaxPool((2, 2), strides=(2, 2)), stax.Flatten, stax.Dense(2),
    )  # fmt: skip
    shape, params = init(random.key(1), img.shape)
    assert shape == (2, 2)
    shapes = [p.shape for p in ember.tree_util.tree_leaves(params)]
    assert shapes == [(3, 3, 2, 3), (1, 1, 1, 3), (3,), (3,), (27, 2), (2,)]
    out = ember.jit(apply)(params, img)
    expected = [[-1.0903420, 0.9009119], [-2.7641096, 0.1396564]]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
