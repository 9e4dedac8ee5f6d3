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


# --------------------------------------------------------------------------------------------
# Set operations


SET_A = np.array([5, 1, 3, 3, 7, 1, 9, -2])
SET_B = np.array([3, 9, 9, 2, 1, 4, -2])


def test_intersect1d_return_indices():
    expected = np.intersect1d(SET_A, SET_B, return_indices=True)
    for result, want in zip(enp.intersect1d(SET_A, SET_B, return_indices=True), expected):
        assert_close(result, want)


def test_intersect1d_return_indices_size():
    values, i1, i2 = np.intersect1d(SET_A, SET_B, return_indices=True)
    k, size = len(values), len(values) + 2
    jitted = ember.jit(
        lambda a, b: enp.intersect1d(a, b, return_indices=True, size=size, fill_value=0)
    )
    got_values, got_i1, got_i2 = jitted(SET_A, SET_B)
    assert_close(got_values, np.concatenate([values, [0, 0]]))
    # Padding entries point one past the end of each input, as in JAX.
    assert_close(got_i1, np.concatenate([i1, [SET_A.size] * (size - k)]))
    assert_close(got_i2, np.concatenate([i2, [SET_B.size] * (size - k)]))


def test_set_operations_assume_unique():
    a, b = np.unique(SET_A), np.unique(SET_B)
    assert_close(enp.intersect1d(a, b, True), np.intersect1d(a, b, True))
    assert_close(enp.setdiff1d(a, b, True), np.setdiff1d(a, b, True))


@pytest.mark.parametrize("method", ["auto", "compare_all", "binary_search", "sort"])
@pytest.mark.parametrize("invert", [False, True])
def test_isin_method(method, invert):
    expected = np.isin(SET_A, SET_B, invert=invert)
    assert_close(enp.isin(SET_A, SET_B, False, invert, method=method), expected)
    assert_close(enp.isin(SET_A, SET_B, assume_unique=True, invert=invert), expected)


def test_isin_bad_method():
    with pytest.raises(ValueError, match="method"):
        enp.isin(SET_A, SET_B, method="hash")


# --------------------------------------------------------------------------------------------
# Sorting, joining and contractions


@pytest.mark.parametrize("dtype", [np.int16, np.int64, np.uint8])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_dtype(dtype, descending):
    a = np.array([3.0, -1, 2, np.nan, 2, 0])
    result = enp.argsort(a, descending=descending, dtype=dtype)
    # Descending order puts NaN first and keeps ties in order (JAX's result).
    expected = [3, 0, 2, 4, 5, 1] if descending else np.argsort(a, kind="stable")
    assert result.dtype == dtype or dtype == np.int64  # int64 needs x64 mode
    assert_close(result, expected)


def test_argsort_float_dtype():
    with pytest.raises(TypeError, match="integer"):
        enp.argsort(np.arange(3), dtype=np.float32)


@pytest.mark.parametrize("name", ["hstack", "vstack"])
def test_stack_dtype(name):
    pieces = [np.arange(3, dtype=np.int32), np.ones(3, np.int32)]
    result = getattr(enp, name)(pieces, dtype=np.float32)
    assert result.dtype == np.float32
    assert_close(result, getattr(np, name)(pieces, dtype=np.float32))
    assert_close(enp.stack(pieces, 1, None, np.float32), np.stack(pieces, 1, dtype=np.float32))


def test_atleast_several_arguments():
    one, two = enp.atleast_1d(1.0, np.ones((2, 2)))
    assert one.shape == (1,) and two.shape == (2, 2)
    first, second = enp.atleast_2d(np.arange(3), 2)
    assert first.shape == (1, 3) and second.shape == (1, 1)
    assert enp.atleast_2d(np.arange(3)).shape == (1, 3)


def test_concat_keyword_axis():
    a = np.arange(6).reshape(2, 3)
    assert_close(enp.concat([a, a], axis=1), np.concatenate([a, a], axis=1))
    assert_close(enp.concat([a, a], axis=None), np.concatenate([a, a], axis=None))


@pytest.mark.parametrize("name", ["inner", "vdot"])
def test_contractions_preferred_element_type(name):
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.arange(-2, 4, dtype=np.int8).reshape(2, 3)
    result = getattr(enp, name)(a, b, precision="highest", preferred_element_type=np.float32)
    assert result.dtype == np.float32
    assert_close(result, getattr(np, name)(a.astype(np.float32), b.astype(np.float32)))


