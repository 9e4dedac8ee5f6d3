"""The operations of the random programs (``program_gen.py``): for each, how it is applied
with ember and how the generator proposes it (its inputs, parameters, and each result's shape
and magnitude bound), registered in ``OPS`` by ``op``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
import ember.nn
import ember.numpy as enp
from ember import lax

# Operand magnitudes above this are rescaled before use; inputs start below 1.5.
LIMIT = 4.0
MAX_DIM = 4


@dataclasses.dataclass
class Op:
    apply: Callable[..., Any]
    # propose(gen) -> (inputs, params, [(shape, bound), ...]) or None when not applicable
    propose: Callable[[Any], Any]  # gets the program_gen.Generator
    smooth: bool
    weight: float = 1.0


OPS: dict[str, Op] = {}


def op(name: str, smooth: bool = True, weight: float = 1.0):
    def register(pair):
        apply, propose = pair
        OPS[name] = Op(apply, propose, smooth, weight)
        return pair

    return register


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# Elementwise ops. Unary ops take any value; the lambdas keep arguments in their safe domain.


def _unary(name, fn, bound_of, smooth=True, limit=LIMIT, weight=1.0):
    def propose(gen):
        x = gen.pick(limit=limit)
        return [x], {}, [(x.shape, bound_of(x.bound))]

    op(name, smooth, weight)((lambda x, **_: fn(x), propose))


_unary("sin", enp.sin, lambda b: 1.0)
_unary("cos", enp.cos, lambda b: 1.0)
_unary("tanh", enp.tanh, lambda b: 1.0)
_unary("exp", enp.exp, lambda b: math.exp(b), limit=2.0)
_unary("log_of_positive", lambda x: enp.log(x * x + 0.5), lambda b: max(0.7, math.log(b * b + 0.5)))
_unary("sqrt_of_positive", lambda x: enp.sqrt(x * x + 0.25), lambda b: b + 0.5)
_unary("square", enp.square, lambda b: b * b)
_unary("negative", enp.negative, lambda b: b)
_unary("sigmoid", ember.nn.sigmoid, lambda b: 1.0)
_unary("logistic", lax.logistic, lambda b: 1.0)
_unary("erf", lax.erf, lambda b: 1.0)
_unary("arctan", enp.arctan, lambda b: 1.6)
_unary("sinh", enp.sinh, lambda b: math.sinh(b), limit=2.0)
_unary("log1p_of_positive", lambda x: enp.log1p(x * x), lambda b: math.log1p(b * b))
_unary("rsqrt_of_positive", lambda x: lax.rsqrt(x * x + 1.0), lambda b: 1.0)
_unary("abs", enp.abs, lambda b: b, smooth=False)
_unary("sqrt_of_abs", lambda x: enp.sqrt(enp.abs(x)), lambda b: math.sqrt(b), smooth=False)
_unary("relu", ember.nn.relu, lambda b: b, smooth=False)
_unary("clip", lambda x: enp.clip(x, -1.0, 1.0), lambda b: 1.0, smooth=False)


def _int_arithmetic(x):
    # Float to int truncates toward zero; `//`, `%` round toward -inf, lax.div/rem toward zero:
    # negative operands tell them apart.
    i = (x * 8.0).astype(np.int32)
    mixed = i // 3 + i % 4 + lax.div(i, np.int32(3)) + lax.rem(i, np.int32(-3))
    return mixed.astype(np.float32)


_unary("int_arithmetic", _int_arithmetic, lambda b: 6 * b + 6, smooth=False)
_unary("round", lambda x: enp.round(x * 4.0) / 4.0, lambda b: b + 0.125, smooth=False)


# Inserted by the generator only: rescaling (`Generator.tame`) and resizing (`Generator.adapt`).
op("scale", weight=0)((lambda x, c, **_: x * np.float32(c), None))


def _apply_fit(x, shape, **_):
    positions = np.arange(math.prod(shape)) % max(x.size, 1)
    return enp.reshape(enp.reshape(x, (-1,))[positions], shape)


op("fit", weight=0)((_apply_fit, None))


def _binary(name, fn, bound_of, smooth=True, limit=LIMIT):
    def propose(gen):
        x, y = gen.pick(limit=limit), gen.pick(limit=limit)
        shape = _broadcast_shape(x.shape, y.shape)
        if shape is None:
            y = gen.adapt(y, x.shape)
            shape = x.shape
        return [x, y], {}, [(shape, bound_of(x.bound, y.bound))]

    op(name, smooth)((lambda x, y, **_: fn(x, y), propose))


_binary("add", enp.add, lambda a, b: a + b)
_binary("subtract", enp.subtract, lambda a, b: a + b)
_binary("multiply", enp.multiply, lambda a, b: a * b)
_binary("divide_safe", lambda x, y: x / (1.0 + y * y), lambda a, b: a)
_binary(
    "power_of_positive",
    lambda x, y: enp.power(x * x + 0.5, enp.tanh(y)),
    lambda a, b: max(2.0, a * a + 0.5),
)
_binary("maximum", enp.maximum, lambda a, b: max(a, b), smooth=False)
_binary("minimum", enp.minimum, lambda a, b: max(a, b), smooth=False)
_binary(
    "where_positive",
    lambda x, y: enp.where(x > 0, x, y * x),
    lambda a, b: a * max(1, b),
    smooth=False,
)


def _float_remainders(x, y):
    d = 1.0 + y * y
    return enp.remainder(x, d) + enp.fmod(x, d)


_binary("float_remainders", _float_remainders, lambda a, b: 1 + a + b * b, smooth=False)


# ---------------------------------------------------------------------------------------------
# Reductions and cumulative ops.


def _reduction(name, fn, bound_of, smooth=True):
    def propose(gen):
        x = gen.pick(min_rank=1)
        if x is None:
            return None
        rank = len(x.shape)
        axes = tuple(int(a) for a in np.flatnonzero(gen.rng.random(rank) < 0.5)) or (gen.axis(x),)
        keepdims = bool(gen.rng.random() < 0.3)
        shape = tuple(
            1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes
        )
        count = math.prod(x.shape[a] for a in axes)
        return [x], {"axis": axes, "keepdims": keepdims}, [(shape, bound_of(x.bound, count))]

    op(name, smooth)((lambda x, axis, keepdims, **_: fn(x, axis=axis, keepdims=keepdims), propose))


_reduction("sum", enp.sum, lambda b, n: b * n)
_reduction("mean", enp.mean, lambda b, n: b)
_reduction("var", enp.var, lambda b, n: b * b)
_reduction("logsumexp", ember.nn.logsumexp, lambda b, n: b + math.log(n))
_reduction("max", enp.max, lambda b, n: b, smooth=False)
_reduction("min", enp.min, lambda b, n: b, smooth=False)


def _propose_cumsum(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    axis, reverse = gen.axis(x), bool(gen.rng.random() < 0.3)
    return [x], {"axis": axis, "reverse": reverse}, [(x.shape, x.bound * x.shape[axis])]


op("cumsum")((lambda x, axis, reverse, **_: lax.cumsum(x, axis, reverse=reverse), _propose_cumsum))


def _propose_cumulative(gen):
    x = gen.pick(min_rank=1, limit=1.0)  # a running product of values <= 1 stays <= 1
    return None if x is None else ([x], {"axis": gen.axis(x)}, [(x.shape, 1.0)])


op("cumprod")((lambda x, axis, **_: lax.cumprod(x, axis), _propose_cumulative))
op("cummax", smooth=False)((lambda x, axis, **_: lax.cummax(x, axis), _propose_cumulative))
op("softmax")((lambda x, axis, **_: ember.nn.softmax(x, axis=axis), _propose_cumulative))


def _propose_argmax(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    axis = gen.axis(x)
    return [x], {"axis": axis}, [(x.shape[:axis] + x.shape[axis + 1 :], x.shape[axis])]


# Ties (after relu, clip...) must resolve to the first index on every backend.
op("argmax_as_float", smooth=False)(
    (lambda x, axis, **_: enp.argmax(x, axis=axis).astype(np.float32), _propose_argmax)
)


def _propose_window(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    window = tuple(int(gen.rng.integers(1, d + 1)) for d in x.shape)
    strides = tuple(int(gen.rng.integers(1, 3)) for _ in x.shape)
    padding = "VALID" if gen.rng.random() < 0.5 else "SAME"
    shape = tuple(
        (d - w) // s + 1 if padding == "VALID" else -(-d // s)
        for d, w, s in zip(x.shape, window, strides)
    )
    params = {"window": window, "strides": strides, "padding": padding}
    return [x], params, [(shape, x.bound * math.prod(window))]


def _apply_window_sum(x, window, strides, padding, **_):
    return lax.reduce_window(x, np.float32(0), lax.add, window, strides, padding)


def _apply_window_max(x, window, strides, padding, **_):
    return lax.reduce_window(x, np.float32(-np.inf), lax.max, window, strides, padding)


op("window_sum")((_apply_window_sum, _propose_window))
op("window_max", smooth=False)((_apply_window_max, _propose_window))


def _propose_convolve(gen):
    x = gen.pick(min_rank=1)
    if x is None or len(x.shape) != 1:
        return None
    v = gen.adapt(gen.pick(), (int(gen.rng.integers(1, MAX_DIM + 1)),))
    mode = ("full", "same", "valid")[int(gen.rng.integers(0, 3))]
    n, m = x.shape[0], v.shape[0]
    size = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}[mode]
    return [x, v], {"mode": mode}, [((size,), x.bound * v.bound * min(n, m))]


op("convolve")((lambda x, v, mode, **_: enp.convolve(x, v, mode=mode), _propose_convolve))


def _propose_sort(gen):
    x = gen.pick(min_rank=1)
    return None if x is None else ([x], {"axis": gen.axis(x)}, [(x.shape, x.bound)])


op("sort", smooth=False)((lambda x, axis, **_: enp.sort(x, axis=axis), _propose_sort))


# ---------------------------------------------------------------------------------------------
# Shape ops.


def _propose_reshape(gen):
    x = gen.pick()
    dims, left = [], x.size
    for _ in range(int(gen.rng.integers(0, 4))):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        dims.append(int(gen.rng.choice(divisors)))
        left //= dims[-1]
    if left > 1 or not dims:
        dims.append(left)
    shape = tuple(dims) if x.size > 1 or gen.rng.random() < 0.5 else ()
    return [x], {"shape": shape}, [(shape, x.bound)]


op("reshape")((lambda x, shape, **_: enp.reshape(x, shape), _propose_reshape))


def _propose_transpose(gen):
    x = gen.pick(min_rank=2)
    if x is None:
        return None
    perm = tuple(int(a) for a in gen.rng.permutation(len(x.shape)))
    return [x], {"axes": perm}, [(tuple(x.shape[a] for a in perm), x.bound)]


op("transpose")((lambda x, axes, **_: enp.transpose(x, axes), _propose_transpose))


def _propose_broadcast(gen):
    x = gen.pick()
    if len(x.shape) >= 3:
        return None
    shape = tuple(d if d != 1 else int(gen.rng.integers(1, MAX_DIM + 1)) for d in x.shape)
    shape = (int(gen.rng.integers(1, MAX_DIM + 1)),) + shape
    return [x], {"shape": shape}, [(shape, x.bound)]


op("broadcast_to")((lambda x, shape, **_: enp.broadcast_to(x, shape), _propose_broadcast))


def _propose_concatenate(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    axis = gen.axis(x)
    other = list(x.shape)
    other[axis] = int(gen.rng.integers(1, 3))
    y = gen.adapt(gen.pick(), tuple(other))
    shape = list(x.shape)
    shape[axis] += other[axis]
    return [x, y], {"axis": axis}, [(tuple(shape), max(x.bound, y.bound))]


op("concatenate")((lambda x, y, axis, **_: enp.concatenate([x, y], axis), _propose_concatenate))


def _propose_slice(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    axis = gen.axis(x)
    n = x.shape[axis]
    start = int(gen.rng.integers(0, n))
    stop = int(gen.rng.integers(start + 1, n + 1))
    step = int(gen.rng.integers(1, 3))
    shape = list(x.shape)
    shape[axis] = len(range(start, stop, step))
    return (
        [x],
        {"axis": axis, "start": start, "stop": stop, "step": step},
        [(tuple(shape), x.bound)],
    )


def _apply_slice(x, axis, start, stop, step, **_):
    index = (slice(None),) * axis + (slice(start, stop, step),)
    return x[index]


op("slice")((_apply_slice, _propose_slice))


def _propose_dynamic_slice(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    sizes = tuple(int(gen.rng.integers(1, d + 1)) for d in x.shape)
    # Starts are `k` (0..2) or a constant; out-of-range starts are clamped, as in XLA.
    starts = tuple("k" if gen.rng.random() < 0.5 else int(gen.rng.integers(0, d)) for d in x.shape)
    return [x], {"starts": starts, "sizes": sizes}, [(sizes, x.bound)]


def _apply_dynamic_slice(x, starts, sizes, k, **_):
    return lax.dynamic_slice(x, [k if s == "k" else s for s in starts], sizes)


op("dynamic_slice")((_apply_dynamic_slice, _propose_dynamic_slice))


def _propose_dynamic_update_slice(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    sizes = tuple(int(gen.rng.integers(1, d + 1)) for d in x.shape)
    update = gen.adapt(gen.pick(), sizes)
    return [x, update], {}, [(x.shape, max(x.bound, update.bound))]


def _apply_dynamic_update_slice(x, update, k, **_):
    return lax.dynamic_update_slice(x, update, [k] + [0] * (x.ndim - 1))


op("dynamic_update_slice")((_apply_dynamic_update_slice, _propose_dynamic_update_slice))


def _propose_pad(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    config, shape = [], []
    for d in x.shape:
        interior = int(gen.rng.integers(0, 2))
        grown = d + (d - 1) * interior
        low = int(gen.rng.integers(-min(1, grown - 1), 3))
        high = int(gen.rng.integers(-min(1, grown + low - 1), 3))
        config.append((low, high, interior))
        shape.append(grown + low + high)
    return [x], {"config": tuple(config)}, [(tuple(shape), x.bound)]


op("pad")((lambda x, config, **_: lax.pad(x, np.float32(0.25), config), _propose_pad))


def _propose_rev(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    dims = tuple(int(a) for a in np.flatnonzero(gen.rng.random(len(x.shape)) < 0.6))
    return [x], {"dims": dims}, [(x.shape, x.bound)]


op("rev")((lambda x, dims, **_: lax.rev(x, dims), _propose_rev))


def _propose_gather(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    axis = int(gen.rng.integers(0, min(2, len(x.shape))))
    n = x.shape[axis]
    index_shape = gen.random_shape(max_rank=2)  # a 0-d index array picks like an integer
    index = gen.rng.integers(-n, n, index_shape).astype(np.int32)  # negatives count from the end
    shape = x.shape[:axis] + index_shape + x.shape[axis + 1 :]
    return [x], {"axis": axis, "index": index}, [(shape, x.bound)]


def _apply_gather(x, axis, index, **_):
    return x[(slice(None),) * axis + (index,)]


op("gather")((_apply_gather, _propose_gather))


def _propose_dynamic_index(gen):
    x = gen.pick(min_rank=1)
    return None if x is None else ([x], {}, [(x.shape[1:], x.bound)])


# `k % n` keeps the traced index in range (out-of-range dynamic indices are a separate topic).
op("dynamic_index")((lambda x, k, **_: enp.asarray(x)[k % x.shape[0]], _propose_dynamic_index))


def _propose_scatter_add(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    n = x.shape[0]
    index = gen.rng.integers(0, n, int(gen.rng.integers(1, 4))).astype(np.int32)  # repeats too
    update = gen.adapt(gen.pick(), index.shape + x.shape[1:])
    return [x, update], {"index": index}, [(x.shape, x.bound + len(index) * update.bound)]


op("scatter_add")((lambda x, u, index, **_: enp.asarray(x).at[index].add(u), _propose_scatter_add))


# ---------------------------------------------------------------------------------------------
# Contractions.


def _propose_matmul(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    n = x.shape[-1]
    other = (n,) if gen.rng.random() < 0.3 else (n, int(gen.rng.integers(1, MAX_DIM + 1)))
    y = gen.adapt(gen.pick(), other)
    shape = x.shape[:-1] + other[1:]
    return [x, y], {}, [(shape, x.bound * y.bound * n)]


op("matmul")((lambda x, y, **_: enp.matmul(x, y), _propose_matmul))

# Patterns without an index repeated inside one operand (that is another helper's area).
_EINSUM = [
    "ij,jk->ik",
    "ij,ij->i",
    "ij->ji",
    "i,j->ij",
    "ijk,ik->ij",
    "ij,kj->ki",
    "i,i->",
    "ijk->kj",
]


def _propose_einsum(gen):
    spec = _EINSUM[int(gen.rng.integers(0, len(_EINSUM)))]
    ins_spec, out_spec = spec.split("->")
    sizes = {c: int(gen.rng.integers(1, MAX_DIM + 1)) for c in "ijk"}
    ins = [gen.adapt(gen.pick(), tuple(sizes[c] for c in term)) for term in ins_spec.split(",")]
    summed = math.prod(sizes[c] for c in set(ins_spec) - set(out_spec) - {","})
    bound = math.prod(v.bound for v in ins) * summed
    return ins, {"spec": spec}, [(tuple(sizes[c] for c in out_spec), bound)]


op("einsum")((lambda *xs, spec, **_: enp.einsum(spec, *xs), _propose_einsum))


# ---------------------------------------------------------------------------------------------
# Selection by the non-float inputs (smooth in the float ones).


def _propose_where_flag(gen):
    x = gen.pick()
    y = gen.adapt(gen.pick(), x.shape)
    return [x, y], {}, [(x.shape, max(x.bound, y.bound))]


op("where_flag")((lambda x, y, flag, **_: enp.where(flag, x, y), _propose_where_flag))


def _apply_select_below_k(x, y, k, **_):
    mask = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1) < k
    return lax.select(mask, x, y)


def _propose_select_below_k(gen):
    x = gen.pick(min_rank=1)
    if x is None:
        return None
    y = gen.adapt(gen.pick(), x.shape)
    return [x, y], {}, [(x.shape, max(x.bound, y.bound))]


op("select_below_k")((_apply_select_below_k, _propose_select_below_k))


# ---------------------------------------------------------------------------------------------
# Control flow with bodies generated the same way.


def _propose_cond(gen):
    x = gen.pick(limit=2.0)
    y = gen.pick(limit=2.0)
    out = gen.random_shape(max_rank=2)
    branches = {
        tag: gen.sub_program([x.shape, y.shape], 2.0, [out], 2.0, tag)
        for tag in ("true_branch", "false_branch")
    }
    return [x, y], branches, [(out, 2.0)]


def _apply_cond(x, y, k, flag, true_branch, false_branch, **_):
    # The branches close over `k` and `flag` as well as taking operands.
    return lax.cond(
        flag,
        lambda a, b: true_branch(a, b, k, flag)[0],
        lambda a, b: false_branch(a, b, k, flag)[0],
        x,
        y,
    )


op("cond", weight=0.7)((_apply_cond, _propose_cond))


def _propose_switch(gen):
    x = gen.pick(limit=2.0)
    out = gen.random_shape(max_rank=2)
    # Three branches: derivatives through a switch of three or more once misordered the later
    # branches' residuals, which two branches cannot show.
    branches = tuple(gen.sub_program([x.shape], 2.0, [out], 2.0, f"branch{i}") for i in range(3))
    return [x], {"branches": branches}, [(out, 2.0)]


def _apply_switch(x, k, flag, branches, **_):
    # `k` (0, 1 or 2) picks the branch; switch clamps it to the last one.
    return lax.switch(k, [lambda a, b=b: b(a, k, flag)[0] for b in branches], x)


op("switch", weight=0.5)((_apply_switch, _propose_switch))


def _propose_fori(gen):
    carry = gen.pick(limit=1.0)
    closed = gen.pick(limit=1.0)  # a value the body closes over
    body = gen.sub_program([carry.shape, closed.shape], 1.0, [carry.shape], 1.0, "body")
    return (
        [carry, closed],
        {"body": body, "length": int(gen.rng.integers(1, 4))},
        [(carry.shape, 1.0)],
    )


def _apply_fori(carry, closed, k, flag, body, length, **_):
    return lax.fori_loop(0, length, lambda i, c: body(c, closed, k + i, flag)[0], carry)


op("fori_loop", weight=0.7)((_apply_fori, _propose_fori))


def _propose_scan(gen):
    xs = gen.pick(min_rank=1, limit=1.0)
    if xs is None:
        return None
    carry = gen.pick(limit=1.0)
    y_shape = gen.random_shape(max_rank=1)
    body = gen.sub_program([carry.shape, xs.shape[1:]], 1.0, [carry.shape, y_shape], 1.0, "body")
    reverse = bool(gen.rng.random() < 0.3)
    outs = [(carry.shape, 1.0), ((xs.shape[0],) + y_shape, 1.0)]
    return [carry, xs], {"body": body, "reverse": reverse}, outs


def _apply_scan(carry, xs, k, flag, body, reverse, **_):
    def step(c, x):
        new_c, y = body(c, x, k, flag)
        return new_c, y

    return lax.scan(step, carry, xs, reverse=reverse)


op("scan", weight=0.7)((_apply_scan, _propose_scan))


def _propose_while(gen):
    carry = gen.pick(limit=1.0)
    body = gen.sub_program([carry.shape], 1.0, [carry.shape], 1.0, "body")
    return [carry], {"body": body}, [(carry.shape, 1.0)]


def _apply_while(carry, k, flag, body, **_):
    # A trip count read from `k`: a real while loop (not reverse-differentiable).
    def step(state):
        i, c = state
        return i + 1, body(c, k, flag)[0]

    return lax.while_loop(lambda s: s[0] <= k, step, (np.int32(0), carry))[1]


op("while_loop", smooth=False, weight=0.5)((_apply_while, _propose_while))
