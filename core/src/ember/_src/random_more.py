"""More samplers of ``ember.random``, bit-for-bit those of JAX 0.10: the distributions built
by transforming uniform, normal, exponential and gamma draws (``cauchy``, ``pareto``, ``t``,
``chisquare``, ``f``, ``rayleigh``, ``wald``, ``weibull_min``, ``triangular``, ``lognormal``,
``maxwell``, ``double_sided_maxwell``, ``generalized_normal``, ``ball``, ``rademacher``,
``geometric``), the integer-valued ones drawn by rejection (``poisson``, ``binomial``,
``multinomial``), and the key utilities ``clone`` and ``key_impl``.

Each sampler splits its key and draws its numbers in JAX's order and evaluates JAX's formula
operation for operation (the same association of sums and products), so that the same key
gives the same samples. ``poisson`` and ``binomial`` loop over the whole output at once, as
JAX does: every round draws a fresh uniform for every element and keeps the ones not yet
accepted, until none is left (Knuth's product of uniforms or a sum of geometric gaps for small
means, Hormann's transformed rejection for large ones).

The transforms are written with differentiable operations, so ``grad`` flows through the
reparameterised samplers (through ``gamma``'s implicit derivative for ``t``, ``chisquare``,
``f`` and ``generalized_normal``).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.jit import jit
from ember._src.numpy import advanced_indexing, elementwise as enp
from ember._src.numpy.util import promote_to_inexact
from ember._src.ops import elementwise as lax
from ember._src.ops.clamp import clamp
from ember._src.ops.control_flow.associative_scan import associative_scan
from ember._src.ops.control_flow.loops import while_loop
from ember._src.ops.control_flow.scan import scan
from ember._src.ops.lax_numeric import optimization_barrier
from ember._src.ops.reduce import reduce_or
from ember._src.ops.shape import convert_element_type, expand_dims, move_axis, reduce_sum
from ember._src.ops.special import lgamma
from ember._src.random import (
    _bernoulli,
    _broadcast,
    _exponential,
    _float_dtype,
    _normal,
    _shape,
    _split,
    _uniform,
)
from ember._src.random_gamma import _check_key, _gamma, _nth, _out_shape as _shape_with
from ember._src.sharding_constraint import with_sharding_constraint

_F32 = np.dtype(np.float32)
_ONE = np.float32(1)  # lognormal's default sigma, as in JAX


def _c(value: float, dtype: Any) -> np.ndarray:
    """A constant of ``dtype`` (Python floats round once, from double, as JAX's do)."""
    return np.asarray(value, dtype)


def _int_dtype(dtype: Any, what: str) -> np.dtype:
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else dtypes.default_int())
    if dtype.kind not in "iu":
        raise errors.EmberTypeError(
            f"{what} needs an integer dtype, got {dtypes.short_name(dtype)}{errors.where()}"
        )
    return dtype


def _numeric_dtype(dtype: Any, default: np.dtype, what: str) -> np.dtype:
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else default)
    if dtype.kind not in "iuf" and not dtypes.is_float(dtype):
        raise errors.EmberTypeError(
            f"{what} needs a numeric dtype, got {dtypes.short_name(dtype)}{errors.where()}"
        )
    return dtype


def _param_shape(x: Any, name: str, what: str) -> tuple[int, ...]:
    try:
        aval = get_aval(x)
    except errors.EmberTypeError:
        raise errors.EmberTypeError(
            f"{what}: {name} must be a number or an array, got {type(x).__name__}{errors.where()}"
        ) from None
    if not (dtypes.is_float(aval.dtype) or aval.dtype.kind in "iub") or aval.dtype.kind == "c":
        raise errors.EmberTypeError(
            f"{what}: {name} must be real, got {aval.str_short()}{errors.where()}"
        )
    return aval.shape


