"""ember.scipy.stats against scipy.stats: every distribution method on a grid crossing the
edges of its support and of its parameters' domains, derivatives of the log densities against
finite differences, mode/rankdata/sem, and JAX 0.10's parameter lists."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import ember
import ember.scipy.stats as es
from ember.test_util import check_grads

st = pytest.importorskip("scipy.stats")


def _scipy(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*[np.asarray(a, np.float64) for a in args])


def _check(name, method, args, rtol=2e-5, atol=1e-6, scipy_args=None):
    fn = getattr(getattr(es, name), method)
    actual = np.asarray(fn(*args))
    assert actual.dtype == np.float32, actual.dtype
    expected = _scipy(getattr(getattr(st, name), method), *(scipy_args or args))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    jitted = np.asarray(ember.jit(fn)(*args))
    np.testing.assert_allclose(jitted, actual, rtol=1e-5, atol=1e-30)


def _grid(*axes):
    """Each axis as float32, shaped to broadcast against the others."""
    n = len(axes)
    return [
        np.asarray(a, np.float32).reshape((1,) * i + (-1,) + (1,) * (n - i - 1))
        for i, a in enumerate(axes)
    ]


X = np.linspace(-6, 6, 25)
Q = [0.0, 1e-4, 0.1, 0.5, 0.9, 1 - 1e-4, 1.0, -0.5, 1.5]
LOC = [0.0, -1.5]
SCALE = [1.0, 2.5]

LOCATION_SCALE = {
    "norm": ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "expon": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "laplace": ["cdf", "logpdf", "pdf"],
    "logistic": ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"],
    "cauchy": ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "uniform": ["cdf", "logpdf", "pdf", "ppf"],
    "gumbel_l": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "gumbel_r": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
}
CASES = [(d, m) for d, methods in LOCATION_SCALE.items() for m in methods]


@pytest.mark.parametrize("name, method", CASES, ids=[f"{d}.{m}" for d, m in CASES])
def test_location_scale_families(name, method):
    first = Q if method in ("ppf", "isf") else X
    _check(name, method, _grid(first, LOC, SCALE), rtol=5e-5, atol=1e-6)


SHAPED = {
    "t": (["logpdf", "pdf"], [[0.5, 1.0, 4.0, 30.0]]),
    "gamma": (["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"], [[0.5, 1.0, 2.0, 7.5]]),
    "chi2": (["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"], [[1.0, 2.0, 3.0, 9.0]]),
    "pareto": (["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"], [[0.5, 2.0, 5.0]]),
    "beta": (
        ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
        [[0.5, 1.0, 3.0], [0.7, 1.0, 4.0]],
    ),
    "truncnorm": (
        ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
        [[-1.0, 0.5, 3.0], [2.0, 4.0, 7.0]],
    ),
}
SHAPED_CASES = [(d, m) for d, (methods, _) in SHAPED.items() for m in methods]


@pytest.mark.slow
@pytest.mark.parametrize("name, method", SHAPED_CASES, ids=[f"{d}.{m}" for d, m in SHAPED_CASES])
def test_shaped_families(name, method):
    shapes = SHAPED[name][1]
    first = Q if method in ("ppf", "isf") else np.concatenate([X, [0.0, 1.0, 1e-3]])
    if name == "beta" and method != "ppf":
        first = np.concatenate([np.linspace(-0.5, 1.5, 21), [1e-3, 0.999]])
    if name == "truncnorm":
        # Intervals deep in the upper tail (a = 3) and across the centre.
        first = np.concatenate([np.linspace(-2, 8, 41)])
    loc_scale = [[0.0, 0.5], [1.0, 2.0]] if name != "t" else [[0.0], [1.0]]
    args = _grid(first, *shapes, *loc_scale)
    tol = dict(rtol=2e-4, atol=1e-6) if name in ("beta", "gamma", "chi2") else {}
    _check(name, method, args, **{"rtol": 5e-5, "atol": 1e-6, **tol})


def test_truncnorm_far_tail_keeps_its_mass():
    # An interval far in the upper tail: ndtr(12) - ndtr(10) rounds to 0 in float32, its log
    # taken on the upper side does not (JAX 0.10 returns -inf here).
    x = np.float32([10.0, 10.5, 11.5])
    np.testing.assert_allclose(
        np.asarray(es.truncnorm.logpdf(x, 10.0, 12.0)),
        st.truncnorm.logpdf(x.astype(np.float64), 10.0, 12.0),
        rtol=1e-4,
    )


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_circular_and_gennorm(method):
    x = np.linspace(-7, 7, 29)
    _check("vonmises", method, _grid(x, [0.0, 0.5, 2.0, 30.0]), rtol=1e-4)
    _check("wrapcauchy", method, _grid(np.linspace(-1, 7.5, 35), [0.1, 0.5, 0.9]), rtol=1e-4)
    _check("gennorm", method, _grid(x, [0.5, 1.0, 2.0, 4.5]), rtol=1e-4)


def test_gennorm_cdf():
    _check("gennorm", "cdf", _grid(np.linspace(-4, 4, 17), [0.5, 1.0, 2.0, 4.5]), rtol=1e-4)


def test_invalid_parameters_give_nan():
    x = np.float32([0.5, 1.0, 2.0])
    for value in (
        es.gamma.logpdf(x, -1.0),
        es.beta.logpdf(x / 4, -1.0, 2.0),
        es.vonmises.logpdf(x, -1.0),
        es.wrapcauchy.logpdf(x, 1.0),
        es.truncnorm.logpdf(x, 2.0, -1.0),
        es.poisson.logpmf(x, -1.0),
        es.binom.logpmf(x, 3.0, 1.5),
        es.t.logpdf(x, -1.0),
    ):
        assert np.isnan(np.asarray(value)).all()


# --------------------------------------------------------------------------------------------
# Discrete distributions

K = [-1.0, 0.0, 1.0, 1.5, 2.0, 3.0, 7.0, 20.0]

DISCRETE = [
    ("poisson", "logpmf", [K, [0.0, 0.5, 4.0], [0.0, 1.0]]),
    ("poisson", "pmf", [K, [0.0, 0.5, 4.0], [0.0, 1.0]]),
    ("poisson", "cdf", [K, [0.0, 0.5, 4.0], [0.0, 1.0]]),
    ("bernoulli", "logpmf", [K, [0.0, 0.3, 1.0], [0.0, 1.0]]),
    ("bernoulli", "pmf", [K, [0.0, 0.3, 1.0], [0.0, 1.0]]),
    ("bernoulli", "cdf", [K, [0.0, 0.3, 1.0]]),
    ("bernoulli", "ppf", [[0.0, 0.2, 0.7, 0.71, 1.0, -0.1, 1.1], [0.0, 0.3, 1.0]]),
    ("binom", "logpmf", [K, [0.0, 3.0, 10.0, 2.5], [0.0, 0.4, 1.0], [0.0, 1.0]]),
    ("binom", "pmf", [K, [0.0, 3.0, 10.0], [0.0, 0.4, 1.0], [0.0, 1.0]]),
    ("geom", "logpmf", [K, [0.3, 1.0, 0.0], [0.0, 1.0]]),
    ("geom", "pmf", [K, [0.3, 1.0], [0.0, 1.0]]),
    ("nbinom", "logpmf", [K, [0.5, 3.0], [0.4, 1.0, 0.0], [0.0, 1.0]]),
    ("nbinom", "pmf", [K, [0.5, 3.0], [0.4, 1.0], [0.0, 1.0]]),
    ("betabinom", "logpmf", [K, [0.0, 3.0, 10.0], [0.5, 2.0], [0.5, 3.0], [0.0, 1.0]]),
    ("betabinom", "pmf", [K, [3.0, 10.0], [0.5, 2.0], [0.5, 3.0], [0.0, 1.0]]),
]


@pytest.mark.parametrize("name, method, axes", DISCRETE, ids=[f"{d}.{m}" for d, m, _ in DISCRETE])
def test_discrete(name, method, axes):
    _check(name, method, _grid(*axes), rtol=5e-5, atol=1e-6)


def test_poisson_entropy():
    mu = np.float32([0.0, 0.01, 0.5, 2.0, 20.0, 49.0, 51.0, 200.0])
    np.testing.assert_allclose(
        np.asarray(es.poisson.entropy(mu)), _scipy(st.poisson.entropy, mu), rtol=2e-5, atol=1e-7
    )
    # SciPy's own sum does not converge this far out; the value is 1/2 log(2 pi e mu) -
    # 1/(12 mu) to far below float32's resolution.
    big = 1e4
    expected = 0.5 * np.log(2 * np.pi * np.e * big) - 1 / (12 * big)
    np.testing.assert_allclose(float(es.poisson.entropy(np.float32(big))), expected, rtol=1e-6)
    assert np.isnan(np.asarray(es.poisson.entropy(-1.0)))


# --------------------------------------------------------------------------------------------
# Multivariate distributions


def test_multivariate_normal():
    rng = np.random.default_rng(1)
    m = rng.normal(size=(3, 3))
    cov = (m @ m.T + 3 * np.eye(3)).astype(np.float32)
    mean = np.float32([0.5, -1.0, 2.0])
    x = rng.normal(size=(4, 3)).astype(np.float32)
    expected = st.multivariate_normal.logpdf(x, mean, cov)
    np.testing.assert_allclose(
        np.asarray(es.multivariate_normal.logpdf(x, mean, cov)), expected, rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(es.multivariate_normal.pdf(x, mean, cov)), np.exp(expected), rtol=1e-5
    )
    # A scalar covariance stands for cov * I; a scalar mean treats entries separately.
    np.testing.assert_allclose(
        np.asarray(es.multivariate_normal.logpdf(x, mean, 2.0)),
        st.multivariate_normal.logpdf(x, mean, 2.0 * np.eye(3)),
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        np.asarray(es.multivariate_normal.logpdf(x[0], 0.0, 2.0)),
        st.norm.logpdf(x[0], 0.0, np.sqrt(2.0)),
        rtol=1e-5,
    )
    with pytest.raises(ValueError, match="does not match"):
        es.multivariate_normal.logpdf(x, mean, np.eye(2, dtype=np.float32))
    with pytest.raises(NotImplementedError, match="allow_singular"):
        es.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)


def test_dirichlet():
    alpha = np.float32([1.5, 2.0, 3.0])
    x = np.float32([[0.2, 0.1], [0.3, 0.4], [0.5, 0.5]])
    exact = x.astype(np.float64)
    expected = st.dirichlet.logpdf(exact / exact.sum(0), alpha)
    np.testing.assert_allclose(np.asarray(es.dirichlet.logpdf(x, alpha)), expected, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(es.dirichlet.pdf(x, alpha)), np.exp(expected), rtol=1e-5)
    # K - 1 coordinates: the last is implied.
    np.testing.assert_allclose(np.asarray(es.dirichlet.logpdf(x[:2], alpha)), expected, rtol=1e-5)
    off = np.float32([[0.2, 0.0], [0.3, 0.5], [0.6, 0.5]])
    np.testing.assert_array_equal(np.asarray(es.dirichlet.logpdf(off, alpha)), [-np.inf] * 2)
    with pytest.raises(ValueError, match="one-dimensional"):
        es.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError, match="one entry fewer"):
        es.dirichlet.logpdf(np.ones((4,), np.float32) / 4, alpha)


def test_multinomial():
    p = np.float32([0.2, 0.3, 0.5])
    x = np.int32([[1, 2, 3], [0, 0, 6], [2, 2, 2], [-1, 4, 3]])
    expected = st.multinomial.logpmf(x, 6, [0.2, 0.3, 0.5])
    np.testing.assert_allclose(np.asarray(es.multinomial.logpmf(x, 6, p)), expected, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(es.multinomial.pmf(x, 6, p)), np.exp(expected), rtol=1e-5)
    assert np.asarray(es.multinomial.logpmf(x[0], 5, p)) == -np.inf
    with pytest.raises(ValueError, match="integer dtype"):
        es.multinomial.logpmf(x.astype(np.float32), 6, p)


# --------------------------------------------------------------------------------------------
# Derivatives of the log densities and CDFs against finite differences

GRADS = [
    (es.norm.logpdf, [0.3, -0.2, 1.7]),
    (es.norm.logcdf, [-4.0, 0.5, 1.3]),
    (es.t.logpdf, [0.3, 3.5, 0.2, 1.5]),
    (es.gamma.logpdf, [1.3, 2.5, 0.1, 1.2]),
    (es.gamma.cdf, [1.3, 2.5]),
    (es.beta.logpdf, [0.3, 2.5, 1.5]),
    (es.beta.cdf, [0.3, 2.5, 1.5]),
    (es.chi2.logpdf, [1.3, 3.0]),
    (es.truncnorm.logpdf, [0.4, -1.0, 2.0, 0.1, 1.2]),
    (es.truncnorm.logcdf, [0.4, -1.0, 2.0]),
    (es.cauchy.logpdf, [0.3, 0.1, 2.0]),
    (es.logistic.logpdf, [0.3, 0.1, 2.0]),
    (es.gumbel_r.logpdf, [0.3, 0.1, 2.0]),
    (es.laplace.logpdf, [0.3, 0.1, 2.0]),
    (es.pareto.logpdf, [2.3, 1.5]),
    (es.vonmises.logpdf, [0.7, 2.0]),
    (es.gennorm.logpdf, [0.7, 1.5]),
]
# The discrete ones in their continuous parameters, at a fixed count.
GRADS += [
    (lambda mu: es.poisson.logpmf(3.0, mu), [2.5]),
    (lambda p: es.binom.logpmf(2.0, 5.0, p), [0.3]),
    (lambda n, p: es.nbinom.logpmf(2.0, n, p), [3.0, 0.4]),
    (lambda a, b: es.betabinom.logpmf(2.0, 5.0, a, b), [1.5, 2.5]),
    (lambda p: es.geom.logpmf(3.0, p), [0.3]),
    (lambda p: es.bernoulli.logpmf(1.0, p), [0.3]),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn, args", GRADS, ids=[f"{i}" for i in range(len(GRADS))])
def test_grads(fn, args):
    check_grads(fn, [np.float32(a) for a in args], order=1, atol=2e-2, rtol=2e-2)


@pytest.mark.slow
def test_grads_multivariate():
    cov = np.float32([[2.0, 0.3], [0.3, 1.0]])
    x, mean = np.float32([0.5, 1.0]), np.float32([0.0, 0.2])
    check_grads(es.multivariate_normal.logpdf, [x, mean, cov], order=1, atol=2e-2, rtol=2e-2)
    alpha = np.float32([1.5, 2.0, 3.0])
    # In alpha only: any step in x leaves the simplex.
    x = np.float32([0.2, 0.3, 0.5])
    check_grads(lambda a: es.dirichlet.logpdf(x, a), [alpha], order=1, atol=3e-2, rtol=3e-2)


# --------------------------------------------------------------------------------------------
# mode, rankdata, sem

DATA = np.float32([[3, 1, 2, 1], [2, 2, 9, 5], [1, 1, 1, 5]])


@pytest.mark.parametrize("axis", [0, 1, None, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_mode(axis, keepdims):
    got = es.mode(DATA, axis=axis, keepdims=keepdims)
    want = st.mode(DATA, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
    np.testing.assert_array_equal(np.asarray(got.count), want.count)
    assert np.asarray(got.count).dtype == np.int32
    jitted = ember.jit(lambda a: es.mode(a, axis=axis, keepdims=keepdims))(DATA)
    np.testing.assert_array_equal(np.asarray(jitted.mode), want.mode)


def test_mode_errors():
    with pytest.raises(NotImplementedError, match="omit"):
        es.mode(DATA, nan_policy="omit")


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_rankdata(method, axis):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 4, size=(5, 6)).astype(np.float32)
    got = np.asarray(es.rankdata(data, method, axis=axis))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, st.rankdata(data, method, axis=axis))
    jitted = ember.jit(lambda a: es.rankdata(a, method, axis=axis))(data)
    np.testing.assert_array_equal(np.asarray(jitted), got)


def test_rankdata_nan_and_errors():
    data = np.float32([[4, 1, 3, 1], [2, 2, np.nan, 5]])
    np.testing.assert_array_equal(
        np.asarray(es.rankdata(data, axis=1)), [[4.0, 1.5, 3.0, 1.5], [np.nan] * 4]
    )
    assert np.isnan(np.asarray(es.rankdata(data))).all()
    with pytest.raises(ValueError, match="unknown method"):
        es.rankdata(data, "bad")
    with pytest.raises(NotImplementedError, match="omit"):
        es.rankdata(data, nan_policy="omit")


@pytest.mark.parametrize("axis, ddof, keepdims", [(0, 1, False), (None, 1, False), (1, 0, True)])
def test_sem(axis, ddof, keepdims):
    want = st.sem(DATA, axis=axis, ddof=ddof, keepdims=keepdims)
    got = es.sem(DATA, axis=axis, ddof=ddof, keepdims=keepdims)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_sem_nan_policy():
    data = DATA.copy()
    data[1, 2] = np.nan
    np.testing.assert_allclose(
        np.asarray(es.sem(data, nan_policy="omit")), st.sem(data, nan_policy="omit"), rtol=1e-6
    )
    assert np.isnan(np.asarray(es.sem(data))[2])
    with pytest.raises(ValueError, match="raise"):
        es.sem(data, nan_policy="raise")


# --------------------------------------------------------------------------------------------
# Parameter lists, as jax.scipy.stats 0.10.2 declares them

LS = "x,loc=0,scale=1"
QLS = "q,loc=0,scale=1"
JAX_SIGNATURES = {
    "bernoulli": {"cdf": "k,p", "logpmf": "k,p,loc=0", "pmf": "k,p,loc=0", "ppf": "q,p"},
    "beta": {m: "x,a,b,loc=0,scale=1" for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
    "betabinom": {"logpmf": "k,n,a,b,loc=0", "pmf": "k,n,a,b,loc=0"},
    "binom": {"logpmf": "k,n,p,loc=0", "pmf": "k,n,p,loc=0"},
    "cauchy": {
        **{m: LS for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
        "isf": QLS,
        "ppf": QLS,
    },
    "chi2": {m: "x,df,loc=0,scale=1" for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
    "dirichlet": {"logpdf": "x,alpha", "pdf": "x,alpha"},
    "expon": {**{m: LS for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")}, "ppf": QLS},
    "gamma": {m: "x,a,loc=0,scale=1" for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
    "gennorm": {"cdf": "x,beta", "logpdf": "x,beta", "pdf": "x,beta"},
    "geom": {"logpmf": "k,p,loc=0", "pmf": "k,p,loc=0"},
    "gumbel_l": {
        **{m: LS for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
        "ppf": "p,loc=0,scale=1",
    },
    "gumbel_r": {
        **{m: LS for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
        "ppf": "p,loc=0,scale=1",
    },
    "laplace": {"cdf": LS, "logpdf": LS, "pdf": LS},
    "logistic": {m: LS for m in ("cdf", "isf", "logpdf", "pdf", "ppf", "sf")},
    "multinomial": {"logpmf": "x,n,p", "pmf": "x,n,p"},
    "multivariate_normal": {"logpdf": "x,mean,cov,allow_singular=None", "pdf": "x,mean,cov"},
    "nbinom": {"logpmf": "k,n,p,loc=0", "pmf": "k,n,p,loc=0"},
    "norm": {
        **{m: LS for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
        "isf": QLS,
        "ppf": QLS,
    },
    "pareto": {
        **{m: "x,b,loc=0,scale=1" for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
        "ppf": "q,b,loc=0,scale=1",
    },
    "poisson": {
        "cdf": "k,mu,loc=0",
        "entropy": "mu,loc=0",
        "logpmf": "k,mu,loc=0",
        "pmf": "k,mu,loc=0",
    },
    "t": {"logpdf": "x,df,loc=0,scale=1", "pdf": "x,df,loc=0,scale=1"},
    "truncnorm": {
        m: "x,a,b,loc=0,scale=1" for m in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")
    },
    "uniform": {"cdf": LS, "logpdf": LS, "pdf": LS, "ppf": QLS},
    "vonmises": {"logpdf": "x,kappa", "pdf": "x,kappa"},
    "wrapcauchy": {"logpdf": "x,c", "pdf": "x,c"},
}
JAX_FUNCTIONS = {
    "mode": "a,axis=0,nan_policy='propagate',keepdims=False",
    "rankdata": "a,method='average',*axis=None,*nan_policy='propagate'",
    "sem": "a,axis=0,ddof=1,nan_policy='propagate',*keepdims=False",
}


def _signature(fn) -> str:
    marks = {inspect.Parameter.POSITIONAL_ONLY: "/", inspect.Parameter.KEYWORD_ONLY: "*"}
    out = []
    for p in inspect.signature(fn).parameters.values():
        default = "" if p.default is inspect.Parameter.empty else f"={p.default!r}"
        out.append(marks.get(p.kind, "") + p.name + default)
    return ",".join(out)


@pytest.mark.parametrize("name", sorted(JAX_SIGNATURES))
def test_distribution_signatures_match_jax(name):
    module = getattr(es, name)
    public = {n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))}
    assert public == set(JAX_SIGNATURES[name])
    for method, expected in JAX_SIGNATURES[name].items():
        assert _signature(getattr(module, method)) == expected, method


@pytest.mark.parametrize("name", sorted(JAX_FUNCTIONS))
def test_function_signatures_match_jax(name):
    assert _signature(getattr(es, name)) == JAX_FUNCTIONS[name]


def test_submodules_import_as_modules():
    import ember.scipy.stats.norm as norm_module

    assert norm_module.pdf is es.norm.pdf
    assert ember.scipy.stats is es


# --------------------------------------------------------------------------------------------
# gaussian_kde

KDE_DATA = np.random.default_rng(5).normal(size=(2, 40))
KDE_WEIGHTS = np.arange(1.0, 41.0)
KDE_POINTS = np.random.default_rng(6).normal(size=(2, 9))


@pytest.mark.parametrize("bw_method", [None, "scott", "silverman", 0.4, "callable"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gaussian_kde_against_scipy(bw_method, weighted):
    bw = (lambda kde: 0.3) if bw_method == "callable" else bw_method
    weights = KDE_WEIGHTS if weighted else None
    want = st.gaussian_kde(KDE_DATA, bw_method=bw, weights=weights)
    got = es.gaussian_kde(KDE_DATA.astype(np.float32), bw_method=bw, weights=weights)
    assert (got.d, got.n) == (2, 40)
    np.testing.assert_allclose(float(got.neff), want.neff, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got.covariance), want.covariance, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got.inv_cov), want.inv_cov, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(got(KDE_POINTS)), want(KDE_POINTS), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got.pdf(KDE_POINTS)), want.pdf(KDE_POINTS), rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(got.logpdf(KDE_POINTS)), want.logpdf(KDE_POINTS), rtol=1e-5
    )
    mean, cov = np.float32([0.2, -0.1]), np.float32([[1.0, 0.2], [0.2, 0.5]])
    np.testing.assert_allclose(
        float(got.integrate_gaussian(mean, cov)), want.integrate_gaussian(mean, cov), rtol=1e-5
    )
    np.testing.assert_allclose(float(got.integrate_kde(got)), want.integrate_kde(want), rtol=1e-5)


def test_gaussian_kde_one_dimensional():
    data = KDE_DATA[0]
    want = st.gaussian_kde(data, weights=KDE_WEIGHTS)
    got = es.gaussian_kde(data.astype(np.float32), weights=KDE_WEIGHTS)
    x = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(np.asarray(got(x)), want(x), rtol=1e-5)
    np.testing.assert_allclose(
        float(got.integrate_box_1d(-0.5, 1.0)), want.integrate_box_1d(-0.5, 1.0), rtol=1e-5
    )
    # Far in the tail the log density stays finite where the density underflows.
    np.testing.assert_allclose(
        np.asarray(got.logpdf(np.float32([40.0]))), want.logpdf([40.0]), rtol=1e-4
    )


def test_gaussian_kde_is_a_pytree():
    kde = es.gaussian_kde(KDE_DATA.astype(np.float32))
    jitted = ember.jit(lambda k, p: k.logpdf(p))(kde, KDE_POINTS.astype(np.float32))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(kde.logpdf(KDE_POINTS)), rtol=1e-5)
    leaves, treedef = ember.tree_util.tree_flatten(kde)
    rebuilt = ember.tree_util.tree_unflatten(treedef, leaves)
    np.testing.assert_allclose(np.asarray(rebuilt(KDE_POINTS)), np.asarray(kde(KDE_POINTS)))
    # The density is differentiable in the evaluation point.
    point = KDE_POINTS[:, :1].astype(np.float32)
    check_grads(lambda p: kde.logpdf(p), [point], order=1, atol=2e-2, rtol=2e-2)


@pytest.mark.slow
def test_gaussian_kde_resample():
    import ember.random

    kde = es.gaussian_kde(np.float32([0.0, 10.0]), bw_method=0.01, weights=[1.0, 3.0])
    draws = np.asarray(kde.resample(ember.random.key(0), (4000,)))
    assert draws.shape == (1, 4000)
    # Tight kernels around the two points, picked 1:3.
    near_ten = np.mean(np.abs(draws - 10.0) < 1.0)
    assert 0.7 < near_ten < 0.8
    assert np.all((np.abs(draws) < 1.0) | (np.abs(draws - 10.0) < 1.0))
    assert kde.resample(ember.random.key(1)).shape == (1,)


def test_gaussian_kde_errors():
    kde = es.gaussian_kde(KDE_DATA.astype(np.float32))
    with pytest.raises(ValueError, match="bw_method"):
        es.gaussian_kde(KDE_DATA, bw_method="bad")
    with pytest.raises(ValueError, match="1-D"):
        kde.integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        kde.integrate_box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(NotImplementedError, match="bandwidth"):
        kde.set_bandwidth(0.5)
    with pytest.raises(ValueError, match="dimension"):
        kde(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="weights"):
        es.gaussian_kde(KDE_DATA, weights=[1.0, 2.0])


def test_gaussian_kde_signatures_match_jax():
    kde = es.gaussian_kde
    assert _signature(kde.__init__) == "self,dataset,bw_method=None,weights=None"
    assert _signature(kde.evaluate) == "self,points"
    assert _signature(kde.__call__) == "self,points"
    assert _signature(kde.logpdf) == "self,x"
    assert _signature(kde.pdf) == "self,x"
    assert _signature(kde.integrate_gaussian) == "self,mean,cov"
    assert _signature(kde.integrate_box_1d) == "self,low,high"
    assert _signature(kde.integrate_kde) == "self,other"
    assert _signature(kde.integrate_box) == "self,low_bounds,high_bounds,maxpts=None"
    assert _signature(kde.resample) == "self,key,shape=()"
    assert _signature(kde.set_bandwidth) == "self,bw_method=None"


def test_vmap_over_distributions():
    x = np.float32([[0.1, 2.0], [-1.0, 3.5]])
    for fn, extra in (
        (es.truncnorm.logpdf, (-1.0, 3.0)),
        (es.gamma.logcdf, (2.0,)),
        (es.poisson.logpmf, (3.0,)),
    ):
        np.testing.assert_allclose(
            np.asarray(ember.vmap(lambda row, fn=fn, extra=extra: fn(row, *extra))(x)),
            np.asarray(fn(x, *extra)),
            rtol=2e-6,
        )
    kde = es.gaussian_kde(KDE_DATA.astype(np.float32))
    points = KDE_POINTS.T.astype(np.float32)  # vmap over points, each of shape (2,)
    np.testing.assert_allclose(
        np.asarray(ember.vmap(lambda p: kde.logpdf(p[:, None])[0])(points)),
        np.asarray(kde.logpdf(KDE_POINTS)),
        rtol=2e-6,
    )


def test_mismatched_shapes_raise_naming_the_function():
    with pytest.raises(ValueError, match=r"gamma\.cdf.*broadcast"):
        es.gamma.cdf(np.ones(3, np.float32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"binom\.logpmf.*broadcast"):
        es.binom.logpmf(np.ones(3, np.float32), 5.0, np.ones(2, np.float32))