def test_vecdot_preferred_element_type():
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    result = enp.vecdot(a, a, axis=0, precision=None, preferred_element_type=np.float32)
    assert result.dtype == np.float32
    assert_close(result, np.sum(a.astype(np.float32) ** 2, axis=0))


# --------------------------------------------------------------------------------------------
# Keyword names shared with JAX


def test_keyword_names():
    a = np.arange(6.0).reshape(2, 3)
    assert_close(enp.flip(m=a, axis=1), np.flip(a, 1))
    assert_close(enp.broadcast_to(array=a[0], shape=(4, 3)), np.broadcast_to(a[0], (4, 3)))
    assert_close(enp.tile(A=a, reps=2), np.tile(a, 2))
    assert enp.empty_like(prototype=a, dtype=np.int32).dtype == np.int32
    assert enp.iinfo(int_type=np.int16).max == np.iinfo(np.int16).max
    assert enp.issubdtype(arg1=np.float32, arg2=np.floating)
    assert_close(enp.round(a=a / 7, decimals=2), np.round(a / 7, 2))
    xs, ys = enp.meshgrid(np.arange(2), np.arange(3), copy=True, sparse=False, indexing="ij")
    assert_close(xs, np.meshgrid(np.arange(2), np.arange(3), indexing="ij")[0])
    assert_close(ys, np.meshgrid(np.arange(2), np.arange(3), indexing="ij")[1])


def test_clip_needs_input():
    with pytest.raises(ValueError, match="No input"):
        enp.clip(max=1.0)
    assert_close(enp.clip(np.arange(5), 1, 3), np.clip(np.arange(5), 1, 3))


def test_take_options():
    a, idx = np.arange(10.0).reshape(2, 5), np.array([4, 0, 2])
    expected = np.take(a, idx, axis=1)
    assert_close(enp.take(a, idx, 1, None, None, True, False), expected)
    assert_close(enp.take(a, idx, axis=1, indices_are_sorted=False, unique_indices=True), expected)
    with pytest.raises(NotImplementedError, match="'raise' mode"):
        enp.take(a, idx, mode="raise")


@pytest.mark.parametrize(
    "name, call",
    [
        ("cumsum", lambda out: enp.cumsum(np.arange(4), out=out)),
        ("cumprod", lambda out: enp.cumprod(np.arange(4), out=out)),
        ("stack", lambda out: enp.stack([np.ones(2), np.ones(2)], out=out)),
        ("round", lambda out: enp.round(np.ones(2), out=out)),
        ("around", lambda out: enp.around(np.ones(2), out=out)),
        ("outer", lambda out: enp.outer(np.ones(2), np.ones(3), out=out)),
        ("take", lambda out: enp.take(np.ones(2), np.array([0]), out=out)),
    ],
)
def test_more_out_is_not_supported(name, call):
    call(None)
    with pytest.raises(NotImplementedError, match="'out' argument"):
        call(np.zeros(2))


# --------------------------------------------------------------------------------------------
# linalg

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
SKEW = np.array([[0.0, 0.3, 0.0], [-0.3, 0.0, 0.1], [0.0, -0.1, 0.0]], np.float32)


def test_cholesky_symmetrize_input():
    lopsided = SPD + SKEW
    assert_close(enp.linalg.cholesky(lopsided), np.linalg.cholesky(SPD), rtol=1e-5)
    # Without symmetrising only the lower triangle is read.
    lower_read = np.tril(lopsided) + np.tril(lopsided, -1).T
    assert_close(
        enp.linalg.cholesky(lopsided, symmetrize_input=False),
        np.linalg.cholesky(lower_read),
        rtol=1e-5,
    )


def test_eigvalsh_symmetrize_input():
    assert_close(
        enp.linalg.eigvalsh(SPD, "L", symmetrize_input=True), np.linalg.eigvalsh(SPD), rtol=1e-5
    )


@pytest.mark.parametrize("method", [None, "lu", "qr"])
def test_slogdet_method(method):
    sign, logdet = enp.linalg.slogdet(SPD - 2.5 * np.eye(3, dtype=np.float32), method=method)
    want_sign, want_logdet = np.linalg.slogdet(SPD - 2.5 * np.eye(3, dtype=np.float32))
    assert_close(sign, want_sign)
    assert_close(logdet, want_logdet, rtol=1e-5)


def test_slogdet_bad_method():
    with pytest.raises(ValueError, match="slogdet method"):
        enp.linalg.slogdet(SPD, method="svd")