def _out_shape(what: str, shape: Any, *param_shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The result's shape: ``shape``, which the parameters' shapes must broadcast to, or by
    default their common shape."""
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*param_shapes))
        except ValueError:
            raise ValueError(
                f"{what}: the parameters' shapes {list(param_shapes)} are not "
                f"broadcast-compatible{errors.where()}"
            ) from None
    return _shape_with(what, shape, *param_shapes)


def _constrain(x: Any, out_sharding: Any) -> Any:
    return x if out_sharding is None else with_sharding_constraint(x, out_sharding)


def _as(x: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    return _broadcast(convert_element_type(x, dtype), shape)


def _two_keys(key: Any) -> tuple[Any, Any]:
    keys = _split(key, (2,))
    return _nth(keys, 0), _nth(keys, 1)


def _sampler_jit(impl: Any, static_argnums: tuple[int, ...]) -> Any:
    """``impl`` jitted, its parameters (not the key) behind an optimization barrier.

    Called eagerly, a sampler gets its parameters as run-time arguments; under an outer jit
    they may be constants, and XLA may then fold functions of them (e.g. the log of gamma's
    d) at compile time, to results whose last bit can differ from the compiled code's. The
    barrier keeps them run-time values, so a sampler gives the same bits under jit as when
    called directly (which are JAX's).
    """

    def run(key: Any, *args: Any) -> Any:
        dynamic = [i for i in range(len(args)) if i + 1 not in static_argnums]
        hidden = optimization_barrier([args[i] for i in dynamic])
        args = list(args)
        for i, value in zip(dynamic, hidden):
            args[i] = value
        return impl(key, *args)

    return jit(run, static_argnums=static_argnums)


# --------------------------------------------------------------------------------------------
# Transforms of one uniform, normal or exponential draw


def _cauchy(key, shape, dtype):
    u = _uniform(key, shape, dtype, _c(dtypes.finfo(dtype).eps, dtype), _c(1.0, dtype))
    return lax.tan(lax.mul(_c(np.pi, dtype), lax.sub(u, _c(0.5, dtype))))


_cauchy_jit = _sampler_jit(_cauchy, static_argnums=(1, 2))


def cauchy(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Samples of the standard Cauchy distribution (density proportional to 1 / (1 + x^2))."""
    _check_key(key)
    out = _cauchy_jit(key, _shape(shape), _float_dtype(dtype, "cauchy"))
    return _constrain(out, out_sharding)


def _pareto(key, b, shape, dtype):
    e = _exponential(key, shape, dtype)
    return lax.exp(lax.div(e, _as(b, dtype, shape)))


_pareto_jit = _sampler_jit(_pareto, static_argnums=(2, 3))


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None, *, out_sharding: Any = None):
    """Samples of the Pareto distribution with shape ``b`` (density b / x^(b+1) on x >= 1)."""
    _check_key(key)
    dtype = _float_dtype(dtype, "pareto")
    shape = _out_shape("pareto", shape, _param_shape(b, "b", "pareto"))
    return _constrain(_pareto_jit(key, b, shape, dtype), out_sharding)


def _rayleigh(key, scale, shape, dtype):
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    root = lax.sqrt(lax.mul(lax.log(u), _c(-2, dtype)))
    return lax.mul(_as(scale, dtype, shape), root)


_rayleigh_jit = _sampler_jit(_rayleigh, static_argnums=(2, 3))


def rayleigh(key: Any, scale: Any, shape: Any = None, dtype: Any = None, *,
             out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the Rayleigh distribution with ``scale`` (density x/s^2 exp(-x^2 / 2s^2))."""
    _check_key(key)
    dtype = _float_dtype(dtype, "rayleigh")
    shape = _out_shape("rayleigh", shape, _param_shape(scale, "scale", "rayleigh"))
    return _constrain(_rayleigh_jit(key, scale, shape, dtype), out_sharding)


def _lognormal(key, sigma, shape, dtype):
    return lax.exp(lax.mul(_normal(key, shape, dtype), _as(sigma, dtype, shape)))


_lognormal_jit = _sampler_jit(_lognormal, static_argnums=(2, 3))


def lognormal(key: Any, sigma: Any = _ONE, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of exp(sigma * N(0, 1))."""
    _check_key(key)
    dtype = _float_dtype(dtype, "lognormal")
    shape = _out_shape("lognormal", shape, _param_shape(sigma, "sigma", "lognormal"))
    return _constrain(_lognormal_jit(key, sigma, shape, dtype), out_sharding)


def _wald(key, mean, shape, dtype):
    key_normal, key_uniform = _two_keys(key)
    mean = _as(mean, dtype, shape)
    v = _normal(key_normal, shape, dtype)
    z = _uniform(key_uniform, shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    root = lax.sqrt(lax.add(lax.mul(lax.mul(_c(4, dtype), mean), y), lax.mul(mean_sq, y_sq)))
    half_mean = lax.div(mean, _c(2, dtype))
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), _c(2, dtype))), lax.mul(half_mean, root))
    take_x = lax.le(z, lax.div(mean, lax.add(mean, x)))
    return lax.select_n(take_x, lax.div(mean_sq, x), x)


