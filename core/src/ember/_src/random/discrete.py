"""Integer-valued samplers of ``ember.random``, bit-for-bit those of JAX 0.10: ``rademacher``
and ``geometric`` (transforms of one draw) and the ones drawn by rejection (``poisson``,
``binomial``, ``multinomial``).

``poisson`` and ``binomial`` loop over the whole output at once, as JAX does: every round
draws a fresh uniform for every element and keeps the ones not yet accepted, until none is
left (Knuth's product of uniforms or a sum of geometric gaps for small means, Hormann's
transformed rejection for large ones). Each evaluates JAX's formulas operation for operation,
so that the same key gives the same samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import advanced_indexing
from ember._src.numpy.operands import promote_to_inexact
from ember._src.primitives.arithmetic import (
    abs as abs_,
    add,
    ceil,
    div,
    floor,
    mul,
    neg,
    sub as sub_,
)
from ember._src.primitives.bits import bitwise_and, bitwise_not, bitwise_or
from ember._src.primitives.clamp import clamp
from ember._src.primitives.comparisons import eq, ge, gt, le, lt, ne
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.control_flow.scan import scan
from ember._src.primitives.math_functions import log, log1p, sqrt
from ember._src.primitives.reduce import reduce_or
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import convert_element_type, move_axis
from ember._src.primitives.special import lgamma
from ember._src.random.gamma import _check_key, _nth
from ember._src.random.prng import (
    _bernoulli,
    _broadcast,
    _float_dtype,
    _shape,
    _split,
    _uniform,
)
from ember._src.random.sampling import (
    _as,
    _c,
    _constrain,
    _int_dtype,
    _numeric_dtype,
    _out_shape,
    _param_shape,
    _sampler_jit,
    _two_keys,
)

_F32 = np.dtype(np.float32)

# --------------------------------------------------------------------------------------------
# Transforms of one draw


def _geometric(key, p, shape, dtype):
    (p,) = promote_to_inexact(p)
    float_dtype = get_aval(p).dtype
    u = _uniform(key, shape, float_dtype, 0.0, 1.0)
    # u = 0 counts as 1 (JAX's choice), so that log(u) stays finite.
    u = select_n(eq(u, _c(0, float_dtype)), u, _broadcast(_c(1, float_dtype), shape))
    log_one_minus_p = _broadcast(log1p(neg(p)), shape)
    trials = add(floor(div(log(u), log_one_minus_p)), _c(1, float_dtype))
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
    return sub_(mul(_c(2, dtype), convert_element_type(heads, dtype)), _c(1, dtype))


_rademacher_jit = _sampler_jit(_rademacher, static_argnums=(1, 2))


def rademacher(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None):
    """Random signs: -1 or +1 with equal probability."""
    _check_key(key)
    dtype = _numeric_dtype(dtype, dtypes.default_int(), "rademacher")
    return _constrain(_rademacher_jit(key, _shape(shape), dtype), out_sharding)


# --------------------------------------------------------------------------------------------
# Poisson: Knuth's product of uniforms for small rates, Hormann's transformed rejection for
# large ones. Both run over the whole output from the same key; each element keeps its own.


def _any(x: Any) -> Any:
    return reduce_or(x, tuple(range(get_aval(x).ndim)))


_I32 = np.dtype(np.int32)
_I32_ZERO = np.zeros((), _I32)


def _next(rounds: Any) -> Any:
    return add(rounds, np.ones((), _I32))


def _below_cap(rounds: Any, dtype: np.dtype) -> Any:
    """JAX stops after as many rounds as the output's integer type can count."""
    cap = min(np.iinfo(dtype).max, np.iinfo(_I32).max)
    return lt(rounds, np.asarray(cap, _I32))


def _poisson_knuth(key, lam, shape, dtype):
    """Counts the uniforms whose running product stays above exp(-lam), minus one."""
    neg_lam = neg(lam)

    def not_done(state):
        return bitwise_and(_any(gt(state[3], neg_lam)), _below_cap(state[0], dtype))

    def draw(state):
        rounds, key_, count, log_product = state
        key_, sub = _two_keys(key_)
        count = select_n(gt(log_product, neg_lam), count, add(count, _c(1, dtype)))
        u = _uniform(sub, shape, _F32, 0.0, 1.0)
        return _next(rounds), key_, count, add(log_product, log(u))

    init = (_I32_ZERO, key, _broadcast(_c(0, dtype), shape), _broadcast(_c(0, _F32), shape))
    count = while_loop(not_done, draw, init)[2]
    return sub_(count, _c(1, dtype))


