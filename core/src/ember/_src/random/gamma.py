"""Gamma samples and the samplers built on them (``ember.random.gamma``, ``loggamma``,
``beta``, ``dirichlet``), bit-for-bit those of JAX 0.10.

The algorithm is JAX's: Marsaglia and Tsang's rejection method, run for each element of
``a`` with its own key (``split(key, a.size)``), vectorised with ``vmap`` over a
``while_loop`` that keeps drawing until the element is accepted. For ``a < 1`` a sample of
Gamma(a + 1) is scaled by ``U ** (1 / a)`` (in log space for ``loggamma``, where tiny
samples would underflow). Drawing the same numbers in the same order from the same keys
gives the same samples as JAX.

The samples come from the ``random_gamma`` primitive (``primitives/random_gamma.py``), so that
their derivative can be given directly; its lowering and reference rules run the sampler
defined here, registered with it below.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.primitives.arithmetic import add, div, max as max_, mul, neg, sub
from ember._src.primitives.bits import bitwise_and, bitwise_or
from ember._src.primitives.comparisons import eq, ge, le
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.math_functions import exp, log, pow as pow_, sqrt
from ember._src.primitives.random_gamma import random_gamma_p, register_sampler
from ember._src.primitives.reduce import reduce_max
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    convert_element_type,
    reduce_sum,
    reshape,
)
from ember._src.primitives.slicing import slice_op
from ember._src.random.prng import (
    _broadcast,
    _exponential,
    _float_dtype,
    _halves,
    _normal,
    _shape,
    _split,
    _uniform,
    with_out_sharding,
)
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap

# --------------------------------------------------------------------------------------------
# One sample


def _nth(keys: Any, i: int) -> Any:
    return reshape(slice_op(keys, (i, 0), (i + 1, 2)), (2,))


def _gamma_one(key: Any, alpha: Any, log_space: bool) -> Any:
    """One sample of Gamma(alpha, 1) (or its logarithm) for a scalar ``alpha``."""
    dtype = get_aval(alpha).dtype

    def const(value: float) -> Any:
        return np.asarray(value, dtype)

    zero, one = const(0), const(1)
    # Gamma(a) ~ Gamma(a + 1) * U ** (1 / a): boost a < 1 so that the method applies.
    boost_mask = ge(alpha, one)
    alpha_orig = alpha
    alpha = select_n(boost_mask, add(alpha, one), alpha)
    d = sub(alpha, const(1 / 3))
    c = div(const(1 / 3), sqrt(d))

    def rejected(state):
        _, x2, v, u = state
        # Accept when u < 1 - 0.0331 x^4 (the squeeze) or log u < x^2/2 + d (1 - v + log v).
        squeeze = ge(u, sub(one, mul(const(0.0331), mul(x2, x2))))
        exact = ge(
            log(u),
            add(mul(x2, const(0.5)), mul(d, add(sub(one, v), log(v)))),
        )
        return bitwise_and(squeeze, exact)

    def draw_positive_v(state):
        keys = _split(state[0], (2,))
        x = _normal(_nth(keys, 1), (), dtype)
        return _nth(keys, 0), x, add(one, mul(x, c))

    def propose(state):
        keys = _split(state[0], (3,))
        _, x, v = while_loop(
            lambda s: le(s[2], zero), draw_positive_v, (_nth(keys, 1), zero, const(-1))
        )
        u = _uniform(_nth(keys, 2), (), dtype, 0.0, 1.0)
        return _nth(keys, 0), mul(x, x), mul(mul(v, v), v), u

    keys = _split(key, (2,))
    # The initial state is rejected, so that the loop draws at least once.
    _, _, v, _ = while_loop(rejected, propose, (_nth(keys, 0), zero, one, const(2)))
    boost_key = _nth(keys, 1)
    if log_space:
        # log U ~ -Exponential, computed from log(1 - U) as the plain sampler uses 1 - U.
        log_u = neg(_exponential(boost_key, (), dtype))
        log_boost = select_n(
            bitwise_or(boost_mask, eq(log_u, zero)),
            mul(log_u, div(one, alpha_orig)),
            zero,
        )
        return add(add(log(d), log(v)), log_boost)
    u = sub(one, _uniform(boost_key, (), dtype, 0.0, 1.0))
    boost = select_n(boost_mask, pow_(u, div(one, alpha_orig)), one)
    return mul(mul(d, v), boost)


def _gamma_impl(key: Any, a: Any, *, log_space: bool) -> Any:
    """Samples for every element of ``a``; ``key``'s leading axes (if any) batch ``a``'s."""
    a_shape = get_aval(a).shape
    batch_ndim = get_aval(key).ndim - 1
    size, count = math.prod(a_shape), math.prod(a_shape[batch_ndim:])
    if size == 0:
        return a
    keys = reshape(key, (size // count, 2))
    keys = reshape(vmap(lambda k: _split(k, (count,)))(keys), (size, 2))
    alphas = reshape(a, (size,))
    samples = vmap(lambda k, alpha: _gamma_one(k, alpha, log_space))(keys, alphas)
    return reshape(samples, a_shape)


register_sampler(_gamma_impl)


# --------------------------------------------------------------------------------------------
# Public samplers


def _out_shape(what: str, shape: Any, *param_shapes: tuple[int, ...]) -> tuple[int, ...]:
    broadcast = np.broadcast_shapes(*param_shapes) if param_shapes else ()
    if shape is None:
        return broadcast
    shape = _shape(shape)
    try:
        ok = np.broadcast_shapes(shape, broadcast) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"{what}: shape {shape} is not broadcast-compatible with the parameters' shapes "
            f"{list(param_shapes)}{errors.where()}"
        )
    return shape


def _check_key(key: Any) -> None:
    _halves(key)  # raises a clear error for anything but a single key


def _gamma(key, a, shape, dtype, log_space):
    a = _broadcast(convert_element_type(a, dtype), shape)
    return random_gamma_p.bind(key, a, log_space=log_space)


_gamma_jit = jit(_gamma, static_argnums=(2, 3, 4))


@with_out_sharding
def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Samples of Gamma(a, 1) (density x^(a-1) e^-x / Gamma(a)); divide by a rate or
    multiply by a scale for other parameterisations. Differentiable with respect to ``a``."""
    _check_key(key)
    dtype = _float_dtype(dtype, "gamma")
    shape = _out_shape("gamma", shape, get_aval(a).shape)
    return _gamma_jit(key, a, shape, dtype, False)