_wald_jit = _sampler_jit(_wald, static_argnums=(2, 3))


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None, *, out_sharding: Any = None):
    """Samples of the Wald (inverse Gaussian) distribution with ``mean`` and shape 1."""
    _check_key(key)
    dtype = _float_dtype(dtype, "wald")
    shape = _out_shape("wald", shape, _param_shape(mean, "mean", "wald"))
    return _constrain(_wald_jit(key, mean, shape, dtype), out_sharding)


def _triangular(key, left, mode, right, shape, dtype):
    left, mode, right = (_as(x, dtype, shape) for x in (left, mode, right))
    width = lax.sub(right, left)
    split_at = lax.div(lax.sub(mode, left), width)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    rising = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    falling_area = lax.mul(lax.mul(lax.sub(_c(1, dtype), u), width), lax.sub(right, mode))
    falling = lax.sub(right, lax.sqrt(falling_area))
    return lax.select_n(lax.lt(u, split_at), falling, rising)


_triangular_jit = _sampler_jit(_triangular, static_argnums=(4, 5))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None, dtype: Any = None,
               *, out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the triangular distribution on [left, right] peaking at ``mode``."""
    _check_key(key)
    dtype = _float_dtype(dtype, "triangular")
    shapes = [_param_shape(x, n, "triangular") for x, n in
              ((left, "left"), (mode, "mode"), (right, "right"))]  # fmt: skip
    shape = _out_shape("triangular", shape, *shapes)
    return _constrain(_triangular_jit(key, left, mode, right, shape, dtype), out_sharding)


def _weibull_min(key, scale, concentration, shape, dtype):
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    exponential = lax.neg(lax.log1p(lax.neg(u)))
    # JAX's broadcasting and promotion: the parameters keep their own types here.
    return enp.multiply(enp.power(exponential, enp.true_divide(1.0, concentration)), scale)


_weibull_min_jit = _sampler_jit(_weibull_min, static_argnums=(3, 4))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (), dtype: Any = None):
    """Samples of the Weibull distribution: ``scale * Exponential ** (1 / concentration)``."""
    _check_key(key)
    dtype = _float_dtype(dtype, "weibull_min")
    _param_shape(scale, "scale", "weibull_min")
    _param_shape(concentration, "concentration", "weibull_min")
    return _weibull_min_jit(key, scale, concentration, _shape(shape), dtype)


def _geometric(key, p, shape, dtype):
    (p,) = promote_to_inexact(p)
    float_dtype = get_aval(p).dtype
    u = _uniform(key, shape, float_dtype, 0.0, 1.0)
    # u = 0 counts as 1 (JAX's choice), so that log(u) stays finite.
    u = lax.select_n(lax.eq(u, _c(0, float_dtype)), u, _broadcast(_c(1, float_dtype), shape))
    log_one_minus_p = _broadcast(lax.log1p(lax.neg(p)), shape)
    trials = lax.add(lax.floor(lax.div(lax.log(u), log_one_minus_p)), _c(1, float_dtype))
    return convert_element_type(trials, dtype)


_geometric_jit = _sampler_jit(_geometric, static_argnums=(2, 3))


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:  # fmt: skip
    """The number of Bernoulli(p) trials up to and including the first success (>= 1)."""
    _check_key(key)
    dtype = _int_dtype(dtype, "geometric")
    shape = _out_shape("geometric", shape, _param_shape(p, "p", "geometric"))
    return _constrain(_geometric_jit(key, p, shape, dtype), out_sharding)


def _rademacher(key, shape, dtype):
    float_dtype = dtypes.default_float()
    heads = _bernoulli(key, shape, float_dtype, _c(0.5, float_dtype))
    return lax.sub(lax.mul(_c(2, dtype), convert_element_type(heads, dtype)), _c(1, dtype))


_rademacher_jit = _sampler_jit(_rademacher, static_argnums=(1, 2))


def rademacher(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None):
    """Random signs: -1 or +1 with equal probability."""
    _check_key(key)
    dtype = _numeric_dtype(dtype, dtypes.default_int(), "rademacher")
    return _constrain(_rademacher_jit(key, _shape(shape), dtype), out_sharding)


def _maxwell(key, shape, dtype):
    xyz = _normal(key, (*shape, 3), dtype)
    return lax.sqrt(reduce_sum(lax.mul(xyz, xyz), (len(shape),)))


_maxwell_jit = _sampler_jit(_maxwell, static_argnums=(1, 2))


def maxwell(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Samples of the Maxwell distribution: the length of a standard normal 3-vector."""
    _check_key(key)
    out = _maxwell_jit(key, _shape(shape), _float_dtype(dtype, "maxwell"))
    return _constrain(out, out_sharding)


