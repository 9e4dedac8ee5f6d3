"""Bad input gets clear exceptions of documented types naming the problem and the user's line."""

import re

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.random
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


@pytest.mark.parametrize(
    "contract",
    [
        lambda a, b: enp.dot(a, b),
        lambda a, b: enp.matmul(a, b),
        lambda a, b: enp.asarray(a) @ b,
        lambda a, b: enp.tensordot(a, b, 1),
        lambda a, b: enp.inner(a, b.T),
        lambda a, b: enp.einsum("ij,jk", a, b),
        lambda a, b: ember.vmap(enp.dot, in_axes=(None, 0))(a, b[None]),
    ],
)
def test_contraction_shape_errors_are_type_and_value_errors(contract):
    # JAX raises TypeError here (its tutorials catch that), NumPy ValueError: both must work.
    a, b = np.ones((5, 4), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(ember.errors.ShapeMismatchError) as info:
        contract(a, b)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


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


@pytest.mark.slow
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
        (lambda: enp.arange(0, 1e20), ValueError, "arange's length \\(10+,\\) is too big"),
        (lambda: enp.arange(5, 10**19), ValueError, "arange's length \\(9+5,\\) is too big"),
        (lambda: enp.arange(0, 10**9, 0.5), ValueError, "would have 2000000000 elements"),
        (lambda: enp.arange(0, 5, 0), ValueError, "step must not be zero"),
        (lambda: enp.arange(0, np.inf), ValueError, "no finite length"),
        (lambda: ember.random.permutation(ember.random.key(0), -1), ValueError, "non-negative"),
    ],
)
def test_bad_shapes_name_the_shape(make, error, words):
    with pytest.raises(error, match=words) as info:
        make()
    assert "test_errors.py" in str(info.value)


def test_every_documented_exception_is_exported_with_its_public_module():
    import pathlib

    import ember.errors

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "errors.md").read_text()
    documented = {line.split("`")[1] for line in doc.splitlines() if line.startswith("| `")}
    assert {"ControlFlowTypeError", "CustomDerivativeError", "OutOfMemoryError"} <= documented
    for name in documented:
        cls = getattr(ember.errors, name)
        assert cls.__module__ == "ember.errors", name
        # every documented class is ember's own error, or its one warning category
        assert issubclass(cls, (ember.errors.EmberError, ember.errors.PluginWarning)), name


def test_control_flow_and_custom_derivative_errors_are_caught_by_their_public_names():
    import ember.errors

    with pytest.raises(ember.errors.ControlFlowTypeError, match="same structure"):
        lax.cond(True, lambda: 1.0, lambda: (1.0, 2.0))

    @ember.custom_jvp
    def f(x):
        return x

    f.defjvp(lambda primals, tangents: (primals[0], (tangents[0], tangents[0])))
    with pytest.raises(ember.errors.CustomDerivativeError):
        ember.jvp(f, (1.0,), (1.0,))


@pytest.mark.parametrize(
    "fun, words",
    [
        (lambda: ember.jit(lambda x: float(x))(1.0), "inside the tracing of <lambda>"),
        (lambda: ember.grad(lambda x: float(x))(1.0), "inside differentiation"),
        (lambda: ember.vmap(lambda x: bool(x))(enp.ones(3)), "inside vmap \\(axis size 3\\)"),
    ],
)
def test_concretization_messages_name_the_transformation_in_user_words(fun, words):
    with pytest.raises(ConcretizationTypeError, match=words) as info:
        fun()
    assert "Trace" not in str(info.value)


_TRACEBACK_SCRIPT = """
import ember

@ember.jit
def f(x):
    return float(x)

f(1.0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("filtering", ["auto", "off"])
def test_uncaught_ember_errors_hide_internal_frames_unless_asked(filtering):
    import os
    import subprocess
    import sys

    env = dict(os.environ, EMBER_TRACEBACK_FILTERING=filtering)
    proc = subprocess.run(
        [sys.executable, "-c", _TRACEBACK_SCRIPT], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    assert "ember.errors.ConcretizationTypeError" in proc.stderr
    assert 'File "<string>", line 6, in f' in proc.stderr  # the user's line is always shown
    internal = os.sep + "_src" + os.sep in proc.stderr
    assert internal == (filtering == "off"), proc.stderr
    assert ("internal frame(s) hidden" in proc.stderr) == (filtering == "auto")


@pytest.mark.parametrize(
    "use",
    [
        lambda d: enp.asarray(np.ones(2), device=d),
        lambda d: enp.zeros(2, device=d),
        lambda d: enp.ones(2).astype("int32", device=d),
        lambda d: enp.ones(2).to_device(d),
        lambda d: ember.jit(lambda a: a, device=d),
    ],
)
def test_device_keywords_name_a_bad_device(use):
    with pytest.raises(ValueError, match="must be None, an ember Device .* got 'gpu:0' of"):
        use("gpu:0")
    device = ember.devices()[0]
    out = use(device)
    if isinstance(out, ember.Array):
        assert out.device == device


@pytest.mark.parametrize("dtype", [str, object, "U3", "M8[s]"])
def test_non_numeric_dtype_arguments_are_type_errors(dtype):
    name = re.escape(str(np.dtype(dtype)))
    for use in (
        lambda: enp.zeros(3, dtype=dtype),
        lambda: enp.asarray([1, 2], dtype=dtype),
        lambda: enp.ones(3).astype(dtype),
        lambda: lax.convert_element_type(np.float32(1), np.dtype(dtype)),
    ):
        with pytest.raises(EmberTypeError, match=f"dtype {name} .* cannot be ember arrays"):
            use()


@pytest.mark.parametrize(
    "args", [(5,), (2, 9), (9, 2, -3), (1, 5.5), (0.0, 1.0, 0.3), (np.int8(3), np.int8(7))]
)
def test_arange_without_host_values_matches_numpy(args):
    got = enp.arange(*args)
    np.testing.assert_allclose(np.asarray(got), np.arange(*args), rtol=1e-6)


def test_float0_tangents_are_still_accepted():
    no_tangent = np.zeros((), ember.dtypes.float0)
    _, tangent = ember.jvp(lambda x, n: x * n, (np.float32(2.0), 3), (np.float32(1.0), no_tangent))
    assert float(tangent) == 3.0
