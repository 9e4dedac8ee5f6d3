"""Keyword parameters ember.numpy shares with JAX's signatures, checked by value against
NumPy: where=/initial=/mean= of the NaN-ignoring reductions, interp's period=, the method=
and unroll= hints, preferred_element_type=, and the out=/overwrite_input= arguments JAX
accepts only in their default form."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close

rng = np.random.default_rng(7)
NANS = rng.normal(size=(4, 5)).astype(np.float32)
NANS[0, 1] = NANS[2, 3] = np.nan
NANS[3, :] = np.nan
MASK = rng.random((4, 5)) > 0.3
MASK[1, :] = False


def _numpy(name, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return getattr(np, name)(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# NaN-ignoring reductions


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions_where(name, axis):
    expected = _numpy(name, NANS, axis=axis, where=MASK)
    assert_close(getattr(enp, name)(NANS, axis=axis, where=MASK), expected)
    jitted = ember.jit(lambda a, m: getattr(enp, name)(a, axis=axis, where=m))
    assert_close(jitted(NANS, MASK), expected)


@pytest.mark.parametrize("name, initial", [("nansum", 2.5), ("nanprod", -2.0)])
def test_nansum_nanprod_initial(name, initial):
    expected = getattr(np, name)(NANS, axis=1, initial=initial, where=MASK)
    assert_close(getattr(enp, name)(NANS, axis=1, initial=initial, where=MASK), expected)


@pytest.mark.parametrize("name, initial", [("nanmax", -0.5), ("nanmin", 0.5)])
def test_nanmax_nanmin_initial(name, initial):
    # An all-NaN slice (row 3) reduces to the initial value instead of NaN.
    for where in (None, MASK):
        expected = _numpy(
            name, NANS, axis=1, initial=initial, where=True if where is None else where
        )
        assert_close(getattr(enp, name)(NANS, axis=1, initial=initial, where=where), expected)


def test_nanmax_where_needs_initial():
    with pytest.raises(ValueError, match="initial"):
        enp.nanmax(NANS, axis=1, where=MASK)


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize("ddof", [0, 1])
def test_nanvar_nanstd_given_mean(name, ddof):
    mean = np.nanmean(NANS[:3], axis=1, keepdims=True)
    expected = getattr(np, name)(NANS[:3], axis=1, ddof=ddof, mean=mean)
    assert_close(getattr(enp, name)(NANS[:3], axis=1, ddof=ddof, mean=mean), expected)


def test_nanmean_integer_where():
    a = np.arange(12).reshape(3, 4)
    w = a % 3 != 0
    assert_close(enp.nanmean(a, axis=1, where=w), np.mean(a, axis=1, where=w))


# --------------------------------------------------------------------------------------------
# interp, digitize, searchsorted, polyval, convolve


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interp_period(dtype):
    x = np.array([-180, -170, -185, 185, -10, -5, 0, 365, 720], dtype)
    xp = np.array([190, -190, 350, -350], dtype)
    fp = np.array([5, 10, 3, 4], dtype)
    expected = np.interp(x, xp, fp, period=360)
    assert_close(enp.interp(x, xp, fp, period=360), expected, rtol=1e-5, atol=1e-5)
    jitted = ember.jit(lambda x, xp, fp: enp.interp(x, xp, fp, period=360))
    assert_close(jitted(x, xp, fp), expected, rtol=1e-5, atol=1e-5)


def test_interp_period_ignores_left_right():
    x, xp, fp = np.linspace(-1, 7, 9), np.array([0.0, 1, 2.5, 4]), np.array([1.0, -1, 2, 0])
    expected = np.interp(x, xp, fp, period=5)
    assert_close(enp.interp(x, xp, fp, left=99.0, right=-99.0, period=5), expected)


def test_interp_zero_period():
    with pytest.raises(ValueError, match="period"):
        enp.interp(np.ones(2), np.arange(3.0), np.arange(3.0), period=0)


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
def test_search_methods_agree(method):
    bins, x = np.array([0.0, 1, 2.5, 4]), np.array([-1.0, 0, 0.5, 2.5, 3, 9])
    assert_close(enp.searchsorted(bins, x, method=method), np.searchsorted(bins, x))
    assert_close(enp.digitize(x, bins, True, method=method), np.digitize(x, bins, True))


def test_search_method_bad():
    with pytest.raises(ValueError, match="method"):
        enp.searchsorted(np.arange(3), 1, method="bisect")
    with pytest.raises(ValueError, match="method"):
        enp.digitize(np.arange(3), np.arange(3), method="bisect")


def test_polyval_unroll():
    p, x = np.array([2.0, -1, 3, 0.5]), np.linspace(-2, 2, 7)
    for unroll in (1, 2, 16):
        assert_close(enp.polyval(p, x, unroll=unroll), np.polyval(p, x))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_preferred_element_type(mode):
    a, v = np.array([1, 2, 3, 4], np.int32), np.array([1, -1, 2], np.int32)
    result = enp.convolve(a, v, mode, precision="highest", preferred_element_type=np.float32)
    assert result.dtype == np.float32
    assert_close(result, np.convolve(a, v, mode).astype(np.float32))


# --------------------------------------------------------------------------------------------
# out= and overwrite_input=


@pytest.mark.parametrize(
    "name, args",
    [
        ("nansum", (NANS,)),
        ("nanprod", (NANS,)),
        ("nanmax", (NANS,)),
        ("nanmin", (NANS,)),
        ("nanmean", (NANS,)),
        ("nanvar", (NANS,)),
        ("nanstd", (NANS,)),
        ("median", (NANS,)),
    ],
)
def test_out_is_not_supported(name, args):
    assert_close(getattr(enp, name)(*args, out=None), _numpy(name, *args))
    with pytest.raises(NotImplementedError, match=f"'out' argument to jnp.{name}"):
        getattr(enp, name)(*args, out=np.zeros(()))


def test_quantile_options():
    a = rng.normal(size=(3, 7)).astype(np.float32)
    assert_close(enp.median(a, axis=1, overwrite_input=True), np.median(a, axis=1))
    assert_close(enp.quantile(a, 0.3, 1, None, False), np.quantile(a, 0.3, 1))
    assert_close(
        enp.percentile(a, 30, 1, None, False, "lower"),
        np.percentile(a, 30, 1, None, False, "lower"),
    )
    for name in ("quantile", "percentile"):
        with pytest.raises(ValueError, match="overwrite_input"):
            getattr(enp, name)(a, 0.5, overwrite_input=True)
        with pytest.raises(ValueError, match="out"):
            getattr(enp, name)(a, 0.5, out=np.zeros(()))
        with pytest.raises(NotImplementedError, match="weights"):
            getattr(enp, name)(a, 0.5, weights=np.ones_like(a))


@pytest.mark.parametrize("axis", [None, 0, 2])
@pytest.mark.parametrize("keepdims", [False, True])
def test_quantile_nan_and_keepdims(axis, keepdims):
    a = np.arange(24.0).reshape(2, 3, 4)
    a[0, 1, 2] = np.nan
    for q in (0.3, np.array([0.1, 0.9])):
        expected = np.quantile(a, q, axis=axis, keepdims=keepdims)
        result = enp.quantile(a, q, axis=axis, keepdims=keepdims)
        assert result.shape == expected.shape
        assert_close(result, expected)
