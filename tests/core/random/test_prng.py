"""ember.random: the same bits as JAX 0.10 for the same seeds (known answers pinned from JAX's
default partitionable Threefry mode), under jit and vmap, with sane distributions."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.random as er

# Produced by JAX 0.10.2 (jax.random with its defaults) on the CPU; `_calls` below shows the
# call behind each name.
_DATA = json.loads(
    (pathlib.Path(__file__).parents[1] / "data" / "random_prng_known_answers.json").read_text()
)
KNOWN = {name: np.array(entry["value"], entry["dtype"]) for name, entry in _DATA["answers"].items()}

EXACT = {"key_42", "key_neg", "key_big", "split_42", "split_0_3", "split_2x2", "fold_in_7",
         "bits_4", "bits_u8", "bits_u16", "randint_10", "randint_neg", "randint_u8",
         "bernoulli_half", "categorical", "categorical_batch", "uniform_2x3", "uniform_range",
         "uniform_f16", "uniform_bf16", "exponential", "permutation_10", "permutation_rows",
         "choice_replace", "choice_noreplace", "choice_p", "choice_p_noreplace",
         "choice_array"}  # fmt: skip
# Built on QR/Cholesky, which ember computes with its own algorithms: equal to rounding error.
FACTORED = {"mvn_cholesky", "orthogonal", "orthogonal_wide"}
# Gradients of the gamma sampler go through iterative series (equal to rounding error).
SERIES = {"gamma_grad", "loggamma_grad"}
_ALPHAS = np.array([0.3, 1.0, 2.0, 7.5], np.float32)
_LOG_ALPHAS = np.array([0.01, 0.5, 3.0], np.float32)

_MEAN = np.array([1.0, 0.0, -1.0], np.float32)
_COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]], np.float32)


def _calls():
    k, k0 = er.key(42), er.PRNGKey(0)
    return {
        "key_42": lambda: er.key(42),
        "key_neg": lambda: er.key(-7),
        "key_big": lambda: er.key(123456789),
        "split_42": lambda: er.split(k),
        "split_0_3": lambda: er.split(k0, 3),
        "split_2x2": lambda: er.split(k, (2, 2)),
        "fold_in_7": lambda: er.fold_in(k, 7),
        "bits_4": lambda: er.bits(k, (4,)),
        "bits_u8": lambda: er.bits(k, (5,), np.uint8),
        "bits_u16": lambda: er.bits(k, (3, 2), np.uint16),
        "uniform_2x3": lambda: er.uniform(k, (2, 3)),
        "uniform_range": lambda: er.uniform(k0, (4,), minval=-2.0, maxval=3.0),
        "uniform_f16": lambda: er.uniform(k, (4,), np.float16),
        "uniform_bf16": lambda: er.uniform(k, (4,), ember.dtypes.bfloat16).astype(np.float32),
        "normal_2x2": lambda: er.normal(k, (2, 2)),
        "normal_0": lambda: er.normal(k0, (5,)),
        "randint_10": lambda: er.randint(k, (6,), 0, 10),
        "randint_neg": lambda: er.randint(k0, (5,), -100, 100),
        "randint_u8": lambda: er.randint(k, (4,), 0, 256, np.uint8),
        "bernoulli_half": lambda: er.bernoulli(k0, 0.5, (8,)),
        "exponential": lambda: er.exponential(k, (3,)),
        "gumbel": lambda: er.gumbel(k, (3,)),
        "laplace": lambda: er.laplace(k, (3,)),
        "logistic": lambda: er.logistic(k, (3,)),
        "truncated_normal": lambda: er.truncated_normal(k, -1.0, 2.0, (4,)),
        "categorical": lambda: er.categorical(k, enp.log(enp.array([0.1, 0.2, 0.7])), shape=(6,)),
        "permutation_10": lambda: er.permutation(k, 10),
        "permutation_rows": lambda: er.permutation(k, enp.arange(12.0).reshape(4, 3)),
        "choice_replace": lambda: er.choice(k, 10, (5,)),
        "choice_noreplace": lambda: er.choice(k, 10, (4,), replace=False),
        "choice_p": lambda: er.choice(k, 4, (6,), p=enp.array([0.1, 0.2, 0.3, 0.4])),
        "choice_p_noreplace": lambda: er.choice(
            k, 4, (3,), replace=False, p=enp.array([0.1, 0.2, 0.3, 0.4])
        ),
        "choice_array": lambda: er.choice(k, enp.arange(10.0, 20.0), (3,)),
        "categorical_batch": lambda: er.categorical(
            k0, enp.array([[0.0, 5.0, 0.0], [5.0, 0.0, 0.0]])
        ),
        "mvn_cholesky": lambda: er.multivariate_normal(er.key(0), _MEAN, _COV, (4,)),
        "orthogonal": lambda: er.orthogonal(er.key(3), 3),
        "orthogonal_wide": lambda: er.orthogonal(er.key(4), 2, m=4),
        "gamma_scalar": lambda: er.gamma(k, 2.5),
        "gamma_vec": lambda: er.gamma(k, _ALPHAS),
        "gamma_shape": lambda: er.gamma(k0, 0.5, (2, 3)),
        "gamma_grad": lambda: ember.grad(lambda a: er.gamma(k, a).sum())(_ALPHAS),
        "loggamma": lambda: er.loggamma(k, _LOG_ALPHAS),
        "loggamma_grad": lambda: ember.grad(lambda a: er.loggamma(k, a).sum())(_LOG_ALPHAS),
        "beta": lambda: er.beta(k, 2.0, enp.array([0.5, 1.0, 5.0])),
        "dirichlet": lambda: er.dirichlet(k, enp.array([0.5, 1.0, 2.0])),
        "dirichlet_batch": lambda: er.dirichlet(k0, enp.array([1.0, 3.0]), (2,)),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_same_values_as_jax(name):
    if name == "uniform_bf16" and ember.dtypes.bfloat16 is None:
        pytest.skip("bfloat16 needs ml_dtypes, which is not installed")
    got = np.asarray(_calls()[name]())
    want = KNOWN[name]
    assert got.shape == want.shape
    if name in FACTORED:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    elif name in SERIES:
        np.testing.assert_allclose(got, want, rtol=1e-4)
    elif name in EXACT or ember.default_backend() != "reference":
        np.testing.assert_array_equal(got.astype(want.dtype), want)
    else:  # NumPy's transcendental functions may differ from XLA's in the last place
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)


def test_keys_under_jit_and_vmap():
    keys = er.split(er.key(0), 4)
    batched = ember.vmap(lambda k: er.uniform(k, (3,)))(keys)
    for i in range(4):
        np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(er.uniform(keys[i], (3,))))
    jitted = ember.jit(lambda k: er.normal(er.fold_in(k, 3), (2,)))(keys[0])
    np.testing.assert_array_equal(
        np.asarray(jitted), np.asarray(er.normal(er.fold_in(keys[0], 3), (2,)))
    )


@pytest.mark.slow
def test_distributions_look_right():
    k = er.key(7)
    u = np.asarray(er.uniform(k, (20000,)))
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    n = np.asarray(er.normal(k, (20000,)))
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1.0) < 0.03
    r = np.asarray(er.randint(k, (20000,), 3, 9))
    assert set(np.unique(r)) == set(range(3, 9))
    t = np.asarray(er.truncated_normal(k, -0.5, 0.5, (5000,)))
    assert t.min() > -0.5 and t.max() < 0.5
    c = np.asarray(er.categorical(k, enp.log(enp.array([0.2, 0.8])), shape=(20000,)))
    assert abs(c.mean() - 0.8) < 0.02


@pytest.mark.slow
@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_has_the_asked_mean_and_covariance(method):
    # eigh and svd fix each eigenvector's sign their own way (as LAPACK does), so samples differ
    # from JAX's one by one while following the same distribution.
    x = np.asarray(er.multivariate_normal(er.key(11), _MEAN, _COV, (40000,), method=method))
    assert x.shape == (40000, 3)
    np.testing.assert_allclose(x.mean(0), _MEAN, atol=0.03)
    np.testing.assert_allclose(np.cov(x.T), _COV, atol=0.04)
    batched = er.multivariate_normal(er.key(1), np.zeros((5, 3), np.float32), _COV)
    assert batched.shape == (5, 3)
    with pytest.raises(ValueError, match="do not match"):
        er.multivariate_normal(er.key(0), _MEAN, _COV[:2, :2])
    with pytest.raises(ValueError, match="unknown method"):
        er.multivariate_normal(er.key(0), _MEAN, _COV, method="qr")


def test_orthogonal_matrices_are_orthogonal():
    q = np.asarray(er.orthogonal(er.key(5), 4, shape=(3,)))
    assert q.shape == (3, 4, 4)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-5)  # fmt: skip
    wide = np.asarray(er.orthogonal(er.key(6), 2, m=5))
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)


def test_bad_keys_and_dtypes_are_reported():
    with pytest.raises(ember.errors.EmberTypeError, match="PRNG key"):
        er.uniform(np.zeros(3, np.uint32))
    with pytest.raises(ember.errors.EmberTypeError, match="floating-point dtype"):
        er.normal(er.key(0), (2,), np.int32)
    with pytest.raises(OverflowError, match="does not fit"):
        er.key(2**40)


# --------------------------------------------------------------------------------------------
# gamma and the samplers built on it


@pytest.mark.slow
def test_gamma_is_the_same_under_jit_vmap_and_batched_keys():
    keys = er.split(er.key(3), 3)
    batched = ember.vmap(lambda k, a: er.gamma(k, a, (2,)))(keys, _ALPHAS[:3])
    for i in range(3):
        np.testing.assert_array_equal(
            np.asarray(batched[i]), np.asarray(er.gamma(keys[i], _ALPHAS[i], (2,)))
        )
    jitted = ember.jit(lambda k, a: er.gamma(k, a))(keys[0], _ALPHAS)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(er.gamma(keys[0], _ALPHAS)))
    # loggamma is gamma in log space: the same draws
    np.testing.assert_allclose(
        np.exp(np.asarray(er.loggamma(keys[1], _ALPHAS))),
        np.asarray(er.gamma(keys[1], _ALPHAS)),
        rtol=1e-5,
    )


@pytest.mark.slow
def test_gamma_gradient_is_the_implicit_reparameterisation():
    """d(sample)/da at a fixed quantile q = P(a, x): finite differences of x(a) =
    P^-1(a, q), with SciPy's inverse of the incomplete gamma function."""
    special = pytest.importorskip("scipy.special")
    k = er.key(5)
    a = np.array([0.2, 0.9, 1.7, 6.0], np.float32)
    x = np.asarray(er.gamma(k, a), np.float64)
    got = np.asarray(ember.grad(lambda a: er.gamma(k, a).sum())(a))
    q = special.gammainc(a.astype(np.float64), x)
    h = 1e-5
    want = (special.gammaincinv(a + h, q) - special.gammaincinv(a - h, q)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=2e-3)
    log_got = np.asarray(ember.grad(lambda a: er.loggamma(k, a).sum())(a))
    np.testing.assert_allclose(log_got, want / x, rtol=2e-3)


