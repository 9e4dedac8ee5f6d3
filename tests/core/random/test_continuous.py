"""ember.random's further samplers: the same samples as JAX 0.10 for the same keys (known
answers pinned from JAX on the CPU), under jit and vmap, with the right distributions and
gradients, and clear errors for bad arguments."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.random as er
from tests.core.util import numerical_gradient

# Produced by JAX 0.10.2 (jax.random with its defaults) on the CPU, by running `_calls` below
# with jax.random and jax.grad in place of ember's.
_DATA = json.loads(
    (
        pathlib.Path(__file__).parents[1] / "data" / "random_continuous_known_answers.json"
    ).read_text()
)
KNOWN = {name: np.array(entry["value"], entry["dtype"]) for name, entry in _DATA["answers"].items()}

_F = np.float32
_DF = np.array([0.5, 1.0, 3.0, 12.0], _F)
# Calls of the loop-based samplers share their parameters' shapes (one program each to compile).
_LAM = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 400.0], _F)
_LAM_2 = np.array([1e-3, 1.0, 2.0, 5.0, 12.0, 50.0, 1e4], _F)
_N = np.array([0.0, 1.0, 5.0, 20.0, 50.0, 1000.0], _F)
_P = np.array([0.05, 0.3, 0.5, 0.7, 0.99, 1.0], _F)
_PROBS = np.array([0.1, 0.2, 0.3, 0.4], _F)


def _calls(random, grad):
    """Every known answer's call, written for either library's random module."""
    k, k0, k7 = random.key(42), random.key(0), random.key(7)
    return {
        "cauchy": lambda: random.cauchy(k, (5,)),
        "cauchy_2x3_f16": lambda: random.cauchy(k0, (2, 3), np.float16).astype(_F),
        "pareto": lambda: random.pareto(k, 2.5, (4,)),
        "pareto_bcast": lambda: random.pareto(k7, np.array([0.5, 1.0, 4.0], _F), (2, 3)),
        "rayleigh": lambda: random.rayleigh(k, np.array([0.5, 1.0, 2.0], _F)),
        "rayleigh_shape": lambda: random.rayleigh(k0, 3.0, (2, 2)),
        "lognormal": lambda: random.lognormal(k, shape=(4,)),
        "lognormal_sigma": lambda: random.lognormal(k7, np.array([0.1, 0.5, 2.0], _F), (2, 3)),
        "wald": lambda: random.wald(k, np.array([0.5, 1.0, 3.0, 10.0], _F)),
        "wald_shape": lambda: random.wald(k0, 2.0, (3, 2)),
        "triangular": lambda: random.triangular(k, -1.0, np.array([-0.5, 0.0, 1.5], _F), 2.0),
        "triangular_shape": lambda: random.triangular(k7, 0.0, 0.25, 1.0, (2, 4)),
        "weibull_min": lambda: random.weibull_min(k, 2.0, 1.5, (4,)),
        "weibull_min_bcast": lambda: random.weibull_min(
            k0, np.array([1.0, 3.0], _F), np.array([[0.5], [4.0]], _F), (2,)
        ),
        "geometric": lambda: random.geometric(k, 0.3, (6,)),
        "geometric_vec": lambda: random.geometric(k0, np.array([0.01, 0.5, 0.9, 1.0], _F)),
        "rademacher": lambda: random.rademacher(k, (8,)),
        "rademacher_f32": lambda: random.rademacher(k0, (2, 3), _F),
        "maxwell": lambda: random.maxwell(k, (5,)),
        "maxwell_2x2": lambda: random.maxwell(k7, (2, 2)),
        "double_sided_maxwell": lambda: random.double_sided_maxwell(k, 1.0, 2.0, (4,)),
        "double_sided_maxwell_vec": lambda: random.double_sided_maxwell(
            k0, np.array([0.0, 5.0], _F), 0.5
        ),
        "t": lambda: random.t(k, _DF),
        "t_shape": lambda: random.t(k0, 4.0, (2, 3)),
        "chisquare": lambda: random.chisquare(k, _DF),
        "chisquare_shape": lambda: random.chisquare(k7, 2.0, (2, 2)),
        "f": lambda: random.f(k, _DF, _DF[::-1]),
        "f_shape": lambda: random.f(k7, 5.0, 2.0, (2, 3)),
        "generalized_normal": lambda: random.generalized_normal(k, 1.5, (5,)),
        "generalized_normal_p4": lambda: random.generalized_normal(k0, 4.0, (5,)),
        "generalized_normal_int_p": lambda: random.generalized_normal(k7, 2, (4,)),
        "ball": lambda: random.ball(k, 3, shape=(2,)),
        "ball_p": lambda: random.ball(k0, 2, 3.5),
        "poisson": lambda: random.poisson(k, _LAM),
        "poisson_2": lambda: random.poisson(k7, _LAM_2),
        "poisson_bcast": lambda: random.poisson(k, np.array([1.0, 30.0], _F), (3, 2)),
        "poisson_int8": lambda: random.poisson(k0, 4.0, (4,), np.int8),
        "binomial": lambda: random.binomial(k, _N, np.full(6, 0.3, _F)),
        "binomial_p": lambda: random.binomial(k0, np.full(6, 40.0, _F), _P),
        "binomial_n_p": lambda: random.binomial(k7, _N[::-1], _P),
        "binomial_invalid": lambda: random.binomial(
            k0,
            np.array([np.nan, -1.0, np.inf, 10.0, 10.0, 0.0], _F),
            np.array([0.5, 0.5, 0.5, np.nan, -0.5, 0.5], _F),
        ),
        "binomial_bcast": lambda: random.binomial(k7, _N[:, None], _P[None, ::2]),
        "multinomial": lambda: random.multinomial(k, 100.0, _PROBS),
        "multinomial_batch": lambda: random.multinomial(
            k0,
            np.array([10.0, 1000.0], _F),
            np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.2, 0.3, 0.5]], _F),
            shape=(2, 4),
            dtype=np.int32,
        ),
        "t_grad": lambda: grad(lambda df: random.t(k, df).sum())(_DF),
        "chisquare_grad": lambda: grad(lambda df: random.chisquare(k, df).sum())(_DF),
        "generalized_normal_grad": lambda: grad(
            lambda p: random.generalized_normal(k0, p, (3,)).sum()
        )(1.5),
    }


# Gradients through gamma's implicit derivative go through iterative series.
SERIES = {"t_grad", "chisquare_grad", "generalized_normal_grad"}
# Integer samplers whose acceptance tests compare transcendental functions: NumPy's may differ
# from XLA's in the last place, which can flip a test on the reference backend.
REJECTION = {name for name in KNOWN if name.startswith(("poisson", "binomial", "multinomial"))}


def _on_reference() -> bool:
    return ember.default_backend() == "reference"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_same_values_as_jax(name):
    got = np.asarray(_calls(er, ember.grad)[name]())
    want = KNOWN[name]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
    if name in SERIES:
        np.testing.assert_allclose(got, want, rtol=1e-4)
    elif not _on_reference():
        np.testing.assert_array_equal(got, want)
    elif name in REJECTION:
        # Almost every sample agrees; a flipped acceptance test changes one count.
        assert np.mean(got == want) >= 0.8 or (np.isnan(got) == np.isnan(want)).all()
    else:  # NumPy's transcendental functions may differ from XLA's in the last place
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# jit and vmap


def _samplers():
    """One call per sampler, as a function of the key (shapes as in the known answers, so the
    eager programs are compiled once)."""
    return {
        "cauchy": lambda k: er.cauchy(k, (5,)),
        "pareto": lambda k: er.pareto(k, 2.5, (4,)),
        "rayleigh": lambda k: er.rayleigh(k, 3.0, (2, 2)),
        "lognormal": lambda k: er.lognormal(k, shape=(4,)),
        "wald": lambda k: er.wald(k, 2.0, (3, 2)),
        "triangular": lambda k: er.triangular(k, 0.0, 0.25, 1.0, (2, 4)),
        "weibull_min": lambda k: er.weibull_min(k, 2.0, 1.5, (4,)),
        "geometric": lambda k: er.geometric(k, 0.3, (6,)),
        "rademacher": lambda k: er.rademacher(k, (8,)),
        "maxwell": lambda k: er.maxwell(k, (5,)),
        "double_sided_maxwell": lambda k: er.double_sided_maxwell(k, 1.0, 2.0, (4,)),
        "t": lambda k: er.t(k, 4.0, (2, 3)),
        "chisquare": lambda k: er.chisquare(k, 2.0, (2, 2)),
        "f": lambda k: er.f(k, 5.0, 2.0, (2, 3)),
        "generalized_normal": lambda k: er.generalized_normal(k, 1.5, (5,)),
        "ball": lambda k: er.ball(k, 3, shape=(2,)),
        "poisson": lambda k: er.poisson(k, _LAM),
        "binomial": lambda k: er.binomial(k, _N, _P),
        "multinomial": lambda k: er.multinomial(k, 100.0, _PROBS),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_samplers()))
def test_jit_of_vmap_over_keys_is_a_loop_of_calls(name):
    sample = _samplers()[name]
    keys = er.split(er.key(3), 3)
    batched = np.asarray(ember.jit(ember.vmap(sample))(keys))
    looped = np.stack([np.asarray(sample(k)) for k in keys])
    if name == "f":
        # XLA rewrites f's quotient of quotients when it compiles the batch (JAX's f is not
        # the same bits under jit either): equal to rounding.
        np.testing.assert_allclose(batched, looped, rtol=2e-6)
    else:
        np.testing.assert_array_equal(batched, looped)


# --------------------------------------------------------------------------------------------
# Distributions

_COUNT = 20000


def _moments(name):
    """(samples, mean, variance) of each distribution, the latter two from its formulas."""
    k = er.key(11)
    n = (_COUNT,)
    return {
        "pareto": (lambda: er.pareto(k, 5.0, n), 5 / 4, 5 / (16 * 3)),
        "rayleigh": (lambda: er.rayleigh(k, 2.0, n), 2 * np.sqrt(np.pi / 2), (4 - np.pi) / 2 * 4),
        "lognormal": (lambda: er.lognormal(k, 0.5, n), np.exp(0.125),
                      (np.exp(0.25) - 1) * np.exp(0.25)),
        "wald": (lambda: er.wald(k, 2.0, n), 2.0, 8.0),
        "triangular": (lambda: er.triangular(k, 0.0, 0.25, 1.0, n), 1.25 / 3,
                       (1 + 0.0625 - 0.25) / 18),
        "weibull_min": (lambda: er.weibull_min(k, 2.0, 1.0, n), 2.0, 4.0),
        "geometric": (lambda: er.geometric(k, 0.25, n), 4.0, 0.75 / 0.0625),
        "rademacher": (lambda: er.rademacher(k, n), 0.0, 1.0),
        "maxwell": (lambda: er.maxwell(k, n), 2 * np.sqrt(2 / np.pi), 3 - 8 / np.pi),
        "double_sided_maxwell": (lambda: er.double_sided_maxwell(k, 1.0, 2.0, n), 1.0, 12.0),
        "t": (lambda: er.t(k, 6.0, n), 0.0, 1.5),
        "chisquare": (lambda: er.chisquare(k, 3.0, n), 3.0, 6.0),
        "generalized_normal": (lambda: er.generalized_normal(k, 1.0, n), 0.0, 2.0),
        "poisson_small": (lambda: er.poisson(k, 3.5, n), 3.5, 3.5),
        "poisson_large": (lambda: er.poisson(k, 60.0, n), 60.0, 60.0),
        "binomial_small": (lambda: er.binomial(k, 12.0, 0.2, n), 2.4, 1.92),
        "binomial_large": (lambda: er.binomial(k, 200.0, 0.7, n), 140.0, 42.0),
    }[name]  # fmt: skip


_MOMENT_NAMES = ["pareto", "rayleigh", "lognormal", "wald", "triangular", "weibull_min",
                 "geometric", "rademacher", "maxwell", "double_sided_maxwell", "t", "chisquare",
                 "generalized_normal", "poisson_small", "poisson_large", "binomial_small",
                 "binomial_large"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", _MOMENT_NAMES)
def test_mean_and_variance_match_the_distribution(name):
    draw, mean, var = _moments(name)
    x = np.asarray(draw(), np.float64)
    assert x.shape == (_COUNT,)
    se_mean = np.sqrt(var / _COUNT)
    assert abs(x.mean() - mean) < 5 * se_mean, (x.mean(), mean)
    # The variance's own spread depends on the tails: a loose relative bound.
    assert abs(x.var() - var) < 0.1 * var, (x.var(), var)


@pytest.mark.slow
def test_cauchy_quartiles_and_ball_radii():
    c = np.asarray(er.cauchy(er.key(2), (_COUNT,)))
    np.testing.assert_allclose(np.percentile(c, [25, 50, 75]), [-1, 0, 1], atol=0.05)
    for p in (1.0, 2.0, 4.0):
        x = np.asarray(er.ball(er.key(4), 3, p, (_COUNT // 4,)), np.float64)
        radius = (np.abs(x) ** p).sum(-1) ** (1 / p)
        assert radius.max() <= 1.0
        # Uniform in a 3-dimensional ball: the radius r has P(r < s) = s^3.
        assert abs(np.mean(radius < 0.5) - 0.125) < 0.02


@pytest.mark.slow
def test_multinomial_counts_add_up_and_follow_p():
    x = np.asarray(er.multinomial(er.key(5), 50.0, _PROBS, shape=(4000, 4)), np.float64)
    np.testing.assert_array_equal(x.sum(-1), 50.0)
    np.testing.assert_allclose(x.mean(0), 50 * _PROBS, rtol=0.02)
    np.testing.assert_allclose(x.var(0), 50 * _PROBS * (1 - _PROBS), rtol=0.1)


def test_binomial_and_poisson_edge_parameters():
    k = er.key(6)
    n = np.array([0.0, 7.0, 7.0, 7.0, 1e4, 3.7], _F)
    p = np.array([0.5, 0.0, 1.0, 0.5, 1e-6, 0.5], _F)
    b = np.asarray(er.binomial(k, n, p))
    np.testing.assert_array_equal(b[:3], [0.0, 0.0, 7.0])
    assert 0 <= b[3] <= 7 and 0 <= b[4] <= 3 and 0 <= b[5] <= 3  # a fractional n is floored
    lam = np.array([0.0, 1e-6, 0, 0, 0, 0, 0], _F)
    np.testing.assert_array_equal(np.asarray(er.poisson(k, lam)), np.zeros(7))
    assert np.asarray(er.geometric(k, 1.0, (6,))).tolist() == [1] * 6


# --------------------------------------------------------------------------------------------
# Gradients (reparameterised samplers; those built on gamma are pinned against JAX above)


def _grad_cases():
    k = er.key(8)
    return {
        "pareto_b": (lambda b: er.pareto(k, b, (3,)), np.array([1.5, 2.0, 4.0])),
        "rayleigh_scale": (lambda s: er.rayleigh(k, s), np.array([0.5, 2.0])),
        "lognormal_sigma": (lambda s: er.lognormal(k, s), np.array([0.3, 1.2])),
        "wald_mean": (lambda m: er.wald(k, m), np.array([0.7, 1.5, 3.0])),
        "triangular": (
            lambda e: er.triangular(k, e[0], e[1], e[2], (5,)),
            np.array([-1.0, 0.5, 2.0]),
        ),
        "weibull_min": (
            lambda c: er.weibull_min(k, c[0], c[1:]),
            np.array([2.0, 0.8, 1.5, 3.0]),
        ),
        "double_sided_maxwell": (
            lambda p: er.double_sided_maxwell(k, p[0], p[1], (4,)),
            np.array([0.5, 2.0]),
        ),
    }


@pytest.mark.parametrize("name", sorted(_grad_cases()))
def test_gradient_matches_finite_differences(name):
    sample, x = _grad_cases()[name]

    def total(v):
        return sample(v).sum()

    got = np.asarray(ember.grad(total)(x.astype(_F)))
    want = numerical_gradient(lambda v: np.asarray(total(v.astype(_F))), [x], eps=1e-2)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=1e-3)


# --------------------------------------------------------------------------------------------
# Keys and bad arguments


def test_clone_and_key_impl():
    k = er.key(1)
    np.testing.assert_array_equal(np.asarray(er.clone(k)), np.asarray(k))
    assert er.key_impl(k) == "threefry2x32"
    assert er.key_impl(er.split(k, (2, 3))) == "threefry2x32"
    with pytest.raises(ember.errors.EmberTypeError, match="PRNG keys"):
        er.key_impl(np.zeros(3, np.uint32))
    with pytest.raises(ember.errors.EmberTypeError, match="PRNG keys"):
        er.clone(np.zeros(2, np.float32))


def test_bad_arguments_are_reported():
    k = er.key(0)
    with pytest.raises(ember.errors.EmberTypeError, match="PRNG key"):
        er.poisson(np.zeros(3, np.uint32), 1.0)
    with pytest.raises(ember.errors.EmberTypeError, match="single key"):
        er.cauchy(er.split(k, 2))
    with pytest.raises(ValueError, match="broadcast-compatible"):
        er.pareto(k, np.ones(3, _F), (2,))
    with pytest.raises(ValueError, match="broadcast-compatible"):
        er.binomial(k, np.ones(3, _F), np.ones(4, _F))
    with pytest.raises(ember.errors.EmberTypeError, match="floating-point dtype"):
        er.t(k, 3.0, dtype=np.int32)
    with pytest.raises(ember.errors.EmberTypeError, match="integer dtype"):
        er.poisson(k, 3.0, dtype=np.float32)
    with pytest.raises(ember.errors.EmberTypeError, match="integer dtype"):
        er.geometric(k, 0.5, dtype=np.float32)
    with pytest.raises(ember.errors.EmberTypeError, match="lam must be"):
        er.poisson(k, "three")
    with pytest.raises(ValueError, match="rank >= 1"):
        er.multinomial(k, 10.0, 0.5)
    with pytest.raises(ValueError, match="p must be a scalar"):
        er.ball(k, 3, np.ones(2, _F))
    with pytest.raises(ember.errors.ConcretizationTypeError, match="ball's d"):
        ember.jit(lambda d: er.ball(k, d))(3)