def _poisson_rejection(key, lam, shape, dtype):
    def c(value):
        return _c(value, _F32)

    log_lam = log(lam)
    b = add(c(0.931), mul(c(2.53), sqrt(lam)))
    a = add(c(-0.059), mul(c(0.02483), b))
    inv_alpha = add(c(1.1239), div(c(1.1328), sub_(b, c(3.4))))
    v_r = sub_(c(0.9277), div(c(3.6224), sub_(b, c(2))))

    def not_done(state):
        return bitwise_and(_any(bitwise_not(state[3])), _below_cap(state[0], dtype))

    def draw(state):
        rounds, key_, k_out, accepted = state
        keys = _split(key_, (3,))
        u = sub_(_uniform(_nth(keys, 1), shape, _F32, 0.0, 1.0), c(0.5))
        v = _uniform(_nth(keys, 2), shape, _F32, 0.0, 1.0)
        u_shifted = sub_(c(0.5), abs_(u))
        k = floor(
            add(
                add(
                    mul(add(div(mul(c(2), a), u_shifted), b), u),
                    lam,
                ),
                c(0.43),
            )
        )
        s = log(
            div(
                mul(v, inv_alpha),
                add(div(a, mul(u_shifted, u_shifted)), b),
            )
        )
        t_ = sub_(
            add(neg(lam), mul(k, log_lam)),
            lgamma(add(k, c(1))),
        )
        accept_fast = bitwise_and(ge(u_shifted, c(0.07)), le(v, v_r))
        reject = bitwise_or(
            lt(k, c(0)),
            bitwise_and(lt(u_shifted, c(0.013)), gt(v, u_shifted)),
        )
        accept = bitwise_or(accept_fast, bitwise_and(bitwise_not(reject), le(s, t_)))
        k_out = select_n(accept, k_out, k)
        return _next(rounds), _nth(keys, 0), k_out, bitwise_or(accepted, accept)

    init = (_I32_ZERO, key, _broadcast(c(-1), shape), _broadcast(np.asarray(False), shape))
    k = while_loop(not_done, draw, init)[2]
    return convert_element_type(k, dtype)


def _poisson(key, lam, shape, dtype):
    lam = convert_element_type(_broadcast(lam, shape), _F32)
    use_knuth = bitwise_or(ne(lam, lam), lt(lam, _c(10, _F32)))
    lam_knuth = select_n(use_knuth, _broadcast(_c(0, _F32), shape), lam)
    # The rejection method's acceptance rate grows with the rate: a large one for the rest.
    lam_rejection = select_n(use_knuth, lam, _broadcast(_c(1e5, _F32), shape))
    result = select_n(
        use_knuth,
        _poisson_rejection(key, lam_rejection, shape, dtype),
        _poisson_knuth(key, lam_knuth, shape, dtype),
    )
    zero = _broadcast(_c(0, dtype), shape)
    return select_n(eq(lam, _c(0, _F32)), result, zero)


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
    small = le(k, _c(9, dtype))
    k = clamp(_c(0, dtype), k, _c(9, dtype))
    k_plus_1 = add(k, _c(1, dtype))
    square = mul(k_plus_1, add(k, _c(1, dtype)))
    series = sub_(_c(1 / 360, dtype), div(_c(1 / 1260, dtype), square))
    series = div(
        sub_(_c(1 / 12, dtype), div(series, square)),
        add(k, _c(1, dtype)),
    )
    index = convert_element_type(floor(k), np.dtype(np.int32))
    table = advanced_indexing.take(np.asarray(_STIRLING_TAIL, dtype), index, mode="clip")
    return select_n(small, series, table)


def _binomial_inversion(key, count, q, shape):
    """Counts geometric(q) gaps until their sum passes ``count``, minus one."""
    dtype = get_aval(q).dtype
    log1m_q = log1p(neg(q))

    def not_done(state):
        return _any(le(state[2], count))

    def draw(state):
        key_, num_gaps, gap_sum = state
        sub, key_ = _two_keys(key_)
        num_gaps = select_n(le(gap_sum, count), num_gaps, add(num_gaps, _c(1, dtype)))
        u = _uniform(sub, shape, dtype, 0.0, 1.0)
        gap = ceil(div(log(u), log1m_q))
        return key_, num_gaps, add(gap_sum, gap)

    zeros = _broadcast(_c(0, dtype), shape)
    num_gaps = while_loop(not_done, draw, (key, zeros, zeros))[1]
    return sub_(num_gaps, _c(1, dtype))


