"""Dtype canonicalisation, weak types and JAX's promotion lattice."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src import dtypes


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (np.int8, np.uint8, np.int16),
        (np.int32, np.float32, np.float32),
        (np.uint32, np.int32, np.int32),  # int64 narrows to int32 without x64
        (np.float16, np.float32, np.float32),
        (np.bool_, np.int8, np.int8),
        (np.float32, np.complex64, np.complex64),
        (np.uint8, np.uint16, np.uint16),
    ],
)
def test_promotion_of_strong_types(a, b, expected):
    dtype, weak = dtypes.promote([(np.dtype(a), False), (np.dtype(b), False)])
    assert dtype == np.dtype(expected) and not weak


def test_python_scalars_are_weak_and_adopt_the_array_dtype():
    x = enp.ones(3, dtype=enp.float16)
    assert (x * 2).dtype == np.float16
    assert (x + 2.5).dtype == np.float16
    i8 = enp.ones(3, dtype=enp.int8)
    assert (i8 + 3).dtype == np.int8
    assert (i8 + 3.0).dtype == np.float32  # int8 meets a weak float: the default float
    scalar = enp.asarray(2.0)
    assert scalar.weak_type is False or scalar.dtype == np.float32


def test_weak_type_survives_scalar_only_arithmetic():
    out = ember.jit(lambda: enp.asarray(1.0) * 2)()
    assert out.dtype == np.float32


def test_x64_is_off_by_default_and_switchable():
    assert enp.arange(3).dtype == np.int32
    assert enp.asarray(np.zeros(2, np.float64)).dtype == np.float32
    with ember.config.option("enable_x64", True):
        assert dtypes.canonicalize(np.float64) == np.float64
        assert dtypes.default_int() == np.int64
    assert dtypes.canonicalize(np.float64) == np.float32


def test_result_type_follows_the_lattice():
    assert enp.result_type(np.int8, np.uint8) == np.int16
    assert enp.result_type(enp.ones(2, enp.float16), 1.0) == np.float16


def test_bfloat16_scalars_and_arrays_mix_eagerly():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = enp.asarray(np.array([1.5, 2.0], ml_dtypes.bfloat16))
    for y in (x * 2, x + ml_dtypes.bfloat16(1), enp.maximum(x, ml_dtypes.bfloat16(1.75))):
        assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np.asarray(x * 2).astype(np.float32), [3.0, 4.0])