def test_pinv_rcond_and_matrix_rank_hermitian():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1e-7]], np.float32)
    assert_close(enp.linalg.pinv(a, rcond=1e-3), np.linalg.pinv(a, rcond=1e-3), rtol=1e-4)
    with pytest.raises(ValueError, match="only one of rtol and rcond"):
        enp.linalg.pinv(a, 1e-3, rcond=1e-3)
    assert int(enp.linalg.matrix_rank(M=SPD, hermitian=True)) == 3
    assert int(enp.linalg.matrix_rank(a, tol=1e-3)) == 1


def test_svd_subset_by_index_with_reduced_matrices():
    u, s, vh = enp.linalg.svd(SPD, full_matrices=False, subset_by_index=(0, 1))
    assert (u.shape, s.shape, vh.shape) == ((3, 1), (1,), (1, 3))
    assert_close(s, np.linalg.svd(SPD, compute_uv=False)[:1], rtol=1e-5)
    with pytest.raises(ValueError, match="full_matrices and subset_by_index"):
        enp.linalg.svd(SPD, subset_by_index=(0, 1))


def test_linalg_contractions_positional_only():
    a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(3, 4)
    assert_close(enp.linalg.tensordot(a, b, axes=2), np.tensordot(a, b, 2))
    assert_close(enp.linalg.tensordot(a, b.T, axes=([2], [0])), np.tensordot(a, b.T, ([2], [0])))
    assert_close(enp.linalg.matmul(a, b.T, precision=None), a @ b.T)
    with pytest.raises(TypeError):
        enp.linalg.matmul(x1=a, x2=b.T)


# --------------------------------------------------------------------------------------------
# Reductions: promote_integers=, var/std where= and mean=, out=

DATA = rng.normal(size=(3, 5)).astype(np.float32)
DATA_MASK = rng.random((3, 5)) > 0.3


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("axis", [None, 1])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_where(name, axis, ddof):
    expected = getattr(np, name)(DATA, axis=axis, ddof=ddof, where=DATA_MASK)
    assert_close(getattr(enp, name)(DATA, axis=axis, ddof=ddof, where=DATA_MASK), expected)
    jitted = ember.jit(lambda a, w: getattr(enp, name)(a, axis=axis, ddof=ddof, where=w))
    assert_close(jitted(DATA, DATA_MASK), expected)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_given_mean(name):
    mean = DATA.mean(axis=0, keepdims=True) + 0.25
    expected = getattr(np, name)(DATA, axis=0, mean=mean)
    assert_close(getattr(enp, name)(DATA, axis=0, mean=mean), expected)


@pytest.mark.parametrize("name", ["sum", "prod"])
def test_promote_integers(name):
    a = np.array([100, 3], np.int8)
    promoted = getattr(enp, name)(a)
    assert promoted.dtype != np.int8
    assert int(promoted) == int(getattr(np, name)(a.astype(np.int64)))
    kept = getattr(enp, name)(a, promote_integers=False)
    assert kept.dtype == np.int8
    assert int(kept) == int(getattr(np, name)(a, dtype=np.int8))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std"])
def test_reduction_out_is_not_supported(name):
    assert_close(getattr(enp, name)(DATA, out=None), getattr(np, name)(DATA), rtol=1e-5)
    with pytest.raises(NotImplementedError, match=f"'out' argument to jnp.{name}"):
        getattr(enp, name)(DATA, out=np.zeros(()))


# --------------------------------------------------------------------------------------------
# ufunc-style calls: (*args, out=None, where=None)

UFUNCS = [
    ("add", 2, np.float32),
    ("subtract", 2, np.float32),
    ("multiply", 2, np.float32),
    ("maximum", 2, np.float32),
    ("minimum", 2, np.float32),
    ("logaddexp", 2, np.float32),
    ("logaddexp2", 2, np.float32),
    ("bitwise_and", 2, np.int32),
    ("bitwise_or", 2, np.int32),
    ("bitwise_xor", 2, np.int32),
    ("logical_and", 2, np.bool_),
    ("logical_or", 2, np.bool_),
    ("logical_xor", 2, np.bool_),
    ("negative", 1, np.float32),
]


