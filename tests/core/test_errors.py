"""Bad input gets clear exceptions of documented types naming the problem and the user's line."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import (
    ConcretizationTypeError,
    EmberTypeError,
    TracerArrayConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)


def test_dtype_mismatch_at_the_lax_level_names_both_dtypes_and_the_line():
    with pytest.raises(EmberTypeError) as info:
        lax.add(np.ones(2, np.float32), np.ones(2, np.int32))
    assert "f32" in str(info.value) and "i32" in str(info.value)
    assert "test_errors.py" in str(info.value)


def test_shape_mismatch_at_the_lax_level():
    with pytest.raises(TypeError, match=r"incompatible shapes \(2,\), \(3,\)"):
        lax.mul(np.ones(2, np.float32), np.ones(3, np.float32))


def test_tracer_used_as_int_and_as_numpy_array():
    with pytest.raises(TracerIntegerConversionError, match="int"):
        ember.jit(lambda n: enp.zeros(n))(3)
    with pytest.raises(TracerArrayConversionError, match="NumPy array"):
        ember.jit(lambda x: np.sin(np.asarray(x)))(np.ones(2, np.float32))
    with pytest.raises(ConcretizationTypeError):
        ember.jit(lambda x: float(x))(np.float32(1.0))


def test_leaked_tracer_is_detected_when_used_later():
    leaked = []

    @ember.jit
    def f(x):
        leaked.append(x)
        return x

    f(np.float32(1.0))
    with pytest.raises(UnexpectedTracerError, match="escaped"):
        enp.sin(leaked[0])


def test_matmul_shape_error_is_a_value_error():
    with pytest.raises(ValueError, match="not aligned|matmul"):
        enp.asarray(np.ones((2, 3))) @ np.ones((2, 3))


def test_non_array_argument_to_jit_is_named():
    with pytest.raises(TypeError, match="str"):
        ember.jit(lambda x: x)("hello")


@pytest.mark.parametrize("device", ["gpu:0", "cpu", 0, 3.5, ("cpu", "cpu")])
def test_device_put_names_a_bad_device_spec(device):
    x = enp.ones(2)
    with pytest.raises(ValueError, match="device_put accepts None, an ember Device") as info:
        ember.device_put(x, device)
    assert repr(device if not isinstance(device, tuple) else device[0]) in str(info.value)
    assert "test_errors.py" in str(info.value)


@pytest.mark.parametrize(
    "value, words",
    [
        (np.array(["a", "b"]), "<U1 \\(unicode strings\\)"),
        (np.array([b"a"]), "\\|S1 \\(byte strings\\)"),
        (np.array(["2020-01-01"], "M8[D]"), "datetime64\\[D\\] \\(datetimes\\)"),
        (np.zeros(2, [("a", "f4")]), "records"),
    ],
)
def test_non_numeric_numpy_data_is_a_type_error_naming_the_dtype(value, words):
    for use in (enp.asarray, ember.jit(lambda a: a), ember.device_put, enp.sin):
        with pytest.raises(EmberTypeError, match=words):
            use(value)


def test_object_arrays_are_a_type_error():
    with pytest.raises(TypeError, match="dtype object"):
        enp.asarray(np.array([object()], dtype=object))
    with pytest.raises(EmberTypeError, match="dtype object"):
        ember.jit(lambda a: a)(np.array([object()], dtype=object))
