"""The CUDA plugin's cupy kernels on a real NVIDIA GPU (the cuda tox env), against NumPy and
against ember's generic path. Every test skips, with the reason, without a cuda platform or
without cupy. One line to run them: ``EMBER_PLATFORMS=cuda pytest
tests/plugin_cuda/test_kernels_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest
from ember_plugin_cuda import kernel_names

import ember
import ember.numpy as enp
from ember.errors import CallbackError, EmberError
from ember.extend import call_named_kernel

F32 = np.float32


@pytest.fixture(scope="module")
def gpu():
    pytest.importorskip("cupy", reason="the cuda kernels need cupy (the cuda12 extra)")
    try:
        return ember.devices("cuda")[0]
    except EmberError as exc:
        pytest.skip(f"no cuda platform here: {str(exc).splitlines()[0]}")


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attention(q, k, v, causal):
    """NumPy attention, (batch, seq, heads, dim), key/value heads repeated for GQA."""
    groups = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, groups, axis=2), np.repeat(v, groups, axis=2)
    logits = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(q.shape[-1])
    if causal:
        t, s = logits.shape[-2:]
        logits = np.where(np.tril(np.ones((t, s), bool)), logits, -np.inf)
    return np.einsum("bhts,bshd->bthd", _softmax(logits), v)


def test_the_fused_softmax_matches_numpy_under_jit(gpu):
    x = np.random.default_rng(0).standard_normal((37, 1000)).astype(F32) * 4
    run = ember.jit(
        lambda x: call_named_kernel(
            kernel_names.SOFTMAX, x, result_shape_dtypes=ember.ShapeDtypeStruct(x.shape, x.dtype)
        )
    )
    for k in range(3):
        got = run(ember.device_put(x + k, gpu))
        np.testing.assert_allclose(np.asarray(got), _softmax(x + k), rtol=2e-5, atol=1e-7)
    half = run(ember.device_put(x.astype(np.float16), gpu))
    np.testing.assert_allclose(np.asarray(half).astype(F32), _softmax(x), atol=2e-3)


@pytest.mark.parametrize("activation", ["relu", "gelu", "silu", "tanh"])
def test_bias_activation_matches_the_generic_path(gpu, activation):
    rng = np.random.default_rng(1)
    x = ember.device_put(rng.standard_normal((64, 96)).astype(F32), gpu)
    b = ember.device_put(rng.standard_normal(96).astype(F32), gpu)
    generic = {
        "relu": ember.nn.relu,
        "gelu": ember.nn.gelu,
        "silu": ember.nn.silu,
        "tanh": enp.tanh,
    }[activation]

    @ember.jit
    def both(x, b):
        fused = call_named_kernel(
            kernel_names.BIAS_ACTIVATION,
            x,
            b,
            result_shape_dtypes=ember.ShapeDtypeStruct(x.shape, x.dtype),
            activation=activation,
        )
        return fused * 2.0, generic(x + b) * 2.0  # ops after the kernel see its writes

    fused, want = both(x, b)
    np.testing.assert_allclose(np.asarray(fused), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_an_unknown_activation_fails_the_run_with_a_callback_error(gpu):
    x = ember.device_put(np.ones((2, 3), F32), gpu)
    with pytest.raises(CallbackError, match="has no activation 'swish'"):
        np.asarray(
            call_named_kernel(
                kernel_names.BIAS_ACTIVATION,
                x,
                ember.device_put(np.ones(3, F32), gpu),
                result_shape_dtypes=ember.ShapeDtypeStruct((2, 3), F32),
                activation="swish",
            )
        )


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_cuda_attention_matches_numpy_and_the_generic_path(gpu, causal, kv_heads):
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 128, 4, 32)).astype(F32)
    k = rng.standard_normal((2, 128, kv_heads, 32)).astype(F32)
    v = rng.standard_normal((2, 128, kv_heads, 32)).astype(F32)
    args = [ember.device_put(a, gpu) for a in (q, k, v)]

    def attend(implementation):
        return ember.jit(
            lambda q, k, v: ember.nn.dot_product_attention(
                q, k, v, is_causal=causal, implementation=implementation
            )
        )

    fused = np.asarray(attend("cuda")(*args))
    np.testing.assert_allclose(fused, _attention(q, k, v, causal), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fused, np.asarray(attend(None)(*args)), rtol=1e-4, atol=1e-5)


def test_cuda_attention_runs_in_order_with_the_program_at_length_2048(gpu):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 2048, 8, 64)).astype(F32)
    x = ember.device_put(q, gpu)

    @ember.jit
    def program(x):
        y = x * 0.5  # written by XLA just before the kernel reads it, on the same stream
        out = ember.nn.dot_product_attention(y, y, y, is_causal=True, implementation="cuda")
        return out + 1.0

    want = _attention(q * 0.5, q * 0.5, q * 0.5, True) + 1.0
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(program(x)), want, rtol=1e-3, atol=1e-4)
