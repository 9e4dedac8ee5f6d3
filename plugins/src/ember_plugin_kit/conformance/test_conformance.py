"""Conformance checks for an ember backend, against NumPy and the reference backend."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import CompileError
from ember.extend import Computation

DTYPES = ["bool", "int8", "int32", "uint8", "uint32", "float16", "float32"]
UNARY = {
    "neg": (lax.neg, np.negative),
    "exp": (lax.exp, np.exp),
    "log": (lax.log, np.log),
    "tanh": (lax.tanh, np.tanh),
    "sqrt": (lax.sqrt, np.sqrt),
    "sin": (lax.sin, np.sin),
    "abs": (lax.abs, np.abs),
    "floor": (lax.floor, np.floor),
}
BINARY = {
    "add": (lax.add, np.add),
    "sub": (lax.sub, np.subtract),
    "mul": (lax.mul, np.multiply),
    "div": (lax.div, np.divide),
    "max": (lax.max, np.maximum),
    "min": (lax.min, np.minimum),
    "pow": (lax.pow, np.power),
    "lt": (lax.lt, np.less),
    "eq": (lax.eq, np.equal),
}


def _put(x, device):
    return ember.device_put(np.asarray(x), device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transfer_round_trip(platform_device, dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    y = _put(x, platform_device)
    assert y.devices() == {platform_device}
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(np.asarray(y), x)


def test_transfer_copies_host_memory(platform_device):
    x = np.ones(64, np.float32)
    y = _put(x, platform_device)
    x[:] = 5  # a later write on the host must not reach the device array
    np.testing.assert_array_equal(np.asarray(y), np.ones(64, np.float32))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(platform_device, numpy_device, name):
    op, np_op = UNARY[name]
    x = np.linspace(0.1, 3.0, 12, dtype=np.float32).reshape(3, 4)
    got = np.asarray(op(_put(x, platform_device)))
    ref = np.asarray(op(_put(x, numpy_device)))
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(got, np_op(x), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(platform_device, name):
    op, np_op = BINARY[name]
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (4, 5)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, (4, 5)).astype(np.float32)
    got = op(_put(x, platform_device), _put(y, platform_device))
    np.testing.assert_allclose(np.asarray(got), np_op(x, y), rtol=2e-6)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(platform_device, axis):
    x = np.random.default_rng(1).normal(size=(5, 7)).astype(np.float32)
    xd = _put(x, platform_device)
    for fn in ("sum", "max", "min", "prod", "argmax"):
        got = np.asarray(getattr(enp, fn)(xd, axis=axis))
        np.testing.assert_allclose(got, getattr(np, fn)(x, axis=axis), rtol=1e-5, atol=1e-6)


def test_matmul_and_einsum(platform_device):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 4, 5)).astype(np.float32)
    b = rng.normal(size=(3, 5, 2)).astype(np.float32)
    ad, bd = _put(a, platform_device), _put(b, platform_device)
    np.testing.assert_allclose(np.asarray(ad @ bd), a @ b, rtol=1e-5, atol=1e-5)
    got = enp.einsum("bij,bjk->bk", ad, bd)
    np.testing.assert_allclose(np.asarray(got), np.einsum("bij,bjk->bk", a, b), rtol=1e-5)


def test_jit_matches_reference(platform_device, numpy_device):
    def f(w, x):
        return enp.tanh(x @ w).sum(axis=0) * 0.5 + enp.max(x)

    rng = np.random.default_rng(3)
    w = rng.normal(size=(6, 3)).astype(np.float32)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    got = ember.jit(f, device=platform_device)(w, x)
    ref = ember.jit(f, device=numpy_device)(w, x)
    assert got.devices() == {platform_device}
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-5, atol=1e-6)


def test_grad_matches_reference(platform_device, numpy_device):
    def loss(w, x):
        return enp.mean(enp.tanh(x @ w) ** 2)

    rng = np.random.default_rng(4)
    w = rng.normal(size=(6, 3)).astype(np.float32)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    g = ember.jit(ember.grad(loss), device=platform_device)(w, x)
    ref = ember.jit(ember.grad(loss), device=numpy_device)(w, x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(ref), rtol=1e-4, atol=1e-6)


def test_donation_deletes_input(platform_device):
    f = ember.jit(lambda x: x * 2, donate_argnums=0)
    x = _put(np.arange(8, dtype=np.float32), platform_device)
    y = f(x)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8) * 2)
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted or donated"):
        np.asarray(x)


def test_delete_and_block_until_ready(platform_device):
    x = _put(np.ones(4, np.float32), platform_device)
    assert x.block_until_ready() is x
    x.delete()
    assert x.is_deleted()


def test_compile_error_is_an_ember_error(platform_device):
    if not platform_device.backend.compiles_stablehlo:
        pytest.skip("the backend interprets jaxprs; it never parses StableHLO")
    closed = ember.make_jaxpr(lambda x: x + 1)(np.float32(1))
    broken = Computation(
        "broken",
        closed,
        devices=[platform_device],
        text={platform_device.platform: "func.func @main() { not stablehlo }"},
    )
    with pytest.raises(CompileError):
        platform_device.backend.compile(broken)


def test_executable_introspection(platform_device):
    f = ember.jit(lambda a, b: a @ b, device=platform_device)
    a = np.ones((8, 8), np.float32)
    compiled = f.lower(a, a).compile()
    np.testing.assert_allclose(np.asarray(compiled(a, a)), a @ a)
    try:
        costs = compiled.cost_analysis()
    except NotImplementedError:
        pytest.skip("backend reports no cost analysis")
    assert isinstance(costs, dict) and costs


def test_bfloat16_results_read_back(platform_device):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    y = ember.jit(lambda a: a * 2 + 1, device=platform_device)(x)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), [4.0, -3.0, 7.5])
