"""ember.lax.nextafter, reduce_precision and rng_bit_generator."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax

BACKENDS = ["default", "reference"]


def _device(which):
    return ember.devices()[0] if which == "default" else ember.devices("reference")[0]


@pytest.mark.parametrize("which", BACKENDS)
def test_nextafter_matches_numpy(which):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 10, 200), [0.0, -0.0, 1.0, np.inf, -np.inf, np.nan]])
    y = np.concatenate([rng.normal(0, 10, 200), [1.0, -1.0, 1.0, 0.0, 0.0, 1.0]])
    x, y = x.astype(np.float32), y.astype(np.float32)
    got = np.asarray(ember.jit(lax.nextafter, device=_device(which))(x, y))
    np.testing.assert_array_equal(got, np.nextafter(x, y))


@pytest.mark.parametrize("which", BACKENDS)
def test_reduce_precision_rounds_to_the_narrow_format(which):
    rng = np.random.default_rng(1)
    x = rng.normal(0, 100, 500).astype(np.float32)
    run = ember.jit(lambda x: lax.reduce_precision(x, 5, 10), device=_device(which))
    np.testing.assert_array_equal(np.asarray(run(x)), x.astype(np.float16).astype(np.float32))
    edges = np.array([7e4, -7e4, 1e-6, -1e-6, np.inf, np.nan, -0.0], np.float32)
    np.testing.assert_array_equal(
        np.asarray(run(edges)), [np.inf, -np.inf, 0.0, -0.0, np.inf, np.nan, -0.0]
    )
    # ties go to the even neighbour: 1 + 2^-11 lies halfway between two float16 values
    assert float(run(np.float32(1 + 2**-11))) == 1.0
    assert float(run(np.float32(1 + 3 * 2**-11))) == 1 + 2**-9


def test_reduce_precision_is_linear_for_differentiation():
    # as in JAX: tangents are rounded the same way (finite differences see a staircase)
    x = np.array([0.1, 1.7, -3.3], np.float32)
    grad = ember.grad(lambda x: lax.reduce_precision(x, 5, 10).sum())(x)
    np.testing.assert_array_equal(np.asarray(grad), np.ones(3, np.float32))


def test_reduce_precision_checks_its_arguments():
    with pytest.raises(ValueError, match="exponent_bits"):
        lax.reduce_precision(np.float32(1), 0, 3)
    with pytest.raises(ValueError, match="mantissa_bits"):
        lax.reduce_precision(np.float32(1), 5, -1)
    with pytest.raises(ember.errors.EmberTypeError, match="reduce_precision"):
        lax.reduce_precision(np.int32(1), 5, 10)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_rng_bit_generator_shapes_dtypes_and_determinism(which, dtype):
    """The bits are implementation-defined (they differ between backends, as in JAX): only
    shapes, dtypes, determinism and a fresh key are checked."""
    if dtype == np.uint64 and not ember.config.enable_x64:
        pytest.skip("uint64 needs x64")
    key = np.array([1, 2, 3, 4], np.uint32)
    run = ember.jit(lambda k: lax.rng_bit_generator(k, (64, 3), dtype), device=_device(which))
    new_key, bits = run(key)
    assert new_key.shape == (4,) and new_key.dtype == np.uint32
    assert bits.shape == (64, 3) and bits.dtype == np.dtype(dtype)
    again_key, again = run(key)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(bits))
    np.testing.assert_array_equal(np.asarray(again_key), np.asarray(new_key))
    assert not np.array_equal(np.asarray(new_key), key)
    _, next_bits = run(np.asarray(new_key))
    assert not np.array_equal(np.asarray(next_bits), np.asarray(bits))
    assert len(np.unique(np.asarray(bits))) > 10


def test_rng_bit_generator_under_vmap_is_one_call_per_key():
    keys = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.uint32)
    new_keys, bits = ember.vmap(lambda k: lax.rng_bit_generator(k, (5,)))(keys)
    for i in range(2):
        k, b = lax.rng_bit_generator(keys[i], (5,))
        np.testing.assert_array_equal(np.asarray(bits[i]), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(new_keys[i]), np.asarray(k))


def test_rng_bit_generator_reports_bad_arguments():
    with pytest.raises(ember.errors.EmberTypeError, match="unsupported dtype"):
        lax.rng_bit_generator(np.zeros(4, np.uint32), (2,), np.int32)
    with pytest.raises(ember.errors.EmberTypeError, match="uint32\\[4\\]"):
        lax.rng_bit_generator(np.zeros(2, np.uint32), (2,))
    assert str(lax.RandomAlgorithm.RNG_THREE_FRY) == "RNG_THREE_FRY"
