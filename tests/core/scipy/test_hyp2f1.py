"""ember.scipy.special.hyp2f1 against SciPy on a grid crossing every region (the series, Pfaff's
transformation for x < 0, the 1 - x transformation near 1 with integer and non-integer
c - a - b, polynomials, x >= 1), SciPy's special cases pinned, and derivatives."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.scipy.special as es

sp = pytest.importorskip("scipy.special")

PARAMETERS = [-3.0, -1.5, -0.3, 0.5, 1.0, 2.0, 3.5]
C_VALUES = [-2.5, 0.7, 1.0, 2.0, 4.5]
X_VALUES = [-30.0, -5.0, -1.0, -0.5, 0.0, 0.3, 0.6, 0.9, 0.95, 0.99, 1.0, 1.5]


def _grid(dtype):
    return np.array(list(itertools.product(PARAMETERS, PARAMETERS, C_VALUES, X_VALUES)), dtype).T


def _scipy(*args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sp.hyp2f1(*[np.asarray(a, np.float64) for a in args])


def _expected(a, b, c, x, got):
    """SciPy's values, and ``got`` where both are infinite at ``x >= 1``: there (no real
    value) the sign of SciPy's infinity depends on its internal route, not on the function."""
    expected = _scipy(a, b, c, x)
    either_sign = (x >= 1) & np.isinf(expected) & np.isinf(got)
    return np.where(either_sign, got, expected)


def test_float64_grid_against_scipy():
    with ember.config.option("enable_x64", True):
        a, b, c, x = _grid(np.float64)
        got = np.asarray(es.hyp2f1(a, b, c, x))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _expected(a, b, c, x, got), rtol=1e-9, atol=0)


def test_float32_grid_against_scipy():
    a, b, c, x = _grid(np.float32)
    got = np.asarray(es.hyp2f1(a, b, c, x))
    assert got.dtype == np.float32
    expected = _expected(a, b, c, x, got)
    # Polynomials that nearly vanish (e.g. (1 - x)^3 at x = 0.99) keep an absolute, not a
    # relative, float32 error; the digamma terms of the integer c - a - b limit carry ~1e-4.
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=2e-6)


