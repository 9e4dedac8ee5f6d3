"""convert_element_type on the reference backend gives XLA's answers."""

import numpy as np
import pytest

import ember.numpy as enp
from ember import lax

_FLOATS = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 254.7, -3.7, 255.5, 256.0], np.float32)

# What JAX 0.10.2 on XLA's CPU backend gives for _FLOATS.astype(dtype).
_XLA = {
    "uint8": [0, 255, 0, 255, 0, 254, 0, 255, 255],
    "int8": [0, 127, -128, 127, -128, 127, -3, 127, 127],
    "int16": [0, 32767, -32768, 32767, -32768, 254, -3, 255, 256],
    "uint16": [0, 65535, 0, 65535, 0, 254, 0, 255, 256],
    "int32": [0, 2147483647, -2147483648, 2147483647, -2147483648, 254, -3, 255, 256],
    "uint32": [0, 4294967295, 0, 4294967295, 0, 254, 0, 255, 256],
}


@pytest.mark.parametrize("dtype", sorted(_XLA))
def test_float_to_int_saturates_and_sends_nan_to_zero_as_xla_does(dtype):
    got = lax.convert_element_type(enp.asarray(_FLOATS), np.dtype(dtype))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(got), np.array(_XLA[dtype], dtype))


def test_the_sharp_bits_unsafe_cast_example():
    got = enp.arange(254.0, 258.0).astype("uint8")
    np.testing.assert_array_equal(np.asarray(got), [254, 255, 255, 255])


def test_int_to_int_still_wraps_around_as_in_xla():
    got = enp.array([300, -5], np.int32).astype("uint8")
    np.testing.assert_array_equal(np.asarray(got), [44, 251])


def test_broadcast_in_dim_to_a_negative_dimension_is_a_value_error():
    """Caught before lowering: XLA refuses such a program with a parse error."""
    with pytest.raises(ValueError, match=r"non-negative dimensions, got \(3, -1\)"):
        lax.broadcast_in_dim(enp.ones(3), (3, -1), (0,))
