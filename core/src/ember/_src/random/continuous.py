"""Continuous samplers of ``ember.random``, bit-for-bit those of JAX 0.10: the distributions
built by transforming uniform, normal, exponential and gamma draws (``cauchy``, ``pareto``,
``t``, ``chisquare``, ``f``, ``rayleigh``, ``wald``, ``weibull_min``, ``triangular``,
``lognormal``, ``maxwell``, ``double_sided_maxwell``, ``generalized_normal``, ``ball``).

Each sampler splits its key and draws its numbers in JAX's order and evaluates JAX's formula
operation for operation (the same association of sums and products), so that the same key
gives the same samples. The transforms are written with differentiable operations, so
``grad`` flows through the reparameterised samplers (through ``gamma``'s implicit derivative
for ``t``, ``chisquare``, ``f`` and ``generalized_normal``).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.numpy import elementwise as enp
from ember._src.primitives.arithmetic import abs as abs_, add, div, mul, neg, sub
from ember._src.primitives.comparisons import le, lt
from ember._src.primitives.math_functions import exp, integer_pow, log, log1p, sqrt, tan
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import convert_element_type, expand_dims, reduce_sum
from ember._src.random.discrete import _rademacher
from ember._src.random.gamma import _check_key, _gamma
from ember._src.random.prng import (
    _broadcast,
    _exponential,
    _float_dtype,
    _normal,
    _shape,
    _uniform,
)
from ember._src.random.sampling import (
    _as,
    _c,
    _constrain,
    _draw_float,
    _out_shape,
    _param_shape,
    _sampler_jit,
    _two_keys,
)

_ONE = np.float32(1)  # lognormal's default sigma, as in JAX

# --------------------------------------------------------------------------------------------
# Transforms of one uniform, normal or exponential draw


def _cauchy(key, shape, dtype):
    u = _uniform(key, shape, dtype, _c(dtypes.finfo(dtype).eps, dtype), _c(1.0, dtype))
    return tan(mul(_c(np.pi, dtype), sub(u, _c(0.5, dtype))))


_cauchy_jit = _sampler_jit(_cauchy, static_argnums=(1, 2))


def cauchy(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Samples of the standard Cauchy distribution (density proportional to 1 / (1 + x^2))."""
    _check_key(key)
    out = _cauchy_jit(key, _shape(shape), _float_dtype(dtype, "cauchy"))
    return _constrain(out, out_sharding)


def _pareto(key, b, shape, dtype):
    e = _exponential(key, shape, dtype)
    return exp(div(e, _as(b, dtype, shape)))


_pareto_jit = _sampler_jit(_pareto, static_argnums=(2, 3))


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None, *, out_sharding: Any = None):
    """Samples of the Pareto distribution with shape ``b`` (density b / x^(b+1) on x >= 1)."""
    return _draw_float("pareto", _pareto_jit, key, shape, dtype, out_sharding, b=b)


def _rayleigh(key, scale, shape, dtype):
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    root = sqrt(mul(log(u), _c(-2, dtype)))
    return mul(_as(scale, dtype, shape), root)


_rayleigh_jit = _sampler_jit(_rayleigh, static_argnums=(2, 3))


def rayleigh(key: Any, scale: Any, shape: Any = None, dtype: Any = None, *,
             out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the Rayleigh distribution with ``scale`` (density x/s^2 exp(-x^2 / 2s^2))."""
    return _draw_float("rayleigh", _rayleigh_jit, key, shape, dtype, out_sharding, scale=scale)


def _lognormal(key, sigma, shape, dtype):
    return exp(mul(_normal(key, shape, dtype), _as(sigma, dtype, shape)))


_lognormal_jit = _sampler_jit(_lognormal, static_argnums=(2, 3))


def lognormal(key: Any, sigma: Any = _ONE, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of exp(sigma * N(0, 1))."""
    return _draw_float("lognormal", _lognormal_jit, key, shape, dtype, out_sharding, sigma=sigma)


def _wald(key, mean, shape, dtype):
    key_normal, key_uniform = _two_keys(key)
    mean = _as(mean, dtype, shape)
    v = _normal(key_normal, shape, dtype)
    z = _uniform(key_uniform, shape, dtype, 0.0, 1.0)
    y = integer_pow(v, 2)
    y_sq = integer_pow(y, 2)
    mean_sq = integer_pow(mean, 2)
    root = sqrt(add(mul(mul(_c(4, dtype), mean), y), mul(mean_sq, y_sq)))
    half_mean = div(mean, _c(2, dtype))
    x = sub(add(mean, div(mul(mean_sq, y), _c(2, dtype))), mul(half_mean, root))
    take_x = le(z, div(mean, add(mean, x)))
    return select_n(take_x, div(mean_sq, x), x)


_wald_jit = _sampler_jit(_wald, static_argnums=(2, 3))


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None, *, out_sharding: Any = None):
    """Samples of the Wald (inverse Gaussian) distribution with ``mean`` and shape 1."""
    return _draw_float("wald", _wald_jit, key, shape, dtype, out_sharding, mean=mean)