def _double_sided_maxwell(key, loc, scale, shape, dtype):
    key_maxwell, key_sign = _two_keys(key)
    magnitude = _maxwell(key_maxwell, shape, dtype)
    sign = _rademacher(key_sign, shape, dtype)
    return enp.add(enp.multiply(lax.mul(sign, magnitude), scale), loc)


_double_sided_maxwell_jit = _sampler_jit(_double_sided_maxwell, static_argnums=(3, 4))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (), dtype: Any = None):
    """Samples of ``loc + scale * sign * Maxwell``. As in JAX, the result's shape is
    ``shape + broadcast(loc, scale).shape`` (``shape`` defaults to the parameters' shape)."""
    _check_key(key)
    dtype = _float_dtype(dtype, "double_sided_maxwell")
    loc_shape = _param_shape(loc, "loc", "double_sided_maxwell")
    scale_shape = _param_shape(scale, "scale", "double_sided_maxwell")
    params = _out_shape("double_sided_maxwell", None, loc_shape, scale_shape)
    shape = _shape(shape) or params
    return _double_sided_maxwell_jit(key, loc, scale, shape + params, dtype)


# --------------------------------------------------------------------------------------------
# Transforms of gamma draws


def _t(key, df, shape, dtype):
    key_normal, key_gamma = _two_keys(key)
    df = _as(df, dtype, shape)
    n = _normal(key_normal, shape, dtype)
    half_df = lax.div(df, _c(2, dtype))
    g = _gamma(key_gamma, half_df, shape, dtype, False)
    return lax.mul(n, lax.sqrt(lax.div(half_df, g)))


_t_jit = _sampler_jit(_t, static_argnums=(2, 3))


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None, *, out_sharding: Any = None):
    """Samples of Student's t distribution with ``df`` degrees of freedom."""
    _check_key(key)
    dtype = _float_dtype(dtype, "t")
    shape = _out_shape("t", shape, _param_shape(df, "df", "t"))
    return _constrain(_t_jit(key, df, shape, dtype), out_sharding)


def _chisquare(key, df, shape, dtype):
    half_df = lax.div(convert_element_type(df, dtype), _c(2, dtype))
    return lax.mul(lax.exp(_gamma(key, half_df, shape, dtype, True)), _c(2, dtype))


_chisquare_jit = _sampler_jit(_chisquare, static_argnums=(2, 3))


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the chi-square distribution with ``df`` degrees of freedom."""
    _check_key(key)
    dtype = _float_dtype(dtype, "chisquare")
    shape = _out_shape("chisquare", shape, _param_shape(df, "df", "chisquare"))
    return _constrain(_chisquare_jit(key, df, shape, dtype), out_sharding)


def _f(key, dfnum, dfden, shape, dtype):
    key_den, key_num = _two_keys(key)
    dfnum, dfden = _as(dfnum, dtype, shape), _as(dfden, dtype, shape)
    num = lax.div(_chisquare(key_num, dfnum, shape, dtype), dfnum)
    den = lax.div(_chisquare(key_den, dfden, shape, dtype), dfden)
    return lax.div(num, den)


_f_jit = _sampler_jit(_f, static_argnums=(3, 4))


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None, *,
      out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the F distribution with ``dfnum`` and ``dfden`` degrees of freedom."""
    _check_key(key)
    dtype = _float_dtype(dtype, "f")
    shape = _out_shape(
        "f", shape, _param_shape(dfnum, "dfnum", "f"), _param_shape(dfden, "dfden", "f")
    )
    return _constrain(_f_jit(key, dfnum, dfden, shape, dtype), out_sharding)


def _generalized_normal(key, p, shape, dtype):
    key_gamma, key_sign = _two_keys(key)
    inverse_p = enp.true_divide(1.0, p)
    g = _gamma(key_gamma, inverse_p, shape, dtype, False)
    sign = _rademacher(key_sign, shape, dtype)
    return lax.mul(sign, enp.power(g, inverse_p))


_generalized_normal_jit = _sampler_jit(_generalized_normal, static_argnums=(2, 3))


