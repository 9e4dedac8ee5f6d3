"""lstsq and cond against NumPy: shapes, dtypes, rank deficiency, rcond, empty systems,
errors, jit and derivatives (the jvp of a complex wide system included)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import errors
from tests.core.util import assert_close, numerical_gradient

rng = np.random.default_rng(0)


def _random(shape, dtype=np.float32):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


# --------------------------------------------------------------------------------------------
# lstsq


@pytest.mark.parametrize(
    "shape, dtype, vector",
    [
        ((6, 3), np.float32, True),
        ((3, 6), np.complex64, False),
        ((4, 4), np.float32, False),
        ((1, 1), np.complex64, True),
        ((6, 3), np.complex64, False),
    ],
)
def test_lstsq_matches_numpy(shape, dtype, vector):
    a = _random(shape, dtype)
    b = _random((shape[0],) if vector else (shape[0], 2), dtype)
    x, resid, rank, s = enp.linalg.lstsq(a, b)
    want_x, want_resid, want_rank, want_s = np.linalg.lstsq(a, b)
    assert_close(x, want_x, rtol=1e-3, atol=1e-4)
    assert int(rank) == want_rank and np.asarray(rank).dtype == np.int32
    assert_close(s, want_s, rtol=1e-4, atol=1e-5)
    assert np.asarray(s).dtype == np.float32 and np.asarray(resid).dtype == np.float32
    assert np.asarray(resid).shape == (1 if vector else 2,)  # JAX: always computed
    if want_resid.size:
        assert_close(resid, want_resid, rtol=1e-3, atol=1e-4)
    else:
        assert_close(resid, np.zeros(np.asarray(resid).shape), atol=1e-4)
    numpy_resid = enp.linalg.lstsq(a, b, numpy_resid=True)[1]
    assert np.asarray(numpy_resid).shape == want_resid.shape


def test_lstsq_rank_deficient_and_rcond():
    a = np.outer(np.arange(1.0, 6.0), [1.0, 2.0, 3.0]).astype(np.float32)
    b = _random((5,))
    x, _, rank, _ = enp.linalg.lstsq(a, b)
    assert int(rank) == 1
    assert_close(x, np.linalg.lstsq(a, b)[0], rtol=1e-3, atol=1e-5)
    tall = _random((6, 3)) * np.array([1.0, 1.0, 1e-3], np.float32)
    assert int(enp.linalg.lstsq(tall, _random(6), rcond=1e-2)[2]) == 2
    assert int(enp.linalg.lstsq(tall, _random(6), rcond=-1)[2]) == 3


def test_lstsq_empty_and_errors():
    x, resid, rank, s = enp.linalg.lstsq(np.zeros((0, 3), np.float32), np.zeros(0, np.float32))
    assert np.asarray(x).shape == (3,) and np.asarray(s).shape == (0,) and int(rank) == 0
    assert_close(resid, [0.0])
    with pytest.raises(ValueError, match="rows"):
        enp.linalg.lstsq(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="matrix"):
        enp.linalg.lstsq(np.ones((2, 3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="vector or a matrix"):
        enp.linalg.lstsq(np.ones((3, 2)), np.ones((3, 1, 1)))
    with pytest.raises(errors.ConcretizationTypeError, match="numpy_resid"):
        ember.jit(lambda a, b: enp.linalg.lstsq(a, b, numpy_resid=True))(
            np.ones((3, 2)), np.ones(3)
        )


def test_lstsq_under_jit_and_gradients():
    a, b = _random((5, 3)), _random((5, 2))
    jitted = ember.jit(enp.linalg.lstsq)(a, b)
    for got, want in zip(jitted, np.linalg.lstsq(a, b)):
        assert_close(got, want, rtol=1e-3, atol=1e-4)
    weights = _random((3, 2))

    def loss(module, m, rhs):
        x, resid, _, s = module.linalg.lstsq(m, rhs)
        return module.sum(x * weights) + module.sum(resid) + module.sum(s**2)

    grads = ember.jit(ember.grad(lambda m, rhs: loss(enp, m, rhs), argnums=(0, 1)))(a, b)
    for argnum, got in enumerate(grads):
        expected = numerical_gradient(lambda m, rhs: loss(np, m, rhs), [a, b], argnum=argnum)
        assert_close(got, expected, rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------------------------
# cond


ORDERS = [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cond_matches_numpy(dtype):
    a = _random((2, 4, 4), dtype)
    # one compiled program for all orders
    got = ember.jit(lambda x: [enp.linalg.cond(x, p) for p in ORDERS])(a)
    for p, value in zip(ORDERS, got):
        assert np.asarray(value).dtype == np.float32
        assert_close(value, np.linalg.cond(a, p), rtol=1e-3)


def test_cond_special_values_and_errors():
    tall = _random((5, 3))
    assert_close(enp.linalg.cond(tall), np.linalg.cond(tall), rtol=1e-4)
    assert np.isinf(np.asarray(enp.linalg.cond(np.ones((3, 3), np.float32), 1)))
    with_nan = np.eye(3, dtype=np.float32)
    with_nan[0, 1] = np.nan
    assert np.isnan(np.asarray(enp.linalg.cond(with_nan, "fro")))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        enp.linalg.cond(tall, 1)
    with pytest.raises(ValueError, match="matrix"):
        enp.linalg.cond(np.ones(3))
    with pytest.raises(ValueError, match="empty"):
        enp.linalg.cond(np.ones((0, 0)))
    with pytest.raises(ValueError, match="p must be"):
        enp.linalg.cond(tall, 3)


def test_lstsq_jvp_of_complex_wide_system():
    # the minimum-norm solution's derivative (the pseudo-inverse's, with its null-space terms)
    a, da = _random((3, 5), np.complex64), _random((3, 5), np.complex64)
    b, db = _random((3,), np.complex64), _random((3,), np.complex64)
    _, tangent = ember.jit(
        lambda *args: ember.jvp(lambda m, r: enp.linalg.lstsq(m, r)[0], args[:2], args[2:])
    )(a, b, da, db)
    eps = 1e-4
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    plus = np.linalg.lstsq(a64 + eps * da, b64 + eps * db)[0]
    minus = np.linalg.lstsq(a64 - eps * da, b64 - eps * db)[0]
    assert_close(tangent, (plus - minus) / (2 * eps), rtol=1e-3, atol=1e-4)
