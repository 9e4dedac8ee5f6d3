"""ember.nn against JAX's jax.nn (answers pinned from JAX 0.10.2), plus gradients."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.random as er
from ember.test_util import check_grads
from tests.core.util import assert_close

_DATA = json.loads(
    (pathlib.Path(__file__).parents[1] / "data" / "nn_functions_known_answers.json").read_text()
)
X = np.array(_DATA["x"], np.float32)
KNOWN = _DATA["answers"]

ELEMENTWISE = [
    "relu", "relu6", "sigmoid", "softplus", "silu", "log_sigmoid", "elu", "selu", "celu",
    "leaky_relu", "hard_tanh", "softmax", "log_softmax", "standardize",
]  # fmt: skip


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_functions_match_jax(name):
    assert_close(getattr(nn, name)(X), KNOWN[name], rtol=2e-6, atol=2e-6)


def test_gelu_glu_logsumexp_one_hot_match_jax():
    assert_close(nn.gelu(X), KNOWN["gelu_tanh"], rtol=2e-6, atol=2e-6)
    assert_close(nn.gelu(X, approximate=False), KNOWN["gelu_exact"], rtol=2e-6, atol=2e-6)
    assert_close(nn.glu(X[:, :4]), KNOWN["glu"], rtol=2e-6, atol=2e-6)
    assert_close(nn.logsumexp(X, axis=1), KNOWN["logsumexp"], rtol=2e-6)
    assert_close(nn.one_hot(np.array([0, 2, 1]), 3), KNOWN["one_hot"])


@pytest.mark.parametrize(
    "name",
    ["glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform"],
)
def test_initializers_match_jax(name):
    params = getattr(nn.initializers, name)()(er.key(3), (3, 4))
    assert_close(params, KNOWN["init_" + name], rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize(
    ("name", "scale", "shape", "seed"),
    [("init_orthogonal", 1.0, (3, 5), 5), ("init_orthogonal_conv", 0.5, (2, 2, 3, 4), 6)],
)
def test_orthogonal_initializer_matches_jax(name, scale, shape, seed):
    params = nn.initializers.orthogonal(scale=scale)(er.key(seed), shape)
    assert_close(params, KNOWN[name], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="rank 2"):
        nn.initializers.orthogonal()(er.key(0), (3,))


def test_dot_product_attention_matches_jax():
    q, k, v = (np.array(a, np.float32) for a in KNOWN["attention_inputs"])
    assert_close(nn.dot_product_attention(q, k, v), KNOWN["attention"], rtol=1e-5, atol=1e-6)
    qs = np.array(KNOWN["attention_causal_inputs"], np.float32)
    causal = nn.dot_product_attention(qs, qs, qs, is_causal=True)
    assert_close(causal, KNOWN["attention_causal"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name", ["sigmoid", "softplus", "silu", "gelu", "elu", "softmax", "log_softmax"]
)
def test_gradients(name):
    x = np.array([-1.3, -0.2, 0.4, 1.7], np.float32)
    check_grads(getattr(nn, name), (x,), order=2)


def test_logsumexp_is_stable_and_differentiable():
    big = np.array([1000.0, 1000.0], np.float32)
    assert float(nn.logsumexp(big)) == pytest.approx(1000.0 + np.log(2.0))
    assert_close(ember.grad(nn.logsumexp)(big), [0.5, 0.5])
    assert_close(nn.softmax(np.array([1000.0, 0.0], np.float32)), [1.0, 0.0])


def test_cuda_attention_off_cuda_is_a_lowering_error_naming_the_platform():
    q = ember.device_put(np.ones((1, 4, 2, 8), np.float32), ember.devices("reference")[0])
    with pytest.raises(
        ember.errors.LoweringError,
        match=r"'cuda.dot_product_attention' has no implementation on platform 'reference'",
    ):
        nn.dot_product_attention(q, q, q, is_causal=True, implementation="cuda")


def test_cuda_attention_refuses_arguments_its_kernel_does_not_take():
    q = np.ones((1, 4, 2, 8), np.float32)
    with pytest.raises(ValueError, match=r"does not support mask, local_window_size"):
        nn.dot_product_attention(
            q, q, q, mask=np.ones((4, 4), bool), local_window_size=2, implementation="cuda"
        )
