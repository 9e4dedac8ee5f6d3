"""ember.example_libraries.stax: layers against NumPy and against the numbers JAX 0.10's stax
gives for the same programs (ember.random is bit-exact with JAX's threefry, so initial
parameters agree too), and tiny training runs with the optimizers."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.random as random
from ember.example_libraries import (
    optimizers as O,  # noqa: N812
    stax,
)

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