@with_out_sharding
def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """The logarithms of Gamma(a, 1) samples, computed so that ``exp(loggamma(...))`` equals
    ``gamma(...)`` while keeping precision for tiny samples (small ``a``)."""
    _check_key(key)
    dtype = _float_dtype(dtype, "loggamma")
    shape = _out_shape("loggamma", shape, get_aval(a).shape)
    return _gamma_jit(key, a, shape, dtype, True)


def _beta(key, a, b, shape, dtype):
    keys = _split(key, (2,))
    log_a = _gamma(_nth(keys, 0), a, shape, dtype, True)
    log_b = _gamma(_nth(keys, 1), b, shape, dtype, True)
    # gamma_a / (gamma_a + gamma_b), scaled by the larger one so that neither underflows.
    log_max = max_(log_a, log_b)
    scaled_a, scaled_b = exp(sub(log_a, log_max)), exp(sub(log_b, log_max))
    return div(scaled_a, add(scaled_a, scaled_b))


_beta_jit = jit(_beta, static_argnums=(3, 4))


@with_out_sharding
def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Samples of Beta(a, b) (density proportional to x^(a-1) (1-x)^(b-1) on [0, 1])."""
    _check_key(key)
    dtype = _float_dtype(dtype, "beta")
    shape = _out_shape("beta", shape, get_aval(a).shape, get_aval(b).shape)
    return _beta_jit(key, a, b, shape, dtype)


def _dirichlet(key, alpha, shape, dtype):
    n = get_aval(alpha).shape[-1]
    full = (*shape, n)
    log_samples = _gamma(key, alpha, full, dtype, True)
    # A softmax of the log-samples normalises them without overflow or underflow.
    axis = len(full) - 1
    peak = broadcast_in_dim(reduce_max(log_samples, (axis,)), full, tuple(range(axis)))
    unnormalized = exp(sub(log_samples, peak))
    total = broadcast_in_dim(reduce_sum(unnormalized, (axis,)), full, tuple(range(axis)))
    return div(unnormalized, total)


_dirichlet_jit = jit(_dirichlet, static_argnums=(2, 3))


@with_out_sharding
def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Samples of Dirichlet(alpha) over the last axis of ``alpha``; ``shape`` is the batch
    shape, the result's shape is ``shape + alpha.shape[-1:]``."""
    _check_key(key)
    dtype = _float_dtype(dtype, "dirichlet")
    alpha_shape = get_aval(alpha).shape
    if not alpha_shape:
        raise ValueError(f"dirichlet needs alpha of rank >= 1, got a scalar{errors.where()}")
    shape = _out_shape("dirichlet", shape, alpha_shape[:-1])
    return _dirichlet_jit(key, alpha, shape, dtype)