def generalized_normal(key: Any, p: Any, shape: Any = (), dtype: Any = None, *,
                       out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the generalized normal distribution (density proportional to
    exp(-|x|^p)): p = 1 is Laplace, p = 2 a normal of variance 1/2, large p nearly uniform."""
    _check_key(key)
    dtype = _float_dtype(dtype, "generalized_normal")
    shape = _out_shape("generalized_normal", shape, _param_shape(p, "p", "generalized_normal"))
    return _constrain(_generalized_normal_jit(key, p, shape, dtype), out_sharding)


def _ball(key, p, d, shape, dtype):
    key_direction, key_radius = _two_keys(key)
    g = _generalized_normal(key_direction, p, (*shape, d), dtype)
    e = _exponential(key_radius, shape, dtype)
    norm_p = reduce_sum(enp.power(lax.abs(g), p), (len(shape),))
    radius = enp.power(lax.add(norm_p, e), enp.true_divide(1.0, p))
    return lax.div(g, _broadcast(expand_dims(radius, (len(shape),)), (*shape, d)))


_ball_jit = _sampler_jit(_ball, static_argnums=(2, 3, 4))


def ball(key: Any, d: int, p: Any = 2, shape: Any = (), dtype: Any = None, *,
         out_sharding: Any = None) -> Any:  # fmt: skip
    """Points uniformly distributed in the ``d``-dimensional unit ball of the ``p``-norm."""
    _check_key(key)
    dtype = _float_dtype(dtype, "ball")
    d = operator.index(core.concrete_or_error(d, "ball's d (the dimension)"))
    if d < 0:
        raise ValueError(f"ball: d must be >= 0, got {d}{errors.where()}")
    if _param_shape(p, "p", "ball"):
        raise ValueError(f"ball: p must be a scalar, got shape {np.shape(p)}{errors.where()}")
    return _constrain(_ball_jit(key, p, d, _shape(shape), dtype), out_sharding)


# --------------------------------------------------------------------------------------------
# Poisson: Knuth's product of uniforms for small rates, Hormann's transformed rejection for
# large ones. Both run over the whole output from the same key; each element keeps its own.


def _any(x: Any) -> Any:
    return reduce_or(x, tuple(range(get_aval(x).ndim)))


_I32 = np.dtype(np.int32)
_I32_ZERO = np.zeros((), _I32)


def _next(rounds: Any) -> Any:
    return lax.add(rounds, np.ones((), _I32))


def _below_cap(rounds: Any, dtype: np.dtype) -> Any:
    """JAX stops after as many rounds as the output's integer type can count."""
    cap = min(np.iinfo(dtype).max, np.iinfo(_I32).max)
    return lax.lt(rounds, np.asarray(cap, _I32))


def _poisson_knuth(key, lam, shape, dtype):
    """Counts the uniforms whose running product stays above exp(-lam), minus one."""
    neg_lam = lax.neg(lam)

    def not_done(state):
        return lax.bitwise_and(_any(lax.gt(state[3], neg_lam)), _below_cap(state[0], dtype))

    def draw(state):
        rounds, key_, count, log_product = state
        key_, sub = _two_keys(key_)
        count = lax.select_n(lax.gt(log_product, neg_lam), count, lax.add(count, _c(1, dtype)))
        u = _uniform(sub, shape, _F32, 0.0, 1.0)
        return _next(rounds), key_, count, lax.add(log_product, lax.log(u))

    init = (_I32_ZERO, key, _broadcast(_c(0, dtype), shape), _broadcast(_c(0, _F32), shape))
    count = while_loop(not_done, draw, init)[2]
    return lax.sub(count, _c(1, dtype))


def _poisson_rejection(key, lam, shape, dtype):
    def c(value):
        return _c(value, _F32)

    log_lam = lax.log(lam)
    b = lax.add(c(0.931), lax.mul(c(2.53), lax.sqrt(lam)))
    a = lax.add(c(-0.059), lax.mul(c(0.02483), b))
    inv_alpha = lax.add(c(1.1239), lax.div(c(1.1328), lax.sub(b, c(3.4))))
    v_r = lax.sub(c(0.9277), lax.div(c(3.6224), lax.sub(b, c(2))))

    def not_done(state):
        return lax.bitwise_and(_any(lax.bitwise_not(state[3])), _below_cap(state[0], dtype))

    def draw(state):
        rounds, key_, k_out, accepted = state
        keys = _split(key_, (3,))
        u = lax.sub(_uniform(_nth(keys, 1), shape, _F32, 0.0, 1.0), c(0.5))
        v = _uniform(_nth(keys, 2), shape, _F32, 0.0, 1.0)
        u_shifted = lax.sub(c(0.5), lax.abs(u))
        k = lax.floor(
            lax.add(
                lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2), a), u_shifted), b), u), lam),
                c(0.43),
            )
        )
        s = lax.log(
            lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(u_shifted, u_shifted)), b))
        )
        t_ = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)), lgamma(lax.add(k, c(1))))
        accept_fast = lax.bitwise_and(lax.ge(u_shifted, c(0.07)), lax.le(v, v_r))
        reject = lax.bitwise_or(
            lax.lt(k, c(0)),
            lax.bitwise_and(lax.lt(u_shifted, c(0.013)), lax.gt(v, u_shifted)),
        )
        accept = lax.bitwise_or(
            accept_fast, lax.bitwise_and(lax.bitwise_not(reject), lax.le(s, t_))
        )
        k_out = lax.select_n(accept, k_out, k)
        return _next(rounds), _nth(keys, 0), k_out, lax.bitwise_or(accepted, accept)

    init = (_I32_ZERO, key, _broadcast(c(-1), shape), _broadcast(np.asarray(False), shape))
    k = while_loop(not_done, draw, init)[2]
    return convert_element_type(k, dtype)