def _btrs(key, count, q, shape):
    dtype = get_aval(q).dtype

    def c(value):
        return _c(value, dtype)

    one_minus_q = sub_(c(1), q)
    stddev = sqrt(mul(mul(count, q), one_minus_q))
    b = add(c(1.15), mul(c(2.53), stddev))
    a = add(add(c(-0.0873), mul(c(0.0248), b)), mul(c(0.01), q))
    center = add(mul(count, q), c(0.5))
    v_r = sub_(c(0.92), div(c(4.2), b))
    r = div(q, sub_(c(1), q))
    alpha = mul(add(c(2.83), div(c(5.1), b)), stddev)
    m = floor(mul(add(count, c(1)), q))
    count_minus_m_plus_1 = add(sub_(count, m), c(1))
    # The bound's terms that do not depend on the proposal k.
    bound_m = mul(
        add(m, c(0.5)),
        log(div(add(m, c(1)), mul(r, count_minus_m_plus_1))),
    )

    def not_done(state):
        return _any(bitwise_not(state[2]))

    def draw(state):
        key_, k_out, accepted = state
        keys = _split(key_, (3,))
        u = _uniform(_nth(keys, 1), shape, dtype, 0.0, 1.0)
        v = _uniform(_nth(keys, 2), shape, dtype, 0.0, 1.0)
        u = sub_(u, c(0.5))
        us = sub_(c(0.5), abs_(u))
        accept_fast = bitwise_and(ge(us, c(0.07)), le(v, v_r))
        k = floor(
            add(
                mul(add(div(mul(c(2), a), us), b), u),
                center,
            )
        )
        reject = bitwise_or(lt(k, c(0)), gt(k, count))
        log_v = log(
            div(
                mul(v, alpha),
                add(div(a, mul(us, us)), b),
            )
        )
        count_minus_k_plus_1 = add(sub_(count, k), c(1))
        bound = add(
            bound_m,
            mul(
                add(count, c(1)),
                log(div(add(sub_(count, m), c(1)), count_minus_k_plus_1)),
            ),
        )
        bound = add(
            bound,
            mul(
                add(k, c(0.5)),
                log(div(mul(r, count_minus_k_plus_1), add(k, c(1)))),
            ),
        )
        bound = add(bound, _stirling_tail(m))
        bound = add(bound, _stirling_tail(sub_(count, m)))
        bound = sub_(bound, _stirling_tail(k))
        bound = sub_(bound, _stirling_tail(sub_(count, k)))
        accept = bitwise_or(
            accept_fast,
            bitwise_and(bitwise_not(reject), le(log_v, bound)),
        )
        return (
            _nth(keys, 0),
            select_n(accept, k_out, k),
            bitwise_or(accepted, accept),
        )

    init = (key, _broadcast(c(-1), shape), _broadcast(np.asarray(False), shape))
    return while_loop(not_done, draw, init)[1]


def _binomial(key, count, prob, shape, dtype):
    (prob,) = promote_to_inexact(prob)
    float_dtype = get_aval(prob).dtype

    def full(value):
        return _broadcast(_c(value, float_dtype), shape)

    count = _as(count, float_dtype, shape)
    prob = _broadcast(prob, shape)
    p_below_half = lt(prob, _c(0.5, float_dtype))
    q = select_n(p_below_half, sub_(_c(1, float_dtype), prob), prob)
    count_nan_or_negative = bitwise_or(ne(count, count), lt(count, _c(0, float_dtype)))
    count_inf = eq(abs_(count), _c(np.inf, float_dtype))
    q_nan = ne(q, q)
    q_negative = lt(q, _c(0, float_dtype))
    q = select_n(bitwise_or(q_nan, q_negative), q, full(0.01))
    use_inversion = bitwise_or(count_nan_or_negative, le(mul(count, q), _c(10, float_dtype)))
    count = floor(count)
    count_inversion = select_n(use_inversion, full(0), count)
    # Placeholders that the rejection method accepts quickly, for the elements it does not own.
    count_btrs = select_n(use_inversion, count, full(1e4))
    q_btrs = select_n(use_inversion, q, full(0.5))
    samples = select_n(
        use_inversion,
        _btrs(key, count_btrs, q_btrs, shape),
        _binomial_inversion(key, count_inversion, q, shape),
    )
    samples = convert_element_type(samples, dtype)
    invalid = bitwise_or(bitwise_or(q_negative, q_nan), count_nan_or_negative)
    nan = _broadcast(_c(np.nan, dtype), shape)
    samples = select_n(invalid, samples, nan)
    infinite = bitwise_and(count_inf, bitwise_not(invalid))
    samples = select_n(infinite, samples, _broadcast(_c(np.inf, dtype), shape))
    keep = bitwise_or(
        bitwise_or(bitwise_or(p_below_half, count_nan_or_negative), q_nan),
        count_inf,
    )
    return select_n(keep, sub_(convert_element_type(count, dtype), samples), samples)


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
    remaining = associative_scan(add, p, reverse=True, axis=0)
    zero = eq(remaining, _c(0, float_dtype))
    ratios = div(p, select_n(zero, remaining, _broadcast(_c(1, float_dtype), get_aval(p).shape)))
    keys = _split(key, (shape[-1],))

    def one_category(remainder, ratio_and_key):
        ratio, key_ = ratio_and_key
        ratio = clamp(_c(0, float_dtype), ratio, _c(1, float_dtype))
        count = _binomial(key_, remainder, ratio, shape[:-1], float_dtype)
        return sub_(remainder, count), count

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
