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


# Shapes too big for a 64-bit byte count abort the process inside XLA, so they are checked
# before the backend sees them. Run in a subprocess so that a regression cannot kill pytest.
_SHAPE_SCRIPT = """
import ember, ember.numpy as enp, ember.random
from ember import lax
x = enp.ones((2, 3))
huge = (10**12, 10**12)
cases = [
    lambda: enp.zeros(huge), lambda: enp.ones(huge), lambda: enp.empty(huge),
    lambda: enp.full(huge, 1.0), lambda: enp.zeros_like(x, shape=huge),
    lambda: enp.zeros(2**64), lambda: enp.zeros((2**62,)), lambda: enp.eye(10**12),
    lambda: enp.broadcast_to(x[0, 0], huge), lambda: enp.tile(x, huge),
    lambda: enp.repeat(x, 10**19), lambda: ember.random.normal(ember.random.key(0), huge),
    lambda: lax.broadcast_in_dim(1.0, huge, ()), lambda: lax.iota("float32", 2**63),
    lambda: ember.jit(lambda: enp.zeros(huge))(),
]
for case in cases:
    try:
        case()
        print("no error")
    except ValueError as err:
        assert "is too big" in str(err) and "test" not in str(err), err
        print("ValueError")
try:
    enp.zeros((10**6, 10**6))  # 4 TB: a size that fits, but cannot be allocated
    print("no error")
except ember.errors.OutOfMemoryError as err:
    assert isinstance(err, MemoryError)
    print("OutOfMemoryError")
"""


def test_impossible_shapes_raise_instead_of_aborting():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _SHAPE_SCRIPT], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["ValueError"] * 15 + ["OutOfMemoryError"], proc.stdout


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: enp.zeros((-1, 2)), ValueError, "non-negative dimensions, got \\(-1, 2\\)"),
        (lambda: enp.zeros((2.5, 2)), TypeError, "sequence of integers, got \\(2.5, 2\\)"),
        (lambda: enp.broadcast_to(enp.ones(3), (-1, 3)), ValueError, "non-negative"),
        (lambda: enp.reshape(enp.ones(6), (2.0, 3)), TypeError, "integers, got \\(2.0, 3\\)"),
        (lambda: enp.reshape(enp.ones(6), (-2, -3)), ValueError, "got \\(-2, -3\\)"),
        (lambda: enp.ones(6).reshape(-1, -1), ValueError, "one unknown dimension"),
    ],
)
def test_bad_shapes_name_the_shape(make, error, words):
    with pytest.raises(error, match=words) as info:
        make()
    assert "test_errors.py" in str(info.value)