def _poisson(key, lam, shape, dtype):
    lam = convert_element_type(_broadcast(lam, shape), _F32)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _c(10, _F32)))
    lam_knuth = lax.select_n(use_knuth, _broadcast(_c(0, _F32), shape), lam)
    # The rejection method's acceptance rate grows with the rate: a large one for the rest.
    lam_rejection = lax.select_n(use_knuth, lam, _broadcast(_c(1e5, _F32), shape))
    result = lax.select_n(
        use_knuth,
        _poisson_rejection(key, lam_rejection, shape, dtype),
        _poisson_knuth(key, lam_knuth, shape, dtype),
    )
    zero = _broadcast(_c(0, dtype), shape)
    return lax.select_n(lax.eq(lam, _c(0, _F32)), result, zero)


_poisson_jit = _sampler_jit(_poisson, static_argnums=(2, 3))


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None, *,
            out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the Poisson distribution with rate ``lam`` (>= 0), as integers."""
    _check_key(key)
    dtype = _int_dtype(dtype, "poisson")
    lam_shape = _param_shape(lam, "lam", "poisson")
    shape = lam_shape if shape is None else _shape(shape)
    # JAX broadcasts lam to the shape (leading axes may be added, none may shrink).
    _out_shape("poisson", shape, lam_shape)
    return _constrain(_poisson_jit(key, lam, shape, dtype), out_sharding)


# --------------------------------------------------------------------------------------------
# Binomial: sums of geometric gaps when n * p is small, BTRS rejection (Hormann) otherwise.
# Both work with q = min(p, 1 - p) and flip the count back at the end.

# log(k!) - Stirling's approximation, for k = 0..9 (beyond, the series is accurate).
_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def _stirling_tail(k):
    dtype = get_aval(k).dtype
    small = lax.le(k, _c(9, dtype))
    k = clamp(_c(0, dtype), k, _c(9, dtype))
    k_plus_1 = lax.add(k, _c(1, dtype))
    square = lax.mul(k_plus_1, lax.add(k, _c(1, dtype)))
    series = lax.sub(_c(1 / 360, dtype), lax.div(_c(1 / 1260, dtype), square))
    series = lax.div(lax.sub(_c(1 / 12, dtype), lax.div(series, square)), lax.add(k, _c(1, dtype)))
    index = convert_element_type(lax.floor(k), np.dtype(np.int32))
    table = advanced_indexing.take(np.asarray(_STIRLING_TAIL, dtype), index, mode="clip")
    return lax.select_n(small, series, table)


def _binomial_inversion(key, count, q, shape):
    """Counts geometric(q) gaps until their sum passes ``count``, minus one."""
    dtype = get_aval(q).dtype
    log1m_q = lax.log1p(lax.neg(q))

    def not_done(state):
        return _any(lax.le(state[2], count))

    def draw(state):
        key_, num_gaps, gap_sum = state
        sub, key_ = _two_keys(key_)
        num_gaps = lax.select_n(lax.le(gap_sum, count), num_gaps, lax.add(num_gaps, _c(1, dtype)))
        u = _uniform(sub, shape, dtype, 0.0, 1.0)
        gap = lax.ceil(lax.div(lax.log(u), log1m_q))
        return key_, num_gaps, lax.add(gap_sum, gap)

    zeros = _broadcast(_c(0, dtype), shape)
    num_gaps = while_loop(not_done, draw, (key, zeros, zeros))[1]
    return lax.sub(num_gaps, _c(1, dtype))


def _btrs(key, count, q, shape):
    dtype = get_aval(q).dtype

    def c(value):
        return _c(value, dtype)

    one_minus_q = lax.sub(c(1), q)
    stddev = lax.sqrt(lax.mul(lax.mul(count, q), one_minus_q))
    b = lax.add(c(1.15), lax.mul(c(2.53), stddev))
    a = lax.add(lax.add(c(-0.0873), lax.mul(c(0.0248), b)), lax.mul(c(0.01), q))
    center = lax.add(lax.mul(count, q), c(0.5))
    v_r = lax.sub(c(0.92), lax.div(c(4.2), b))
    r = lax.div(q, lax.sub(c(1), q))
    alpha = lax.mul(lax.add(c(2.83), lax.div(c(5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, c(1)), q))
    count_minus_m_plus_1 = lax.add(lax.sub(count, m), c(1))
    # The bound's terms that do not depend on the proposal k.
    bound_m = lax.mul(
        lax.add(m, c(0.5)), lax.log(lax.div(lax.add(m, c(1)), lax.mul(r, count_minus_m_plus_1)))
    )

    def not_done(state):
        return _any(lax.bitwise_not(state[2]))

    def draw(state):
        key_, k_out, accepted = state
        keys = _split(key_, (3,))
        u = _uniform(_nth(keys, 1), shape, dtype, 0.0, 1.0)
        v = _uniform(_nth(keys, 2), shape, dtype, 0.0, 1.0)
        u = lax.sub(u, c(0.5))
        us = lax.sub(c(0.5), lax.abs(u))
        accept_fast = lax.bitwise_and(lax.ge(us, c(0.07)), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2), a), us), b), u), center))
        reject = lax.bitwise_or(lax.lt(k, c(0)), lax.gt(k, count))
        log_v = lax.log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        count_minus_k_plus_1 = lax.add(lax.sub(count, k), c(1))
        bound = lax.add(
            bound_m,
            lax.mul(
                lax.add(count, c(1)),
                lax.log(lax.div(lax.add(lax.sub(count, m), c(1)), count_minus_k_plus_1)),
            ),
        )
        bound = lax.add(
            bound,
            lax.mul(
                lax.add(k, c(0.5)),
                lax.log(lax.div(lax.mul(r, count_minus_k_plus_1), lax.add(k, c(1)))),
            ),
        )
        bound = lax.add(bound, _stirling_tail(m))
        bound = lax.add(bound, _stirling_tail(lax.sub(count, m)))
        bound = lax.sub(bound, _stirling_tail(k))
        bound = lax.sub(bound, _stirling_tail(lax.sub(count, k)))
        accept = lax.bitwise_or(
            accept_fast, lax.bitwise_and(lax.bitwise_not(reject), lax.le(log_v, bound))
        )
        return _nth(keys, 0), lax.select_n(accept, k_out, k), lax.bitwise_or(accepted, accept)

    init = (key, _broadcast(c(-1), shape), _broadcast(np.asarray(False), shape))
    return while_loop(not_done, draw, init)[1]


def _binomial(key, count, prob, shape, dtype):
    (prob,) = promote_to_inexact(prob)
    float_dtype = get_aval(prob).dtype

    def full(value):
        return _broadcast(_c(value, float_dtype), shape)

    count = _as(count, float_dtype, shape)
    prob = _broadcast(prob, shape)
    p_below_half = lax.lt(prob, _c(0.5, float_dtype))
    q = lax.select_n(p_below_half, lax.sub(_c(1, float_dtype), prob), prob)
    count_nan_or_negative = lax.bitwise_or(lax.ne(count, count), lax.lt(count, _c(0, float_dtype)))
    count_inf = lax.eq(lax.abs(count), _c(np.inf, float_dtype))
    q_nan = lax.ne(q, q)
    q_negative = lax.lt(q, _c(0, float_dtype))
    q = lax.select_n(lax.bitwise_or(q_nan, q_negative), q, full(0.01))
    use_inversion = lax.bitwise_or(
        count_nan_or_negative, lax.le(lax.mul(count, q), _c(10, float_dtype))
    )
    count = lax.floor(count)
    count_inversion = lax.select_n(use_inversion, full(0), count)
    # Placeholders that the rejection method accepts quickly, for the elements it does not own.
    count_btrs = lax.select_n(use_inversion, count, full(1e4))
    q_btrs = lax.select_n(use_inversion, q, full(0.5))
    samples = lax.select_n(
        use_inversion,
        _btrs(key, count_btrs, q_btrs, shape),
        _binomial_inversion(key, count_inversion, q, shape),
    )
    samples = convert_element_type(samples, dtype)
    invalid = lax.bitwise_or(lax.bitwise_or(q_negative, q_nan), count_nan_or_negative)
    nan = _broadcast(_c(np.nan, dtype), shape)
    samples = lax.select_n(invalid, samples, nan)
    infinite = lax.bitwise_and(count_inf, lax.bitwise_not(invalid))
    samples = lax.select_n(infinite, samples, _broadcast(_c(np.inf, dtype), shape))
    keep = lax.bitwise_or(
        lax.bitwise_or(lax.bitwise_or(p_below_half, count_nan_or_negative), q_nan), count_inf
    )
    return lax.select_n(keep, lax.sub(convert_element_type(count, dtype), samples), samples)


_binomial_jit = _sampler_jit(_binomial, static_argnums=(3, 4))


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Samples of the binomial distribution: successes in ``n`` Bernoulli(p) trials (floats;
    nan for invalid parameters, inf for infinite ``n``)."""
    _check_key(key)
    dtype = _float_dtype(dtype, "binomial")
    shape = _out_shape(
        "binomial", shape, _param_shape(n, "n", "binomial"), _param_shape(p, "p", "binomial")
    )
    return _binomial_jit(key, n, p, shape, dtype)