@pytest.mark.slow
def test_gamma_family_distributions_look_right():
    k = er.key(9)
    for a in (0.3, 1.0, 4.5):
        g = np.asarray(er.gamma(k, a, (20000,)), np.float64)
        assert g.min() >= 0
        assert abs(g.mean() - a) < 0.05 * a + 0.01 and abs(g.var() - a) < 0.1 * a + 0.01
    lg = np.asarray(er.loggamma(k, 0.001, (2000,)))
    assert np.isfinite(lg).all()  # tiny samples stay representable in log space
    b = np.asarray(er.beta(k, 2.0, 3.0, (20000,)), np.float64)
    assert 0 <= b.min() and b.max() <= 1
    assert abs(b.mean() - 0.4) < 0.01 and abs(b.var() - 0.04) < 0.004
    alpha = np.array([1.0, 2.0, 5.0], np.float32)
    dir_ = np.asarray(er.dirichlet(k, alpha, (10000,)), np.float64)
    assert dir_.shape == (10000, 3)
    np.testing.assert_allclose(dir_.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(dir_.mean(0), alpha / alpha.sum(), atol=0.01)


def test_gamma_family_reports_bad_arguments():
    with pytest.raises(ValueError, match="broadcast-compatible"):
        er.gamma(er.key(0), np.ones(3, np.float32), (2,))
    with pytest.raises(ember.errors.EmberTypeError, match="floating-point dtype"):
        er.beta(er.key(0), 1.0, 1.0, dtype=np.int32)
    with pytest.raises(ValueError, match="rank >= 1"):
        er.dirichlet(er.key(0), 1.0)
    with pytest.raises(ember.errors.EmberTypeError, match="PRNG key"):
        er.gamma(np.zeros(3, np.uint32), 1.0)


def test_jax_keywords_are_accepted_and_unsupported_values_named():
    k = er.key(0)
    np.testing.assert_array_equal(np.asarray(er.key(0, impl="threefry2x32")), np.asarray(k))
    np.testing.assert_array_equal(np.asarray(er.PRNGKey(0, impl=None)), np.asarray(k))
    assert er.wrap_key_data(er.key_data(k), impl="threefry2x32") is not None
    same = er.bernoulli(k, 0.3, (4,), mode="low")
    np.testing.assert_array_equal(np.asarray(same), np.asarray(er.bernoulli(k, 0.3, (4,))))
    assert er.uniform(k, (2,), out_sharding=None).shape == (2,)
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        er.key(0, impl="rbg")
    with pytest.raises(NotImplementedError, match="typed key arrays"):
        er.key(0, dtype="key<fry>")
    with pytest.raises(NotImplementedError, match="mode='high'"):
        er.gumbel(k, (2,), mode="high")
    with pytest.raises(ValueError, match="mode must be"):
        er.choice(k, 5, (2,), mode="medium")
    with pytest.raises(NotImplementedError, match="replace=False"):
        er.categorical(k, np.zeros(3, np.float32), shape=(2,), replace=False)


def test_split_into_a_negative_number_is_a_value_error():
    with pytest.raises(ValueError, match="split: num must be non-negative, got -2"):
        er.split(er.key(0), -2)
    assert er.split(er.key(0), 0).shape == (0, 2)
