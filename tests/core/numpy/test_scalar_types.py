"""``ember.numpy.float32`` and kin: calling one makes an array; elsewhere it is its dtype."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import Array


def test_calling_a_scalar_type_makes_an_array_as_in_jax():
    x = enp.float32(1e-45)
    assert isinstance(x, Array) and x.dtype == np.float32 and not x.weak_type
    assert repr(enp.int32(np.arange(3))) == "Array([0, 1, 2], dtype=int32)"
    assert repr(enp.bool_(1)) == "Array(True, dtype=bool)"


def test_calling_one_under_jit_converts_the_traced_value():
    out = ember.jit(lambda x: enp.float32(x) * 2)(3)
    assert out.dtype == np.float32 and float(out) == 6.0


def test_a_scalar_type_stands_for_its_dtype():
    assert np.dtype(enp.float32) == np.float32
    assert enp.float32 == np.float32 and np.float32 == enp.float32
    assert np.dtype("float32") == enp.float32
    assert enp.float32 == np.dtype("float32") and enp.float32 != np.dtype("float64")
    assert np.dtype("float32") in (enp.float16, enp.float32)  # the item's __eq__ goes first
    assert np.dtype("int32") not in (enp.float32, enp.uint32)
    assert enp.float32 != "float32" and enp.float32 != enp.float64
    assert {np.float32: 1}[enp.float32] == 1
    assert enp.zeros(2, enp.int8).dtype == np.int8
    assert enp.ones(2).astype(enp.uint8).dtype == np.uint8
    assert enp.issubdtype(enp.float32, enp.floating)
    assert enp.finfo(enp.float16).bits == 16 and enp.iinfo(enp.int32).max == 2**31 - 1


def test_isinstance_asks_about_numpys_scalar_type():
    assert isinstance(np.float32(1), enp.float32)
    assert not isinstance(np.float64(1), enp.float32)


def test_64_bit_types_narrow_with_a_warning_when_x64_is_off():
    with pytest.warns(UserWarning, match="float64 requested in asarray is not available"):
        x = enp.float64(1)
    assert x.dtype == np.float32