@pytest.mark.parametrize("name, nin, dtype", UFUNCS)
def test_ufunc_calls(name, nin, dtype):
    args = [(rng.normal(size=(2, 3)) * 5).astype(dtype) for _ in range(nin)]
    expected = getattr(np, name)(*args)
    assert_close(getattr(enp, name)(*args), expected, rtol=1e-5)
    assert_close(getattr(enp, name)(*args, out=None, where=None), expected, rtol=1e-5)
    assert_close(ember.jit(getattr(enp, name))(*args), expected, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="'out' argument"):
        getattr(enp, name)(*args, out=np.zeros((2, 3), dtype))
    with pytest.raises(NotImplementedError, match="'where' argument"):
        getattr(enp, name)(*args, where=np.ones((2, 3), bool))
    with pytest.raises(TypeError, match=f"takes {nin} positional"):
        getattr(enp, name)(*args, *args)


def test_einsum_out_and_asarray_order():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    assert_close(enp.einsum("ij,jk->ik", a, b, out=None, optimize=True), a @ b)
    with pytest.raises(NotImplementedError, match="'out' argument to jnp.einsum"):
        enp.einsum("ij,jk->ik", a, b, out=np.zeros((2, 4)))
    assert_close(enp.asarray(a, np.float32, "K", copy=True), a.astype(np.float32))
    with pytest.raises(NotImplementedError, match="order"):
        enp.asarray(a, None, "F")
    assert_close(enp.reshape(a=a, shape=(3, 2)), a.reshape(3, 2))


@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_equal_nan(equal_nan):
    x = np.array([1.0, np.nan, 2.0, np.nan, 0.0, 1.0], np.float32)
    expected = np.unique(x, True, True, True, equal_nan=equal_nan)
    result = enp.unique(x, True, True, True, equal_nan=equal_nan, sorted=True)
    for got, want in zip(result, expected):
        assert_close(got, want)
    size = len(expected[0]) + 1
    jitted = ember.jit(lambda x: enp.unique(x, return_counts=True, equal_nan=equal_nan, size=size))
    values, counts = jitted(x)
    assert_close(values[:-1], expected[0])
    assert_close(counts[:-1], expected[3])


@pytest.mark.parametrize(
    "options, expected",
    [  # JAX 0.10's results
        ({}, [np.nan, 3.0, np.nan]),
        ({"mode": "fill"}, [np.nan, 3.0, np.nan]),
        ({"mode": "clip"}, [3.0, 3.0, 0.0]),
        ({"fill_value": -1}, [-1.0, 3.0, -1.0]),
        ({"wrap_negative_indices": False}, [np.nan, np.nan, np.nan]),
    ],
)
def test_take_along_axis_modes(options, expected):
    a, indices = np.arange(4.0, dtype=np.float32), np.array([5, -1, -7])
    assert_close(enp.take_along_axis(a, indices, 0, **options), expected)
    jitted = ember.jit(lambda a, i: enp.take_along_axis(a, i, 0, **options))
    assert_close(jitted(a, indices), expected)


def test_take_along_axis_in_range_matches_numpy():
    a = rng.normal(size=(3, 5)).astype(np.float32)
    order = np.argsort(a, axis=1)
    for mode in (None, "clip", "fill"):
        assert_close(enp.take_along_axis(a, order, 1, mode), np.take_along_axis(a, order, 1))
    with pytest.raises(ValueError, match="mode"):
        enp.take_along_axis(a, order, 1, "wrap")


def test_vecdot_conjugates_first_argument():
    a = np.array([[1 + 2j, 3j, -1], [2, 1 - 1j, 0.5j]], np.complex64)
    b = np.array([[2 - 1j, 1, 1j], [1j, 1, 2]], np.complex64)
    assert_close(enp.vecdot(a, b), np.vecdot(a, b), rtol=1e-5)
    assert_close(enp.linalg.vecdot(a, b, axis=0), np.linalg.vecdot(a, b, axis=0), rtol=1e-5)


# --------------------------------------------------------------------------------------------
# Parameter lists pinned from JAX 0.10.2 (name, kind, default)

_P, _PK, _VAR, _KW = "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY"
_NONE = None
JAX_PARAMETERS = {
    "cross": [("a", _PK, "-"), ("b", _PK, "-"), ("axisa", _PK, -1), ("axisb", _PK, -1),
              ("axisc", _PK, -1), ("axis", _PK, _NONE)],
    "pad": [("array", _PK, "-"), ("pad_width", _PK, "-"), ("mode", _PK, "constant"),
            ("kwargs", "VAR_KEYWORD", "-")],
    "gradient": [("f", _PK, "-"), ("varargs", _VAR, "-"), ("axis", _KW, _NONE),
                 ("edge_order", _KW, _NONE)],
    "unique": [("ar", _PK, "-"), ("return_index", _PK, False), ("return_inverse", _PK, False),
               ("return_counts", _PK, False), ("axis", _PK, _NONE), ("equal_nan", _KW, True),
               ("size", _KW, _NONE), ("fill_value", _KW, _NONE), ("sorted", _KW, True)],
    "from_dlpack": [("x", _P, "-"), ("device", _KW, _NONE), ("copy", _KW, _NONE)],
    "ravel": [("a", _PK, "-"), ("order", _PK, "C")],
}  # fmt: skip


