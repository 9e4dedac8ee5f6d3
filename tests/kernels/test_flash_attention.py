"""examples/kernels/flash_attention.py: values and gradients against
``ember.nn.dot_product_attention``, NumPy and finite differences."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.kernels.examples import load

flash = load("flash_attention")

# (batch, seq, heads, head_dim), blocks: small, yet several blocks on each sequence.
SHAPE = (2, 32, 2, 8)
BLOCKS = {"block_q": 8, "block_k": 16}


def _qkv(shape=SHAPE, seed=0, seq_k=None):
    rng = np.random.default_rng(seed)
    kv_shape = (shape[0], seq_k or shape[1], *shape[2:])
    q = rng.normal(size=shape).astype(np.float32)
    return (
        q,
        rng.normal(size=kv_shape).astype(np.float32),
        rng.normal(size=kv_shape).astype(np.float32),
    )


def _numpy_attention(q, k, v, causal, scale=None):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        keep = np.tril(np.ones(logits.shape[-2:], bool))
        logits = np.where(keep, logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", w, v)


@pytest.mark.parametrize("causal", [False, True])
def test_values_match_dot_product_attention_and_numpy(causal):
    q, k, v = _qkv()
    out = np.asarray(flash.flash_attention(q, k, v, causal=causal, **BLOCKS))
    assert out.shape == SHAPE and out.dtype == np.float32
    want = ember.nn.dot_product_attention(q, k, v, is_causal=causal)
    np.testing.assert_allclose(out, np.asarray(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, _numpy_attention(q, k, v, causal), rtol=1e-5, atol=1e-5)


def test_scale_and_a_longer_key_sequence():
    q, k, v = _qkv(seed=1, seq_k=48)
    out = flash.flash_attention(q, k, v, sm_scale=0.5, **BLOCKS)
    want = _numpy_attention(q, k, v, False, scale=0.5)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def _loss(attention, cotangent):
    return lambda q, k, v: enp.sum(attention(q, k, v) * cotangent)


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_match_dot_product_attention(causal):
    q, k, v = _qkv(seed=2)
    ct = np.random.default_rng(3).normal(size=SHAPE).astype(np.float32)
    kernel = functools.partial(flash.flash_attention, causal=causal, **BLOCKS)
    plain = functools.partial(ember.nn.dot_product_attention, is_causal=causal)
    got = ember.jit(ember.grad(_loss(kernel, ct), argnums=(0, 1, 2)))(q, k, v)
    want = ember.grad(_loss(plain, ct), argnums=(0, 1, 2))(q, k, v)
    for name, g, w in zip("qkv", got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    ("block_q", "block_k", "seq_k"),
    [
        (8, 8, 32),
        (16, 8, 32),  # more key blocks than query blocks: several shares of dq per query
        (32, 32, 32),  # one block each: the loops run once
        (8, 16, 48),  # a longer key sequence
        (16, 16, 16),  # a shorter one
    ],
)
def test_gradients_for_several_block_sizes(causal, block_q, block_k, seq_k):
    q, k, v = _qkv(seed=7, seq_k=seq_k)
    ct = np.random.default_rng(8).normal(size=SHAPE).astype(np.float32)
    blocks = {"block_q": block_q, "block_k": block_k}
    kernel = functools.partial(flash.flash_attention, causal=causal, **blocks)
    plain = functools.partial(ember.nn.dot_product_attention, is_causal=causal)
    got = ember.jit(ember.grad(_loss(kernel, ct), argnums=(0, 1, 2)))(q, k, v)
    want = ember.grad(_loss(plain, ct), argnums=(0, 1, 2))(q, k, v)
    for name, g, w in zip("qkv", got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_match_finite_differences(causal):
    # Directional derivatives of the float64 NumPy attention, against <grad, direction>.
    q, k, v = _qkv(shape=(1, 16, 1, 8), seed=4)
    ct = np.random.default_rng(5).normal(size=q.shape)
    blocks = {"block_q": 8, "block_k": 8}
    kernel = functools.partial(flash.flash_attention, causal=causal, **blocks)
    grads = ember.grad(_loss(kernel, ct.astype(np.float32)), argnums=(0, 1, 2))(q, k, v)
    directions = np.random.default_rng(6)
    eps = 1e-4
    for i, grad in enumerate(grads):
        d = directions.normal(size=q.shape)
        plus = [a.astype(np.float64) for a in (q, k, v)]
        minus = [a.astype(np.float64) for a in (q, k, v)]
        plus[i] = plus[i] + eps * d
        minus[i] = minus[i] - eps * d
        numeric = (
            np.sum(_numpy_attention(*plus, causal) * ct)
            - np.sum(_numpy_attention(*minus, causal) * ct)
        ) / (2 * eps)
        np.testing.assert_allclose(np.sum(np.asarray(grad) * d), numeric, rtol=1e-4, atol=1e-4)


def test_is_two_pallas_calls_under_grad():
    q, k, v = _qkv()
    loss = _loss(functools.partial(flash.flash_attention, **BLOCKS), np.ones(SHAPE, np.float32))
    text = str(ember.make_jaxpr(ember.grad(loss, argnums=(0, 1, 2)))(q, k, v))
    assert text.count("pallas_call[") == 2  # forward; dq, dk and dv in one backward kernel


def test_rejects_mismatched_shapes_and_blocks():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="expected q"):
        flash.flash_attention(q, k[:, :, :1], v[:, :, :1])
    with pytest.raises(ValueError, match="expected q"):
        flash.flash_attention(q[0], k[0], v[0])
    with pytest.raises(ValueError, match="not multiples"):
        flash.flash_attention(q, k, v, block_q=12)