def _multinomial(key, n, p, shape, dtype, unroll):
    n, p = promote_to_inexact(n, p)
    n, p = _broadcast(n, shape[:-1]), _broadcast(p, shape)
    p = move_axis(p, len(shape) - 1, 0)
    float_dtype = get_aval(p).dtype
    remaining = associative_scan(lax.add, p, reverse=True, axis=0)
    zero = lax.eq(remaining, _c(0, float_dtype))
    ratios = lax.div(
        p, lax.select_n(zero, remaining, _broadcast(_c(1, float_dtype), get_aval(p).shape))
    )
    keys = _split(key, (shape[-1],))

    def one_category(remainder, ratio_and_key):
        ratio, key_ = ratio_and_key
        ratio = clamp(_c(0, float_dtype), ratio, _c(1, float_dtype))
        count = _binomial(key_, remainder, ratio, shape[:-1], float_dtype)
        return lax.sub(remainder, count), count

    _, counts = scan(one_category, n, (ratios, keys), unroll=unroll)
    return convert_element_type(move_axis(counts, 0, len(shape) - 1), dtype)


_multinomial_jit = _sampler_jit(_multinomial, static_argnums=(3, 4, 5))


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = None,
                unroll: int | bool = 1) -> Any:  # fmt: skip
    """Counts of ``n`` draws among the categories of the last axis of ``p`` (probabilities,
    need not sum to 1: each category takes a binomial share of what the earlier ones left).
    ``shape`` (the result's, ending with the number of categories) defaults to ``p.shape``."""
    _check_key(key)
    dtype = _numeric_dtype(dtype, dtypes.default_float(), "multinomial")
    n_shape = _param_shape(n, "n", "multinomial")
    p_shape = _param_shape(p, "p", "multinomial")
    if not p_shape:
        raise ValueError(f"multinomial needs p of rank >= 1, got a scalar{errors.where()}")
    shape = p_shape if shape is None else _shape(shape)
    if not shape:
        raise ValueError(f"multinomial: shape must have rank >= 1, got (){errors.where()}")
    _out_shape("multinomial", shape, p_shape)
    _out_shape("multinomial", shape[:-1], n_shape)
    return _multinomial_jit(key, n, p, shape, dtype, unroll)


# --------------------------------------------------------------------------------------------
# Keys


def clone(key: Any) -> Any:
    """The same key. JAX uses it to reuse a key deliberately under its key-reuse checker;
    ember's keys are plain ``uint32`` data, so this is the identity."""
    _key_data_shape(key, "clone")
    return key


def key_impl(keys: Any) -> str:
    """The name of the keys' PRNG implementation: always ``"threefry2x32"`` in ember."""
    _key_data_shape(keys, "key_impl")
    return "threefry2x32"


def _key_data_shape(keys: Any, what: str) -> tuple[int, ...]:
    """Checks that ``keys`` are Threefry key data (any batch shape, last axis of 2)."""
    try:
        aval = get_aval(keys)
    except errors.EmberTypeError:
        aval = None
    if aval is None or not aval.shape or aval.shape[-1] != 2 or aval.dtype != np.uint32:
        shown = aval.str_short() if aval is not None else type(keys).__name__
        raise errors.EmberTypeError(
            f"{what} expects PRNG keys (uint32 data with a last axis of 2, from "
            f"ember.random.key), got {shown}{errors.where()}"
        )
    return aval.shape[:-1]
