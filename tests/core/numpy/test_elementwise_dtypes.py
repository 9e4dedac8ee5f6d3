"""ember.numpy's elementwise functions over unsigned, boolean and narrow dtypes, division and
remainder at zeros and special values, and result dtypes under x64, with JAX's answers pinned
as literals."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import skip_without_ml_dtypes

INF, NAN = np.inf, np.nan
UNSIGNED = [np.uint8, np.uint16, np.uint32]


def _assert_values_and_signs(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("jit", [False, True])
def test_unsigned_abs_sign_negative(dtype, jit):
    # stablehlo.abs and stablehlo.sign take signless integers only: these failed to compile.
    x = np.array([0, 1, 5, 200], dtype)
    wrap = ember.jit if jit else (lambda f: f)
    _assert_values_and_signs(wrap(enp.abs)(x), x)
    _assert_values_and_signs(wrap(enp.sign)(x), np.array([0, 1, 1, 1], dtype))
    _assert_values_and_signs(wrap(enp.negative)(x), np.array([0, 1, 5, 200], dtype) * 0 - x)
    _assert_values_and_signs(ember.lax.sign(x), np.array([0, 1, 1, 1], dtype))


def test_uint64_abs_and_sign():
    with ember.config.option("enable_x64", True):
        x = np.array([0, 3, 2**63 + 5], np.uint64)
        _assert_values_and_signs(enp.abs(x), x)
        _assert_values_and_signs(enp.sign(x), np.array([0, 1, 1], np.uint64))


def test_integer_division_by_zero_matches_jax():
    x = np.array([0, 1, 5, -3, 7], np.int8)
    y = np.array([3, 2, 0, 3, 0], np.int8)
    _assert_values_and_signs(enp.floor_divide(x, y), np.array([0, 0, -2, -1, -2], np.int8))
    _assert_values_and_signs(enp.remainder(x, y), np.array([0, 1, 0, 0, 0], np.int8))
    _assert_values_and_signs(enp.fmod(x, y), np.array([0, 1, 0, 0, 0], np.int8))
    u = np.array([0, 1, 5, 200, 7], np.uint8)
    v = np.array([3, 2, 0, 3, 0], np.uint8)
    _assert_values_and_signs(enp.floor_divide(u, v), np.array([0, 0, 255, 66, 255], np.uint8))
    _assert_values_and_signs(enp.remainder(u, v), np.array([0, 1, 0, 2, 0], np.uint8))
    _assert_values_and_signs(ember.jit(enp.fmod)(u, v), np.array([0, 1, 0, 2, 0], np.uint8))


FX = np.array([5.0, -5.0, 0.0, -0.0, 5.0, INF, NAN, 5.0, -0.0, 0.0, -4.0, 4.0], np.float32)
FY = np.array([INF, INF, -INF, INF, 0.0, 3.0, 3.0, -0.0, 3.0, -3.0, 2.0, -2.0], np.float32)


def test_float_remainder_and_fmod_special_values_match_numpy():
    # A zero remainder takes the sign of the divisor (NumPy and the array API; JAX keeps the
    # dividend's), while fmod's keeps the dividend's.
    _assert_values_and_signs(
        enp.remainder(FX, FY),
        np.array([5.0, INF, -0.0, 0.0, NAN, NAN, NAN, NAN, 0.0, -0.0, 0.0, -0.0], np.float32),
    )
    _assert_values_and_signs(
        enp.fmod(FX, FY),
        np.array([5.0, -5.0, 0.0, -0.0, NAN, NAN, NAN, NAN, -0.0, 0.0, -0.0, 0.0], np.float32),
    )


def test_float_floor_divide_matches_numpy():
    # A zero quotient has the sign of x / y (NumPy and the array API; JAX always gives +0).
    want = np.array(
        [0.0, -1.0, -0.0, -0.0, INF, NAN, NAN, -INF, -0.0, -0.0, -2.0, -2.0], np.float32
    )
    _assert_values_and_signs(enp.floor_divide(FX, FY), want)
    quotient, remainder = ember.jit(enp.divmod)(FX, FY)
    _assert_values_and_signs(quotient, want)
    _assert_values_and_signs(remainder, np.asarray(enp.remainder(FX, FY)))


def test_floor_divide_and_remainder_signed_zeros_in_every_float_width():
    x = np.array([-0.0, -0.0, 0.0, 0.0, -1.0, 1.0], np.float64)
    y = np.array([3.0, -3.0, 3.0, -3.0, INF, -INF], np.float64)
    for dtype in (np.float16, np.float32):  # float64 needs x64
        xs, ys = x.astype(dtype), y.astype(dtype)
        _assert_values_and_signs(enp.floor_divide(xs, ys), np.floor_divide(xs, ys))
        _assert_values_and_signs(enp.remainder(xs, ys), np.remainder(xs, ys))
        _assert_values_and_signs(ember.jit(lambda a, b: a // b)(xs, ys), np.floor_divide(xs, ys))
        _assert_values_and_signs(ember.jit(lambda a, b: a % b)(xs, ys), np.remainder(xs, ys))


def test_sign_of_either_zero_is_positive_zero():
    # XLA's sign keeps a zero's sign (as JAX); NumPy and the array API give +0.
    got = np.asarray(enp.sign(np.array([-0.0, 0.0, -2.0, NAN], np.float32)))
    _assert_values_and_signs(got, np.array([0.0, 0.0, -1.0, NAN], np.float32))
    got = np.asarray(ember.jit(enp.sign)(np.array([complex(-0.0, -0.0), 0j, 3j])))
    np.testing.assert_array_equal(got, [0, 0, 1j])
    assert not np.signbit(got.real).any() and not np.signbit(got.imag).any()


def test_booleans_in_arithmetic_become_int32():
    b = np.array([False, True, True, False])
    c = np.array([True, True, False, False])
    _assert_values_and_signs(enp.square(b), np.array([0, 1, 1, 0], np.int32))
    _assert_values_and_signs(enp.power(b, c), np.array([0, 1, 1, 1], np.int32))
    _assert_values_and_signs(enp.power(b, 2), np.array([0, 1, 1, 0], np.int32))
    _assert_values_and_signs(enp.remainder(b, c), np.array([0, 0, 0, 0], np.int32))
    _assert_values_and_signs(enp.floor_divide(b, c), np.array([0, 1, -2, -1], np.int32))


def test_integer_powers_of_unsigned_and_narrow_types():
    u = np.array([0, 1, 3, 15], np.uint8)
    _assert_values_and_signs(enp.power(u, 2), np.array([0, 1, 9, 225], np.uint8))
    _assert_values_and_signs(enp.power(u, np.uint8(3)), (u.astype(np.int64) ** 3).astype(np.uint8))
    _assert_values_and_signs(enp.square(u), np.array([0, 1, 9, 225], np.uint8))
    h = np.array([0.5, -2.0, 3.0], np.float16)
    _assert_values_and_signs(enp.power(h, 3), np.array([0.125, -8.0, 27.0], np.float16))
    with pytest.raises(ValueError, match="negative integer powers"):
        enp.power(u, -1)


@pytest.mark.parametrize(
    ("dtype", "want"),
    [
        (np.bool_, np.float32),
        (np.int8, np.float32),
        (np.uint8, np.float32),
        (np.int16, np.float32),
        (np.int32, np.float32),
        (np.uint32, np.float32),
        (np.int64, np.float64),
        (np.uint64, np.float64),
    ],
)
def test_integers_promote_to_inexact_by_width_under_x64(dtype, want):
    with ember.config.option("enable_x64", True):
        x = np.ones(3, dtype)
        for fn in (enp.sqrt, enp.exp, enp.sin, enp.arctan, enp.reciprocal, enp.log2):
            assert np.asarray(fn(x)).dtype == want, fn
        for fn in (enp.true_divide, enp.arctan2, enp.hypot, enp.copysign, enp.float_power):
            assert np.asarray(fn(x, x)).dtype == want, fn


def test_python_scalars_keep_the_array_dtype_under_x64():
    x = np.array([1.5, -2.0], np.float32)
    names = (
        "add subtract multiply divide true_divide floor_divide power float_power remainder fmod "
        "maximum minimum fmax fmin arctan2 hypot copysign nextafter logaddexp logaddexp2 heaviside"
    ).split()
    with ember.config.option("enable_x64", True):
        for name in names:
            fn = getattr(enp, name)
            for scalar in (2, 2.5):
                assert np.asarray(fn(x, scalar)).dtype == np.float32, (name, scalar)
                assert np.asarray(fn(scalar, x)).dtype == np.float32, (name, scalar)
        assert np.asarray(enp.sqrt(2)).dtype == np.float64  # a Python int alone: default float
        assert np.asarray(enp.ldexp(x, 2)).dtype == np.float32


def test_hypot_of_an_infinity_is_infinite():
    x = np.array([INF, -INF, NAN, 3.0], np.float32)
    y = np.array([INF, NAN, -INF, 4.0], np.float32)
    _assert_values_and_signs(enp.hypot(x, y), np.array([INF, INF, INF, 5.0], np.float32))


def test_log10_scales_by_the_reciprocal_of_log_10():
    x = np.array([3.0, 2.0, 1000.0], np.float32)
    # JAX multiplies by 1/log(10); dividing by log(10) rounds 3 and 2 differently in float32.
    want = np.array([0.4771212637424469, 0.3010300099849701, 3.0], np.float32)
    np.testing.assert_allclose(np.asarray(enp.log10(x)), want, rtol=2e-7)


def test_nextafter_of_bfloat16_matches_jax():
    skip_without_ml_dtypes("bfloat16")
    x = np.array([0, 1, 3, 2], enp.bfloat16)
    y = np.array([1, 2, 1, 3], enp.bfloat16)
    got = np.asarray(enp.nextafter(x, y))
    assert got.dtype == enp.bfloat16
    want = [9.183549615799121e-41, 1.0078125, 2.984375, 2.015625]
    np.testing.assert_array_equal(got.astype(np.float64), want)
