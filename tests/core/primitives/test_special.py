"""ember.lax's gamma-family special functions against SciPy, on the default and the reference
backends, including the edges of their domains, and their derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.test_util import check_grads

special = pytest.importorskip("scipy.special")

BACKENDS = ["default", "reference"]


def _device(which):
    return ember.devices()[0] if which == "default" else ember.devices("reference")[0]


def _run(fn, which, *args):
    return np.asarray(ember.jit(fn, device=_device(which))(*args), np.float64)


def _points(rng, n=400):
    return np.concatenate([rng.uniform(-8, 8, n), rng.uniform(0.01, 30, n)]).astype(np.float32)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize(
    "name,fn,ref",
    [
        ("lgamma", lax.lgamma, special.gammaln),
        ("digamma", lax.digamma, special.digamma),
        (
            "polygamma1",
            lambda x: lax.polygamma(np.float32(1), x),
            lambda x: special.polygamma(1, x),
        ),
        (
            "polygamma3",
            lambda x: lax.polygamma(np.float32(3), x),
            lambda x: special.polygamma(3, x),
        ),
    ],
)
def test_gamma_functions_match_scipy(which, name, fn, ref):
    x = _points(np.random.default_rng(0))
    # away from the poles at 0, -1, -2, ..., where float32 rounding of x dominates
    x = x[np.abs(x - np.round(x)) > 0.05]
    got = _run(fn, which, x)
    want = ref(x.astype(np.float64))
    scale = np.maximum(np.abs(want), 1.0)
    tol = 1e-4 if which == "default" else 1e-6
    np.testing.assert_array_less(np.abs(got - want) / scale, tol)


# XLA's conventions at the poles and infinities, which the reference backend follows
_EDGES = np.array([0.0, -1.0, -3.0, np.inf, -np.inf, np.nan], np.float32)
_EDGE_VALUES = {
    "lgamma": [np.inf, np.inf, np.inf, np.inf, np.inf, np.nan],
    "digamma": [np.nan, np.nan, np.nan, np.inf, np.nan, np.nan],
    "polygamma1": [np.inf, np.inf, np.inf, np.nan, np.inf, np.nan],
}


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("name", sorted(_EDGE_VALUES))
def test_gamma_functions_at_poles_and_infinities(which, name):
    fn = {
        "lgamma": lax.lgamma,
        "digamma": lax.digamma,
        "polygamma1": lambda x: lax.polygamma(np.float32(1), x),
    }[name]
    np.testing.assert_array_equal(_run(fn, which, _EDGES), _EDGE_VALUES[name])


def test_polygamma_of_a_non_integer_order_is_nan():
    got = np.asarray(lax.polygamma(np.float32(1.5), np.float32(2.0)))
    assert np.isnan(got)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize(
    "fn,ref", [(lax.igamma, special.gammainc), (lax.igammac, special.gammaincc)]
)
def test_incomplete_gamma_matches_scipy(which, fn, ref):
    rng = np.random.default_rng(1)
    a = (10 ** rng.uniform(-2, 2, 1000)).astype(np.float32)
    x = (10 ** rng.uniform(-3, 2.5, 1000)).astype(np.float32)
    got = _run(fn, which, a, x)
    want = ref(a.astype(np.float64), x.astype(np.float64))
    tol = 2e-5 if which == "default" else 1e-7
    np.testing.assert_allclose(got, want, atol=tol)


_A = np.array([0.0, 0.0, 1.0, -1.0, np.nan, 1.0, np.inf, 2.0, 1.0], np.float32)
_X = np.array([0.0, 1.0, 0.0, 1.0, 1.0, np.inf, 1.0, -1.0, np.nan], np.float32)


@pytest.mark.parametrize("which", BACKENDS)
def test_incomplete_gamma_edges(which):
    nan = np.nan
    np.testing.assert_array_equal(
        _run(lax.igamma, which, _A, _X), [nan, 1, 0, nan, nan, 1, nan, nan, nan]
    )
    np.testing.assert_array_equal(
        _run(lax.igammac, which, _A, _X), [nan, 0, 1, nan, nan, 0, nan, nan, nan]
    )


@pytest.mark.parametrize("which", BACKENDS)
def test_derivatives_in_a_match_finite_differences(which):
    rng = np.random.default_rng(2)
    a = rng.uniform(0.3, 8, 200)
    x = rng.uniform(0.05, 15, 200)
    h = 1e-6
    dp_da = (special.gammainc(a + h, x) - special.gammainc(a - h, x)) / (2 * h)
    got = _run(lax.igamma_grad_a, which, a.astype(np.float32), x.astype(np.float32))
    np.testing.assert_allclose(got, dp_da, atol=2e-4)
    density = np.exp(-x + (a - 1) * np.log(x) - special.gammaln(a))
    sample_grad = _run(lax.random_gamma_grad, which, a.astype(np.float32), x.astype(np.float32))
    np.testing.assert_allclose(sample_grad, -dp_da / density, rtol=2e-3, atol=1e-4)


def test_gradients():
    x = np.array([0.4, 1.3, 2.7, 6.0], np.float32)
    check_grads(lax.lgamma, [x], order=2, atol=2e-2, rtol=2e-2)
    check_grads(lax.digamma, [x], order=1, atol=2e-2, rtol=2e-2)
    a = np.array([0.8, 1.5, 3.0, 5.0], np.float32)
    check_grads(lax.igamma, [a, x], order=1, atol=2e-2, rtol=2e-2)
    check_grads(lax.igammac, [a, x], order=1, atol=2e-2, rtol=2e-2)
    np.testing.assert_allclose(
        np.asarray(ember.grad(lambda x: lax.lgamma(x))(np.float32(3.5))), special.digamma(3.5),
        rtol=1e-5,
    )  # fmt: skip


def test_bad_dtypes_are_reported():
    for fn in (lax.lgamma, lax.digamma):
        with pytest.raises(ember.errors.EmberTypeError, match=fn.__name__):
            fn(np.arange(3, dtype=np.int32))
    with pytest.raises(ember.errors.EmberTypeError, match="igamma"):
        lax.igamma(np.ones(2, np.float32), np.ones(2, np.int32))
    with pytest.raises(ValueError, match="order m"):
        ember.grad(lambda m: lax.polygamma(m, np.float32(2.0)))(np.float32(1))
