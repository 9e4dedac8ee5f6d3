"""ffi_call's keyword attributes as MLIR attributes, typed as JAX 0.10.2 types them."""

from __future__ import annotations

import numpy as np
import pytest

from ember._src.ffi.attributes import attribute, backend_config


def test_python_scalars():
    assert attribute("t", "a", True) == "true"
    assert attribute("t", "a", False) == "false"
    assert attribute("t", "a", 3) == "3 : i64"
    assert attribute("t", "a", -7) == "-7 : i64"
    assert attribute("t", "a", 1.5) == "0x3FF8000000000000 : f64"  # JAX: 1.500000e+00 : f64


def test_numpy_scalars_keep_their_dtype():
    assert attribute("t", "a", np.float32(1e-5)) == "0x3727C5AC : f32"
    # the same value as JAX 0.10.2's "9.99999974E-6 : f32"
    assert np.float32(9.99999974e-6).view(np.uint32) == 0x3727C5AC
    assert attribute("t", "a", np.float16(1)) == "0x3C00 : f16"
    assert attribute("t", "a", np.int8(2)) == "2 : i8"
    assert attribute("t", "a", np.uint32(5)) == "5 : ui32"
    assert attribute("t", "a", np.bool_(True)) == "true"
    assert attribute("t", "a", np.float32(np.inf)) == "0x7F800000 : f32"


def test_strings_escape_quotes_backslashes_and_unprintables():
    assert attribute("t", "a", "hi") == '"hi"'
    assert attribute("t", "a", 'a"b\\c\n') == '"a\\22b\\5Cc\\0A"'
    assert attribute("t", "a", "é") == '"\\C3\\A9"'


def test_arrays_are_dense_attributes():
    got = attribute("t", "a", np.arange(3, dtype=np.int32))
    assert got == 'dense<"0x000000000100000002000000"> : tensor<3xi32>'
    assert attribute("t", "a", np.array([True, False])) == "dense<[true, false]> : tensor<2xi1>"


def test_dicts_nest_and_names_are_sorted():
    config = backend_config("t", {"b": 1, "a": {"y": np.float32(0), "x": "s"}})
    assert config == '{a = {x = "s", y = 0x00000000 : f32}, b = 1 : i64}'
    assert backend_config("t", {}) == "{}"


@pytest.mark.parametrize("value", [[1, 2], None, object(), np.array(["a"]), 1j])
def test_other_values_are_type_errors_naming_the_attribute(value):
    with pytest.raises(TypeError, match="ffi_call\\('t'\\): attribute a="):
        attribute("t", "a", value)