def test_far_from_the_origin_and_near_one():
    # Where JAX 0.10 loses the value (-inf for x < -1; 17.66 for the last).
    with ember.config.option("enable_x64", True):
        a = np.array([1.0, 1.5, 0.5, 1.5, 3.0, 2.0, 1.0])
        b = np.array([2.0, 1.5, 0.5, 1.5, 3.0, 3.0, 1.0])
        c = np.array([3.0, 3.0, 1.0, 3.0, 4.0, 5.5, 2.0])
        x = np.array([-20.0, -20.0, 0.95, 0.99, 0.99, 0.9999, -1.0])
        got = np.asarray(es.hyp2f1(a, b, c, x))
    expected = [
        0.0847773878113829,
        0.055731592667465794,
        1.8515049970729258,
        8.83697431874919,
        14859.662341770874,
        20.096917143238876,
        0.6931471805599451,
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_large_parameters_against_exact_sums():
    # Summed in 60-digit decimal arithmetic (after Pfaff's transformation for x = -3); SciPy
    # 1.17 answers 0.00042724609375 and 0.0489501953125 for the first two.
    with ember.config.option("enable_x64", True):
        got = np.asarray(
            es.hyp2f1(
                np.array([10.0, 10.0, 15.5]),
                np.array([15.5, 5.3, 15.5]),
                35.7,
                np.array([-3.0, -3.0, 0.92]),
            )
        )
    np.testing.assert_allclose(
        got, [0.0004692621068457045, 0.050264265856273804, 51325.577962000294], rtol=1e-12
    )


@pytest.mark.parametrize(
    "args, expected",
    [
        ((1.0, 1.0, -2.0, 0.5), np.inf),  # c a pole of the series
        ((1.0, 1.0, 0.0, 0.5), np.inf),
        ((-3.0, 1.0, -2.0, 0.5), np.inf),  # the pole comes before the series stops
        ((-1.0, 1.0, -2.0, 0.5), 1.25),  # it stops first
        ((-2.0, 1.0, -3.0, 0.5), 1.4166666666666665),
        ((-2.0, 1.0, -2.0, 0.5), 2.0),  # a == c: (1 - x)^-b
        ((-1.5, -3.0, -3.0, 0.3), 0.5854374999999999),  # b == c: SciPy's partial sum
        ((1.0, 1.0, 3.0, 2.0), np.inf),  # x > 1
        ((-1.0, 1.0, 2.0, 3.0), -0.5),  # ... unless a polynomial
        ((-1.5, 1.0, -2.5, 1.5), -4.4),  # ... or Euler's polynomial times an integer power
        ((1.0, 1.0, 1.0, 1.5), -2.0),  # b == c for any x
        ((1.0, 1.0, 3.0, 1.0), 2.0),  # Gauss's sum at x = 1
        ((1.0, 1.0, 2.0, 1.0), np.inf),  # ... diverging when c - a - b <= 0
        ((0.0, 1.0, -2.0, 0.5), 1.0),
        ((2.5, 1.0, 3.0, 0.0), 1.0),
    ],
)
def test_special_cases_as_scipy(args, expected):
    assert sp.hyp2f1(*args) == pytest.approx(expected, rel=1e-12)
    with ember.config.option("enable_x64", True):
        got = float(es.hyp2f1(*args))
    assert got == pytest.approx(expected, rel=1e-12)


def test_jit_and_vmap_agree_with_eager():
    a = np.float32([0.5, 1.0, -2.0, 1.5])
    b = np.float32([1.5, 1.0, 3.0, 2.5])
    c = np.float32([2.0, 2.0, 4.0, 3.0])
    x = np.float32([0.3, 0.97, -7.0, -20.0])
    eager = np.asarray(es.hyp2f1(a, b, c, x))
    np.testing.assert_allclose(np.asarray(ember.jit(es.hyp2f1)(a, b, c, x)), eager, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ember.vmap(es.hyp2f1)(a, b, c, x)), eager, rtol=1e-5)


def test_integer_inputs_promote_to_float32():
    assert np.asarray(es.hyp2f1(1, 1, 2, 0)).dtype == np.float32


@pytest.mark.slow
def test_derivatives():
    # Rows: the series; Pfaff's transformation; the 1 - x transformation with non-integer and
    # with integer c - a - b (0: the formula holds it at 0, so the derivatives in a, b, c would
    # miss a term and are nan rather than wrong); both transformations at once.
    a, b, c, x = np.array(
        [
            [0.5, 1.5, 2.0, 0.3],
            [0.7, 1.2, 2.0, -3.0],
            [0.5, 1.25, 2.0, 0.95],
            [0.5, 1.5, 2.0, 0.95],
            [1.5, 2.5, 3.0, -20.0],
        ]
    ).T
    with ember.config.option("enable_x64", True):
        partials = ember.vmap(ember.grad(es.hyp2f1, argnums=(0, 1, 2, 3)))(a, b, c, x)
        partials = np.array([np.asarray(p) for p in partials])
        h = 1e-6
        differences = []
        for i in range(3):
            step = np.eye(4)[i][:, None] * h
            up = np.asarray(es.hyp2f1(*(np.array([a, b, c, x]) + step)))
            down = np.asarray(es.hyp2f1(*(np.array([a, b, c, x]) - step)))
            differences.append((up - down) / (2 * h))
    np.testing.assert_allclose(partials[3], a * b / c * _scipy(a + 1, b + 1, c + 1, x), rtol=1e-8)
    frozen = np.array([False, False, False, True, True])
    assert np.isnan(partials[:3, frozen]).all()
    np.testing.assert_allclose(partials[:3, ~frozen], np.array(differences)[:, ~frozen], rtol=1e-5)