def _triangular(key, left, mode, right, shape, dtype):
    left, mode, right = (_as(x, dtype, shape) for x in (left, mode, right))
    width = sub(right, left)
    split_at = div(sub(mode, left), width)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    rising = add(left, sqrt(mul(mul(u, width), sub(mode, left))))
    falling_area = mul(mul(sub(_c(1, dtype), u), width), sub(right, mode))
    falling = sub(right, sqrt(falling_area))
    return select_n(lt(u, split_at), falling, rising)


_triangular_jit = _sampler_jit(_triangular, static_argnums=(4, 5))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None, dtype: Any = None,
               *, out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the triangular distribution on [left, right] peaking at ``mode``."""
    return _draw_float("triangular", _triangular_jit, key, shape, dtype, out_sharding,
                       left=left, mode=mode, right=right)  # fmt: skip


def _weibull_min(key, scale, concentration, shape, dtype):
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    exponential = neg(log1p(neg(u)))
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


def _maxwell(key, shape, dtype):
    xyz = _normal(key, (*shape, 3), dtype)
    return sqrt(reduce_sum(mul(xyz, xyz), (len(shape),)))


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
    return enp.add(enp.multiply(mul(sign, magnitude), scale), loc)


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
    half_df = div(df, _c(2, dtype))
    g = _gamma(key_gamma, half_df, shape, dtype, False)
    return mul(n, sqrt(div(half_df, g)))


_t_jit = _sampler_jit(_t, static_argnums=(2, 3))


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None, *, out_sharding: Any = None):
    """Samples of Student's t distribution with ``df`` degrees of freedom."""
    return _draw_float("t", _t_jit, key, shape, dtype, out_sharding, df=df)


def _chisquare(key, df, shape, dtype):
    half_df = div(convert_element_type(df, dtype), _c(2, dtype))
    return mul(exp(_gamma(key, half_df, shape, dtype, True)), _c(2, dtype))


_chisquare_jit = _sampler_jit(_chisquare, static_argnums=(2, 3))


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the chi-square distribution with ``df`` degrees of freedom."""
    return _draw_float("chisquare", _chisquare_jit, key, shape, dtype, out_sharding, df=df)


def _f(key, dfnum, dfden, shape, dtype):
    key_den, key_num = _two_keys(key)
    dfnum, dfden = _as(dfnum, dtype, shape), _as(dfden, dtype, shape)
    num = div(_chisquare(key_num, dfnum, shape, dtype), dfnum)
    den = div(_chisquare(key_den, dfden, shape, dtype), dfden)
    return div(num, den)


_f_jit = _sampler_jit(_f, static_argnums=(3, 4))


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None, *,
      out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the F distribution with ``dfnum`` and ``dfden`` degrees of freedom."""
    return _draw_float("f", _f_jit, key, shape, dtype, out_sharding, dfnum=dfnum, dfden=dfden)


def _generalized_normal(key, p, shape, dtype):
    key_gamma, key_sign = _two_keys(key)
    inverse_p = enp.true_divide(1.0, p)
    g = _gamma(key_gamma, inverse_p, shape, dtype, False)
    sign = _rademacher(key_sign, shape, dtype)
    return mul(sign, enp.power(g, inverse_p))


_generalized_normal_jit = _sampler_jit(_generalized_normal, static_argnums=(2, 3))


def generalized_normal(key: Any, p: Any, shape: Any = (), dtype: Any = None, *,
                       out_sharding: Any = None) -> Any:  # fmt: skip
    """Samples of the generalized normal distribution (density proportional to
    exp(-|x|^p)): p = 1 is Laplace, p = 2 a normal of variance 1/2, large p nearly uniform."""
    return _draw_float(
        "generalized_normal", _generalized_normal_jit, key, shape, dtype, out_sharding, p=p
    )


def _ball(key, p, d, shape, dtype):
    key_direction, key_radius = _two_keys(key)
    g = _generalized_normal(key_direction, p, (*shape, d), dtype)
    e = _exponential(key_radius, shape, dtype)
    norm_p = reduce_sum(enp.power(abs_(g), p), (len(shape),))
    radius = enp.power(add(norm_p, e), enp.true_divide(1.0, p))
    return div(g, _broadcast(expand_dims(radius, (len(shape),)), (*shape, d)))


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
