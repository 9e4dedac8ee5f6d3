"""Statistics of ember.numpy against NumPy: averages, covariance and correlation, bincount,
NaN-ignoring arg-reductions, cumulative reductions and quantiles, histograms and setxor1d,
eagerly and under jit, vmap and grad."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.test_util import check_grads
from tests.core.util import assert_close, assert_matches_numpy, skip_without_ml_dtypes

rng = np.random.default_rng(1)
X = rng.normal(size=(3, 6)).astype(np.float32)
W = np.linspace(0.5, 2.0, 6).astype(np.float32)
FW = np.array([1, 2, 1, 3, 1, 1])
AW = np.array([0.5, 1, 2, 1, 1, 0.3])
C = (rng.normal(size=(2, 5)) + 1j * rng.normal(size=(2, 5))).astype(np.complex64)
NANS = np.array(
    [[1.0, np.nan, 3, 7, -2], [np.nan] * 5, [2, 5, np.nan, 1, 0.5], [4, 4, 4, np.nan, -np.inf]],
    np.float32,
)
POINTS = rng.normal(size=(40, 3))


def _compare(got, expected, rtol=1e-5, atol=1e-5):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _compare(g, e, rtol, atol)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


CASES = {
    "average": lambda m: m.average(X),
    "average_axis": lambda m: m.average(X, axis=0),
    "average_weights": lambda m: m.average(X, axis=1, weights=W),
    "average_full_weights": lambda m: m.average(X, weights=np.abs(X)),
    "average_returned": lambda m: m.average(X, axis=1, weights=W, returned=True),
    "average_keepdims": lambda m: m.average(X, axis=1, weights=W, keepdims=True),
    "average_int": lambda m: m.average(np.array([1, 2, 4]), weights=np.array([1, 3, 1])),
    "cov": lambda m: m.cov(X),
    "cov_bias": lambda m: m.cov(X, bias=True),
    "cov_ddof": lambda m: m.cov(X, ddof=2),
    "cov_rowvar": lambda m: m.cov(X.T, rowvar=False),
    "cov_y": lambda m: m.cov(X[0], X[1]),
    "cov_fweights": lambda m: m.cov(X, fweights=FW),
    "cov_aweights": lambda m: m.cov(X, aweights=AW),
    "cov_both": lambda m: m.cov(X, fweights=FW, aweights=AW),
    "cov_both_ddof0": lambda m: m.cov(X, fweights=FW, aweights=AW, ddof=0),
    "cov_1d": lambda m: m.cov(X[0]),
    "cov_int": lambda m: m.cov(np.array([1, 2, 4, 7])),
    "cov_complex": lambda m: m.cov(C),
    "cov_dtype": lambda m: m.cov(np.array([[1, 2, 4], [0, 3, 1]]), dtype=np.float32),
    "corrcoef": lambda m: m.corrcoef(X),
    "corrcoef_y": lambda m: m.corrcoef(X[0], X[1]),
    "corrcoef_rowvar": lambda m: m.corrcoef(X.T, rowvar=False),
    "corrcoef_complex": lambda m: m.corrcoef(C),
    "corrcoef_1d": lambda m: m.corrcoef(X[0]),
    "ptp": lambda m: m.ptp(X),
    "ptp_axis": lambda m: m.ptp(X, axis=1, keepdims=True),
    "ptp_uint8": lambda m: m.ptp(np.array([1, 5, 3], np.uint8)),
    "bincount": lambda m: m.bincount(np.array([0, 2, 2, 5, 1])),
    "bincount_minlength": lambda m: m.bincount(np.array([0, 2]), minlength=5),
    "bincount_weights": lambda m: m.bincount(np.array([0, 2, 2]), weights=np.array([1.5, 2, 1])),
    "bincount_empty": lambda m: m.bincount(np.zeros(0, np.int32), minlength=3),
    "nanargmax": lambda m: m.nanargmax(NANS[[0, 2, 3]], axis=1),
    "nanargmin": lambda m: m.nanargmin(NANS[[0, 2, 3]], axis=1),
    "nanargmax_flat": lambda m: m.nanargmax(NANS),
    "nanargmin_keepdims": lambda m: m.nanargmin(NANS[[0, 2]], axis=0, keepdims=True),
    "nanargmax_int": lambda m: m.nanargmax(np.array([[1, 5, 3], [7, 0, 7]]), axis=1),
    "nancumsum": lambda m: m.nancumsum(NANS),
    "nancumsum_axis": lambda m: m.nancumsum(NANS, axis=1),
    "nancumprod": lambda m: m.nancumprod(NANS[[0, 2]], axis=0),
    "nancumsum_int": lambda m: m.nancumsum(np.array([1, 2, 3]), dtype=np.float32),
    "nanmedian": lambda m: m.nanmedian(NANS[[0, 2, 3]], axis=1),
    "nanmedian_flat": lambda m: m.nanmedian(NANS),
    "nanmedian_keepdims": lambda m: m.nanmedian(NANS, axis=0, keepdims=True),
    "nanpercentile": lambda m: m.nanpercentile(NANS, 30),
    "nanpercentile_array": lambda m: m.nanpercentile(NANS, np.array([10.0, 50, 95]), axis=1),
    "nanquantile_tuple_axis": lambda m: m.nanquantile(NANS.reshape(2, 2, 5), 0.3, axis=(0, 2)),
    "nanquantile_keepdims": lambda m: m.nanquantile(
        NANS.reshape(2, 2, 5), np.array([0.2, 0.7]), axis=(0, 2), keepdims=True
    ),
    "nanquantile_int": lambda m: m.nanquantile(np.array([[1, 5, 3, 2]]), 0.4, axis=1),
    "histogram_bin_edges": lambda m: m.histogram_bin_edges(X, bins=4),
    "histogram_bin_edges_range": lambda m: m.histogram_bin_edges(X, bins=3, range=(-1, 2)),
    "histogram_bin_edges_array": lambda m: m.histogram_bin_edges(X, bins=np.array([0.0, 1, 3])),
    "histogram_bin_edges_single": lambda m: m.histogram_bin_edges(np.array([2.0, 2.0]), bins=2),
    "histogram2d": lambda m: m.histogram2d(POINTS[:, 0], POINTS[:, 1], bins=(3, 4)),
    "histogram2d_edges": lambda m: m.histogram2d(
        POINTS[:, 0], POINTS[:, 1], bins=np.array([-2.0, 0, 0.5, 3])
    ),
    "histogram2d_density": lambda m: m.histogram2d(
        POINTS[:, 0], POINTS[:, 1], bins=3, range=[(-1, 1), (-2, 2)], density=True
    ),
    "histogramdd": lambda m: m.histogramdd(POINTS, bins=[2, 3, np.array([-1.0, 0, 2])]),
    "histogramdd_weighted": lambda m: m.histogramdd(
        POINTS,
        bins=(2, 3, 2),
        range=[(-2, 2), None, (-1, 1)],
        weights=np.abs(POINTS[:, 0]),
        density=True,
    ),
    "histogramdd_1d": lambda m: m.histogramdd(POINTS[:, 0], bins=5),
    "setxor1d": lambda m: m.setxor1d(np.array([1, 2, 2, 3, 7]), np.array([3, 4, 4, 9])),
    "setxor1d_2d": lambda m: m.setxor1d(np.array([[5, 1], [1, 0]]), np.array([0.5, 5])),
    "setxor1d_unique": lambda m: m.setxor1d(
        np.array([1, 2, 3]), np.array([2, 3, 4]), assume_unique=True
    ),
}

QUANTILE_METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = CASES[name](np)
    _compare(CASES[name](enp), expected)


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_nanquantile_methods(method):
    q = np.array([0.0, 0.1, 0.5, 0.75, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanquantile(NANS, q, axis=1, method=method)
    _compare(enp.nanquantile(NANS, q, axis=1, method=method), expected)


def test_all_nan_slices():
    assert np.isnan(np.asarray(enp.nanmedian(NANS[1])))
    np.testing.assert_array_equal(np.asarray(enp.nanargmax(NANS, axis=1)), [3, -1, 1, 0])
    np.testing.assert_array_equal(np.asarray(enp.nanargmin(NANS, axis=1)), [4, -1, 4, 4])


def test_statistics_under_jit():
    jitted = ember.jit(
        lambda a: (enp.cov(a, aweights=AW), enp.nanmedian(a, axis=1), enp.average(a, 1, W))
    )
    covariance, medians, averages = jitted(X)
    _compare(covariance, np.cov(X, aweights=AW))
    _compare(medians, np.median(X, axis=1))
    _compare(averages, np.average(X, axis=1, weights=W))
    edges = ember.jit(lambda a: enp.histogram_bin_edges(a, bins=5))(X)
    _compare(edges, np.histogram_bin_edges(X, bins=5))
    counts, _ = ember.jit(lambda p: enp.histogramdd(p, bins=3, range=[(-2, 2)] * 3))(POINTS)
    _compare(counts, np.histogramdd(POINTS, bins=3, range=[(-2, 2)] * 3)[0])


def test_bincount_static_length():
    values = np.array([0, 2, 2, 5, 1, -1])
    counted = ember.jit(lambda x: enp.bincount(x, length=4))(values)
    np.testing.assert_array_equal(np.asarray(counted), [2, 1, 2, 0])  # -1 counts as 0, 5 drops
    rows = ember.vmap(lambda x: enp.bincount(x, length=3))(np.array([[0, 1, 1], [2, 2, 2]]))
    np.testing.assert_array_equal(np.asarray(rows), [[1, 2, 0], [0, 0, 3]])
    with pytest.raises(ember.errors.ConcretizationTypeError, match="length="):
        ember.jit(enp.bincount)(values)
    with pytest.raises(TypeError, match="integer"):
        enp.bincount(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="1-D"):
        enp.bincount(np.array([[0, 1]]))


def test_setxor1d_static_size():
    a, b = np.array([1, 2, 2, 3, 7]), np.array([3, 4, 4, 9])
    padded = ember.jit(lambda x, y: enp.setxor1d(x, y, size=6, fill_value=0))(a, b)
    np.testing.assert_array_equal(np.asarray(padded), [1, 2, 4, 7, 9, 0])
    default_fill = ember.jit(lambda x, y: enp.setxor1d(x, y, size=6))(a, b)
    np.testing.assert_array_equal(np.asarray(default_fill), [1, 2, 4, 7, 9, 1])
    truncated = ember.jit(lambda x, y: enp.setxor1d(x, y, size=3))(a, b)
    np.testing.assert_array_equal(np.asarray(truncated), [1, 2, 4])
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.setxor1d)(a, b)


def test_statistics_under_vmap():
    batch = rng.normal(size=(4, 2, 6)).astype(np.float32)
    _compare(ember.vmap(enp.cov)(batch), np.stack([np.cov(b) for b in batch]))
    _compare(ember.vmap(enp.corrcoef)(batch), np.stack([np.corrcoef(b) for b in batch]))
    medians = ember.vmap(lambda r: enp.nanmedian(r))(NANS[[0, 2, 3]])
    _compare(medians, [np.nanmedian(r) for r in NANS[[0, 2, 3]]])
    args = ember.vmap(enp.nanargmax)(NANS)
    np.testing.assert_array_equal(np.asarray(args), [3, -1, 1, 0])


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, w: enp.average(a, axis=1, weights=w),
        lambda a, w: enp.cov(a, aweights=w),
        lambda a, w: enp.corrcoef(a * w),
        lambda a, w: enp.nanquantile(a * w, np.array([0.3, 0.6]), axis=1),
        lambda a, w: enp.nancumsum(a * w, axis=1),
        lambda a, w: enp.ptp(a * w, axis=0),
    ],
    ids=["average", "cov", "corrcoef", "nanquantile", "nancumsum", "ptp"],
)
def test_gradients(fn):
    with ember.config.option("enable_x64", True):
        check_grads(ember.jit(fn), (X.astype(np.float64), W.astype(np.float64)), order=1)


def test_nan_quantile_gradient_skips_nans():
    with ember.config.option("enable_x64", True):
        row = np.array([1.0, np.nan, 3.0, 2.0])
        g = ember.grad(lambda r: enp.nanmedian(r))(row)
        np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 0.0, 1.0])


def test_errors():
    with pytest.raises(ValueError, match="axis must be given"):
        enp.average(X, weights=W)
    with pytest.raises(ValueError, match="length of weights"):
        enp.average(X, axis=0, weights=W)
    with pytest.raises(TypeError, match="fweights must be integers"):
        enp.cov(X, fweights=AW)
    with pytest.raises(ValueError, match="one entry per observation"):
        enp.cov(X, aweights=AW[:3])
    with pytest.raises(ValueError, match="negative"):
        enp.cov(X, aweights=-AW)
    with pytest.raises(ValueError, match="method"):
        enp.nanquantile(X, 0.5, method="fancy")
    with pytest.raises(NotImplementedError, match="weights"):
        enp.nanquantile(X, 0.5, weights=X)
    with pytest.raises(ValueError, match="one entry per dimension"):
        enp.histogramdd(POINTS, bins=[2, 3])
    assert_close(enp.cov(X, fweights=FW), np.cov(X, fweights=FW), rtol=1e-5)


# JAX's answers (0.10.2) for 16-bit float reductions, which accumulate in float32 and cast the
# result back: {name: (float16 answer, bfloat16 answer)}.
_LOW_PRECISION = {
    "sum": (lambda s, o, r, p: enp.sum(s), 1000.0, 1000.0),
    "sum_axis": (lambda s, o, r, p: enp.sum(s.reshape(100, 100), axis=0)[0], 10.0, 10.0),
    "sum_initial": (lambda s, o, r, p: enp.sum(s, initial=1), 1001.0, 1000.0),
    "prod": (lambda s, o, r, p: enp.prod(p), 6.984375, 4.75),
    "mean": (lambda s, o, r, p: enp.mean(o), 1.0, 1.0),
    "mean_small": (lambda s, o, r, p: enp.mean(s), 0.0999755859375, 0.10009765625),
    "mean_where": (lambda s, o, r, p: enp.mean(o, where=o > 0), 1.0, 1.0),
    "var": (lambda s, o, r, p: enp.var(r), 0.25, 0.275390625),
    "var_ddof": (lambda s, o, r, p: enp.var(r, ddof=1), 0.25, 0.275390625),
    "var_where": (lambda s, o, r, p: enp.var(r, where=r > 0), 0.25, 0.275390625),
    "std": (lambda s, o, r, p: enp.std(r), 0.5, 0.5234375),
    "nansum": (lambda s, o, r, p: enp.nansum(s), 1000.0, 1000.0),
    "nanprod": (lambda s, o, r, p: enp.nanprod(p), 6.984375, 4.75),
    "nanvar": (lambda s, o, r, p: enp.nanvar(r), 0.25, 0.275390625),
    "nanstd": (lambda s, o, r, p: enp.nanstd(r), 0.5, 0.5234375),
    "average": (lambda s, o, r, p: enp.average(o), 1.0, 1.0),
    "average_weights": (lambda s, o, r, p: enp.average(s, weights=s), 0.0999755859375,
                        0.10009765625),
    # JAX gives NaN for float16 here: it counts in float16, which overflows at 65504.
    "nanmean": (lambda s, o, r, p: enp.nanmean(o), 1.0, 1.0),
    "nanmean_where": (lambda s, o, r, p: enp.nanmean(o, where=o > 0), 1.0, 1.0),
    "average_many_weights": (lambda s, o, r, p: enp.average(o, weights=o), 1.0, 1.0),
    "median": (lambda s, o, r, p: enp.median(o), 1.0, 1.0),
    "nanmedian": (lambda s, o, r, p: enp.nanmedian(o), 1.0, 1.0),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_LOW_PRECISION))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_float_reductions_accumulate_in_float32(name, dtype):
    """Sums of 10 000 tenths and means of 70 000 ones: accumulated in float16 they stop
    growing at 1024 (1000 tenths give 996.5) and the count 70 000 overflows to inf."""
    skip_without_ml_dtypes(dtype)
    fn, want16, want_bf16 = _LOW_PRECISION[name]
    dt = getattr(enp, dtype)
    s = enp.full(10000, 0.1, dtype=dt)
    o = enp.ones(70000, dt)
    r = (enp.arange(3000) % 7).astype(dt) * dt(0.25) + dt(100)
    p = enp.full(200, 1.01, dt)
    got = fn(s, o, r, p)
    assert got.dtype == np.dtype(dt)
    assert float(got) == (want16 if dtype == "float16" else want_bf16)


def test_16_bit_mean_keeps_the_requested_dtype_and_gradient():
    assert float(enp.mean(np.ones(70000, np.int32), dtype=np.float16)) == 1.0
    assert enp.mean(np.ones(4, np.float32), dtype=np.float16).dtype == np.float16
    assert enp.var(np.arange(4.0, dtype=np.float32), dtype=np.float16).dtype == np.float16
    x = enp.arange(3000).astype(np.float16)  # positions past 2048 would round in float16
    assert float(enp.quantile(x, 0.3337)) == float(enp.nanquantile(x, 0.3337)) == 1001.0
    grad = ember.grad(lambda x: enp.mean(x))(np.ones(70000, np.float16))
    assert grad.dtype == np.float16
    np.testing.assert_allclose(np.asarray(grad, np.float32), 1 / 70000, rtol=1e-2)  # subnormal


_X34 = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
HISTOGRAM_CASES = {
    "histogram": lambda m: m.histogram(_X34, bins=5)[0],
    "histogram_edges": lambda m: m.histogram(_X34, bins=np.array([-2.0, 0.0, 0.5, 2.0]))[0],
}


@pytest.mark.parametrize("name", sorted(HISTOGRAM_CASES))
def test_histogram_counts_match_numpy(name):
    assert_matches_numpy(HISTOGRAM_CASES[name])