def _parameters(function):
    import inspect

    return [
        (p.name, p.kind.name, "-" if p.default is inspect.Parameter.empty else p.default)
        for p in inspect.signature(function).parameters.values()
    ]


@pytest.mark.parametrize("name", sorted(JAX_PARAMETERS))
def test_parameter_lists_match_jax(name):
    assert _parameters(getattr(enp, name)) == JAX_PARAMETERS[name]


def test_dlpack_parameter_lists_match_jax():
    import ember.dlpack

    assert _parameters(ember.dlpack.from_dlpack) == [
        ("external_array", _PK, "-"), ("device", _PK, _NONE), ("copy", _PK, _NONE)
    ]  # fmt: skip
    assert _parameters(ember.dlpack.is_supported_dtype) == [("dtype", _PK, "-")]
    assert _parameters(ember.Array.__dlpack__) == [
        ("self", _PK, "-"), ("stream", _KW, _NONE), ("max_version", _KW, _NONE),
        ("dl_device", _KW, _NONE), ("copy", _KW, _NONE),
    ]  # fmt: skip
    assert _parameters(ember.Array.__dlpack_device__) == [("self", _PK, "-")]
    reshape = _parameters(enp.reshape)
    assert reshape[:3] == [("a", _PK, "-"), ("shape", _PK, _NONE), ("order", _PK, "C")]


UFUNC_PARAMETERS = {
    "__init__": [("self", _P, "-"), ("func", _P, "-"), ("nin", _PK, "-"), ("nout", _PK, "-"),
                 ("name", _KW, _NONE), ("nargs", _KW, _NONE), ("identity", _KW, _NONE),
                 ("call", _KW, _NONE), ("reduce", _KW, _NONE), ("accumulate", _KW, _NONE),
                 ("at", _KW, _NONE), ("reduceat", _KW, _NONE)],
    "__call__": [("self", _PK, "-"), ("args", _VAR, "-"), ("out", _KW, _NONE),
                 ("where", _KW, _NONE)],
    "reduce": [("self", _PK, "-"), ("a", _PK, "-"), ("axis", _PK, 0), ("dtype", _PK, _NONE),
               ("out", _PK, _NONE), ("keepdims", _PK, False), ("initial", _PK, _NONE),
               ("where", _PK, _NONE)],
    "accumulate": [("self", _PK, "-"), ("a", _PK, "-"), ("axis", _PK, 0), ("dtype", _PK, _NONE),
                   ("out", _PK, _NONE)],
    "at": [("self", _P, "-"), ("a", _P, "-"), ("indices", _P, "-"), ("b", _P, _NONE),
           ("inplace", _KW, True)],
    "reduceat": [("self", _PK, "-"), ("a", _PK, "-"), ("indices", _PK, "-"), ("axis", _PK, 0),
                 ("dtype", _PK, _NONE), ("out", _PK, _NONE)],
    "outer": [("self", _P, "-"), ("A", _P, "-"), ("B", _P, "-")],
}  # fmt: skip


@pytest.mark.parametrize("method", sorted(UFUNC_PARAMETERS))
def test_ufunc_parameter_lists_match_jax(method):
    assert _parameters(getattr(enp.ufunc, method)) == UFUNC_PARAMETERS[method]


def test_frompyfunc_parameter_list_matches_jax():
    assert _parameters(enp.frompyfunc) == [
        ("func", _P, "-"), ("nin", _PK, "-"), ("nout", _PK, "-"), ("identity", _KW, _NONE)
    ]  # fmt: skip


@pytest.mark.parametrize("method, args", [("reduce", ()), ("accumulate", ()),
                                          ("reduceat", (np.array([0, 1]),))])  # fmt: skip
def test_ufunc_methods_out_is_not_supported(method, args):
    a = np.ones((2, 3), np.float32)
    with pytest.raises(NotImplementedError, match=f"out argument of add.{method}"):
        getattr(enp.add, method)(a, *args, out=np.zeros((2, 3), np.float32))
    assert_close(getattr(enp.add, method)(a, *args, out=None), getattr(np.add, method)(a, *args))
