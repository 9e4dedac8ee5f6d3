"""Everyday NumPy functions against NumPy itself, under jit, and differentiated."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import EmberTypeError
from tests.core.util import assert_close

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)
XN = X.copy()
XN[0, 1] = np.nan
XN[2, :] = np.nan
M = np.array([[0, 2, 0], [1, 0, 3]])
U = np.array([3, 1, 2, 3, 1, 5])
S = np.sort(X.ravel())
XP, FP = np.array([0.0, 1.0, 3.0]), np.array([0.0, 10.0, 30.0])
SIGNAL, KERNEL = np.arange(5.0), np.array([1.0, 0.5, 2.0])

CASES = {
    "tile": (lambda m: m.tile(X, (2, 1, 3)), None),
    "repeat": (lambda m: m.repeat(X, 2, axis=1), None),
    "repeat_counts": (lambda m: m.repeat(X, [1, 0, 2], axis=0), None),
    "roll": (lambda m: m.roll(X, 2, axis=1), None),
    "roll_flat": (lambda m: m.roll(X, -5), None),
    "diff": (lambda m: m.diff(X, n=2, axis=1), None),
    "diff_prepend": (lambda m: m.diff(X, prepend=0.0), None),
    "meshgrid_xy": (lambda m: m.meshgrid(np.arange(3), np.arange(2))[0], None),
    "meshgrid_ij": (lambda m: m.meshgrid(np.arange(3), np.arange(2), indexing="ij")[1], None),
    "isclose": (lambda m: m.isclose(X, X + 1e-7), None),
    "searchsorted": (lambda m: m.searchsorted(S, X), None),
    "searchsorted_right": (lambda m: m.searchsorted(S, S[3:6], side="right"), None),
    "argwhere": (lambda m: m.argwhere(M), None),
    "unique": (lambda m: m.unique(U), None),
    "interp": (lambda m: m.interp(np.array([-1.0, 0.5, 2.0, 5.0]), XP, FP), None),
    "polyval": (lambda m: m.polyval(np.array([1.0, -2.0, 3.0]), X), None),
    "histogram": (lambda m: m.histogram(X, bins=5)[0], None),
    "histogram_edges": (lambda m: m.histogram(X, bins=np.array([-2.0, 0.0, 0.5, 2.0]))[0], None),
    "quantile": (lambda m: m.quantile(X, 0.3, axis=1), None),
    "quantile_vector": (lambda m: m.quantile(X, np.array([0.1, 0.9]), axis=0), None),
    "percentile": (lambda m: m.percentile(X, 75), None),
    "median": (lambda m: m.median(X, axis=0), None),
    "count_nonzero": (lambda m: m.count_nonzero(M, axis=0), None),
    "convolve_full": (lambda m: m.convolve(SIGNAL, KERNEL), None),
    "convolve_same": (lambda m: m.convolve(SIGNAL, KERNEL, "same"), None),
    "convolve_valid": (lambda m: m.convolve(SIGNAL, KERNEL, "valid"), None),
}  # fmt: skip
for _mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    CASES[f"pad_{_mode}"] = (lambda m, mode=_mode: m.pad(X, ((1, 2), (3, 1)), mode=mode), None)
for _name in ("nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd"):
    CASES[_name] = (lambda m, name=_name: getattr(m, name)(XN, axis=1), None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    fn, _ = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about all-NaN rows
        expected = fn(np)
    got = fn(enp)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_value_dependent_shapes_need_a_static_size():
    for got, want in zip(enp.nonzero(M), np.nonzero(M)):
        np.testing.assert_array_equal(np.asarray(got), want)
    padded = enp.nonzero(M, size=5)
    np.testing.assert_array_equal(np.asarray(padded[1]), [1, 0, 2, 0, 0])
    values, counts = ember.jit(lambda u: enp.unique(u, size=6, fill_value=-1, return_counts=True))(
        U
    )
    np.testing.assert_array_equal(np.asarray(values), [1, 2, 3, 5, -1, -1])
    np.testing.assert_array_equal(np.asarray(counts), [2, 1, 2, 1, 0, 0])
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.nonzero)(M)
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.unique)(U)
    got = enp.unique(U, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, np.unique(U, return_index=True, return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_whole_array_comparisons():
    assert bool(enp.allclose(X, X + 1e-9))
    assert bool(enp.array_equal(X, X)) and not bool(enp.array_equal(X, X[:2]))
    assert bool(enp.array_equal(XN, XN, equal_nan=True)) and not bool(enp.array_equal(XN, XN))


def test_gradients_and_jit():
    rolled = ember.jit(lambda v: enp.roll(enp.pad(v, 1, mode="reflect"), 1))(X)
    assert_close(rolled, np.roll(np.pad(X, 1, mode="reflect"), 1))
    g = ember.grad(lambda v: enp.sum(enp.interp(v, XP, FP)))
    assert_close(g(np.array([0.5, 2.0], np.float32)), [10.0, 10.0])
    assert_close(ember.grad(enp.median)(np.array([3.0, 1.0, 2.0], np.float32)), [0, 0, 1])
    # NaN positions get no gradient (the where masks them), as in JAX
    nan_grad = ember.grad(lambda v: enp.nansum(v) * 2.0)(np.array([1.0, np.nan], np.float32))
    assert_close(nan_grad, [2.0, 0.0])


# Mixed dtypes: the comparison helpers promote (complex with float, int with float, bool) as
# JAX does; the answers below are JAX's.
_C = np.array([1 + 0j, np.inf + 0j, complex(np.nan, 1), complex(1, -np.inf)], np.complex64)


def test_isinf_isfinite_of_complex_look_at_both_parts():
    np.testing.assert_array_equal(np.asarray(enp.isinf(_C)), [False, True, False, True])
    np.testing.assert_array_equal(np.asarray(enp.isfinite(_C)), [True, False, False, False])
    np.testing.assert_array_equal(np.asarray(enp.isnan(_C)), [False, False, True, False])


def test_closeness_and_equality_helpers_promote_mixed_dtypes():
    assert bool(enp.allclose(enp.array([1 + 0j]), enp.array([1.0])))
    assert not bool(enp.allclose(enp.array([1 + 1e-3j]), enp.array([1.0])))
    got = enp.isclose(_C, np.array([1.0, np.inf, np.nan, 1.0], np.float32), equal_nan=True)
    np.testing.assert_array_equal(np.asarray(got), [True, True, True, False])
    np.testing.assert_array_equal(
        np.asarray(enp.isclose(enp.array([1, 2]), enp.array([1.0, 2.00001]))), [True, True]
    )
    np.testing.assert_array_equal(
        np.asarray(enp.isclose(enp.array([True, False]), enp.array([1.0, 0.5]))), [True, False]
    )
    assert bool(enp.array_equal(enp.array([1, 2]), enp.array([1.0, 2.0])))
    assert bool(
        enp.array_equal(enp.array([1 + 0j, np.nan]), enp.array([1.0, np.nan]), equal_nan=True)
    )
    assert bool(enp.array_equal(enp.array([True, False]), enp.array([1, 0])))
    assert bool(enp.array_equiv(enp.array([1 + 0j]), enp.array([[1], [1.0]])))


def test_round_of_complex_rounds_each_part():
    c = np.array([1.66 + 2.44j, -0.5 + 1.5j], np.complex64)
    np.testing.assert_allclose(np.asarray(enp.round(c)), np.round(c))
    np.testing.assert_allclose(np.asarray(enp.round(c, 1)), np.round(c, 1), rtol=1e-6)
    with pytest.raises(ValueError, match="signbit.*complex64"):
        enp.signbit(c)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "cbrt", "is_finite"])
def test_lax_real_only_functions_refuse_complex_before_the_compiler(name):
    with pytest.raises(
        EmberTypeError,
        match="needs (real floating-point|ordered \\(not complex\\)) operands, got c64",
    ):
        getattr(ember.lax, name)(_C)


# Ordering complex numbers: NumPy's (and JAX's) lexicographic order in ember.numpy, refused
# by lax, and never left to XLA (whose CPU max/min/compare do not follow it, and whose
# remainder crashes on complex operands).
_CX = np.array([1 + 0j, 2 + 1j, 2 + 1j, 3 - 1j, 1 + 2j], np.complex64)
_CY = np.array([1 + 0j, 2 + 0j, 2 + 2j, 3 + 0j, 1 + 3j], np.complex64)


@pytest.mark.parametrize(
    "name", ["maximum", "minimum", "less", "less_equal", "greater", "greater_equal"]
)
def test_complex_comparisons_are_lexicographic_as_in_numpy(name):
    got = getattr(enp, name)(_CX, _CY)
    np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(_CX, _CY))
    got = ember.jit(getattr(enp, name))(_CX, np.complex64(2 + 0.5j))
    np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(_CX, np.complex64(2 + 0.5j)))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_max_and_min_reductions_are_lexicographic(axis):
    c = np.array([[1 + 0j, 2 + 1j], [2 + 3j, 2 - 1j], [-1 + 9j, 0j]], np.complex64)
    np.testing.assert_array_equal(np.asarray(enp.max(c, axis=axis)), np.max(c, axis=axis))
    np.testing.assert_array_equal(np.asarray(enp.min(c, axis=axis)), np.min(c, axis=axis))


@pytest.mark.parametrize(
    "use",
    [
        lambda: ember.lax.lt(_CX, _CY),
        lambda: ember.lax.rem(_CX, _CY),
        lambda: enp.fmod(_CX, _CY),
        lambda: enp.remainder(_CX, _CY),
        lambda: enp.argmax(_CX),
        lambda: enp.copysign(_CX, 1.0),
        lambda: enp.heaviside(_CX, 0.5),
    ],
)
def test_operations_without_a_complex_meaning_refuse_it(use):
    with pytest.raises(EmberTypeError, match="complex|c64"):
        use()


# --------------------------------------------------------------------------------------------
# unique(axis=...): distinct slices

ROWS = np.array([[1, 0, 1], [0, 2, 0], [1, 0, 1], [3, 1, 2], [0, 2, 0]], np.int32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_slices_match_numpy(axis):
    got = enp.unique(ROWS, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    expected = np.unique(
        ROWS, axis=axis, return_index=True, return_inverse=True, return_counts=True
    )
    for g, e in zip(got, expected):
        assert g.tolist() == e.tolist()
        assert g.dtype == np.int32
    cube = np.array([[[1, 2], [1, 2]], [[0, 1], [1, 2]], [[1, 2], [1, 2]]])
    assert enp.unique(cube, axis=0).tolist() == np.unique(cube, axis=0).tolist()
    assert enp.unique(cube, axis=1).tolist() == np.unique(cube, axis=1).tolist()
    assert enp.unique(np.zeros((0, 3)), axis=0).shape == (0, 3)


def test_unique_slices_static_size_pads_like_jax():
    # JAX 0.10.2's answers: missing slices are the smallest slice (or fill_value), missing
    # indices the smallest slice's index, missing counts 0; the inverse is never padded.
    def run(**kw):
        call = lambda a: enp.unique(
            a, axis=0, return_index=True, return_inverse=True, return_counts=True, **kw
        )
        return [x.tolist() for x in ember.jit(call)(ROWS)]

    assert run(size=5) == [
        [[0, 2, 0], [1, 0, 1], [3, 1, 2], [0, 2, 0], [0, 2, 0]],
        [1, 0, 3, 1, 1],
        [1, 0, 1, 2, 0],
        [2, 2, 1, 0, 0],
    ]
    assert run(size=4, fill_value=7) == [
        [[0, 2, 0], [1, 0, 1], [3, 1, 2], [7, 7, 7]],
        [1, 0, 3, 1],
        [1, 0, 1, 2, 0],
        [2, 2, 1, 0],
    ]
    assert enp.unique(ROWS, axis=0, size=2).tolist() == [[0, 2, 0], [1, 0, 1]]
    mapped = ember.vmap(lambda m: enp.unique(m, axis=0, size=3))(np.stack([ROWS, ROWS[::-1]]))
    assert mapped.tolist() == [np.unique(ROWS, axis=0).tolist()] * 2
    # The flattened form pads its indices the same way.
    index = enp.unique(np.array([3, 1, 3]), size=4, return_index=True)[1]
    assert index.tolist() == [1, 0, 1, 1]


def test_unique_slices_nan_and_errors():
    f = np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 1.0]])
    assert_close(enp.unique(f, axis=0), [[0.0, 1.0], [1.0, np.nan]])
    assert_close(enp.unique(f, axis=0, equal_nan=False), np.unique(f, axis=0))
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        enp.unique(ROWS, axis=2)
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(lambda a: enp.unique(a, axis=0))(ROWS)
