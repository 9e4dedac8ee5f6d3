"""Dtype canonicalisation, weak types and JAX's promotion lattice."""

import warnings

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


# Result dtypes of functions that make integer and boolean inputs inexact, as JAX 0.10.2
# gives them: for inputs int8 int32 int64 bool uint8, without x64 | with x64. Most follow
# the width of the input (int64 -> float64, narrower -> float32); angle, rint and unwrap
# use the default float.
_INEXACT_RESULTS = {
    "mean": (lambda x: enp.mean(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "var": (lambda x: enp.var(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "std": (lambda x: enp.std(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "average": (lambda x: enp.average(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "average_w": (lambda x: enp.average(x, weights=x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "median": (lambda x: enp.median(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "quantile": (lambda x: enp.quantile(x, 0.5), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "percentile": (lambda x: enp.percentile(x, 50), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "nanmean": (lambda x: enp.nanmean(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "nanvar": (lambda x: enp.nanvar(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "nanstd": (lambda x: enp.nanstd(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "nanmedian": (lambda x: enp.nanmedian(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "nanquantile": (lambda x: enp.nanquantile(x, 0.5), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "nanpercentile": (lambda x: enp.nanpercentile(x, 50), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "fft": (lambda x: enp.fft.fft(x), "c8 c8 c8 c8 c8 | c8 c8 c16 c8 c8"),
    "rfft": (lambda x: enp.fft.rfft(x), "c8 c8 c8 c8 c8 | c8 c8 c16 c8 c8"),
    "ifft": (lambda x: enp.fft.ifft(x), "c8 c8 c8 c8 c8 | c8 c8 c16 c8 c8"),
    "fftn": (lambda x: enp.fft.fftn(x), "c8 c8 c8 c8 c8 | c8 c8 c16 c8 c8"),
    "irfft": (lambda x: enp.fft.irfft(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "hfft": (lambda x: enp.fft.hfft(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "sin": (lambda x: enp.sin(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "sqrt": (lambda x: enp.sqrt(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "arctan2": (lambda x: enp.arctan2(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "hypot": (lambda x: enp.hypot(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "true_divide": (lambda x: enp.true_divide(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "linspace": (lambda x: enp.linspace(x[0], x[1], 3), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "logspace": (lambda x: enp.logspace(x[0], x[1], 3), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "interp": (lambda x: enp.interp(x, x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "cov": (lambda x: enp.cov(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "corrcoef": (lambda x: enp.corrcoef(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "gradient": (lambda x: enp.gradient(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "trapezoid": (lambda x: enp.trapezoid(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "exp2": (lambda x: enp.exp2(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "log1p": (lambda x: enp.log1p(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "sinc": (lambda x: enp.sinc(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "i0": (lambda x: enp.i0(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "deg2rad": (lambda x: enp.deg2rad(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "angle": (lambda x: enp.angle(x), "f4 f4 f4 f4 f4 | f8 f8 f8 f8 f8"),
    "rint": (lambda x: enp.rint(x), "f4 f4 f4 f4 f4 | f8 f8 f8 f8 f8"),
    "log": (lambda x: enp.log(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "cbrt": (lambda x: enp.cbrt(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "logaddexp": (lambda x: enp.logaddexp(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "float_power": (lambda x: enp.float_power(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "convolve": (lambda x: enp.convolve(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "correlate": (lambda x: enp.correlate(x, x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "arccos": (lambda x: enp.arccos(x), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
    "unwrap": (lambda x: enp.unwrap(x), "f4 f4 f4 f4 f4 | f8 f8 f8 f8 f8"),
    "mean_dtype_none_axis": (lambda x: enp.mean(x, axis=0), "f4 f4 f4 f4 f4 | f4 f4 f8 f4 f4"),
}  # fmt: skip
_INEXACT_INPUTS = ("int8", "int32", "int64", "bool", "uint8")


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("name", sorted(_INEXACT_RESULTS))
def test_integer_inputs_become_jax_inexact_dtypes(name, x64):
    fn, table = _INEXACT_RESULTS[name]
    expected = table.split(" | ")[int(x64)].split()
    with ember.config.option("enable_x64", x64):
        for dtype, want in zip(_INEXACT_INPUTS, expected):
            x = enp.asarray(np.array([1, 2, 3, 4]).astype(dtype))
            got = fn(x).dtype
            assert got == np.dtype(want), f"{name}({dtype}): {got}, JAX gives {np.dtype(want)}"


def test_integer_operands_of_inexact_functions_keep_their_values():
    x = enp.asarray(np.array([1, 2, -3], np.int8))
    np.testing.assert_allclose(enp.arctan2(x, x), np.arctan2([1.0, 2, -3], [1.0, 2, -3]))
    np.testing.assert_array_equal(enp.rint(x), [1.0, 2.0, -3.0])
    np.testing.assert_allclose(enp.convolve(x, x), np.convolve([1, 2, -3], [1, 2, -3]))
    changed = enp.diff(np.array([True, False, False, True]))
    assert changed.dtype == np.bool_
    np.testing.assert_array_equal(changed, [True, False, True])
    np.testing.assert_allclose(enp.linspace(np.int8(1), np.int8(3), 3), [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "make, where",
    [
        (lambda: ember.random.uniform(ember.random.key(0), (3,), dtype=np.float64), "uniform"),
        (lambda: ember.random.normal(ember.random.key(0), (3,), dtype="float64"), "normal"),
        (lambda: enp.zeros(3, dtype=np.int64), "zeros"),
        (lambda: enp.ones(3, dtype=np.complex128), "ones"),
        (lambda: enp.asarray([1.0], dtype=np.float64), "asarray"),
    ],
)
def test_an_explicit_64_bit_dtype_narrowed_by_x64_being_off_is_warned_about(make, where):
    with pytest.warns(UserWarning, match=f"requested in {where} is not available"):
        out = make()
    assert np.dtype(out.dtype).itemsize <= 8 and np.dtype(out.dtype) != np.float64


def test_default_dtypes_and_python_types_are_not_warned_about():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enp.zeros(3, dtype=float).dtype == np.float32
        assert enp.asarray([1, 2], dtype=int).dtype == np.int32
        ember.random.uniform(ember.random.key(0), (3,), dtype=np.float32)
        enp.zeros(3)


def test_a_64_bit_numpy_dtype_object_is_warned_about_too():
    with pytest.warns(UserWarning, match="requested in zeros is not available"):
        enp.zeros(3, dtype=np.dtype("float64"))
