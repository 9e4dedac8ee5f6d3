"""``ember.random``: counter-based pseudo-random numbers, bit-for-bit those of JAX 0.10.

Keys are Threefry-2x32 keys: uint32 arrays whose last axis has two words. Everything is
derived with the Threefry-2x32 block cipher (20 rounds), in JAX's default *partitionable*
mode: the counter of element ``i`` of an output of shape ``s`` is the row-major index ``i``
as a 64-bit number split into two words, so a value does not depend on how the output is
sharded. Every sampler is built from the same algorithm as JAX's, so the same seed gives the
same bits, uniforms, normals and integers (the tests pin known answers).

Each public function is jitted once per static configuration (shape, dtype), as in JAX.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.sorting import top_k
from ember._src.numpy import advanced_indexing, contractions, linalg, searching, sorting
from ember._src.primitives import (
    sort as sort_ops,
)
from ember._src.primitives.arithmetic import (
    abs as abs_,
    add,
    div,
    max as max_,
    min as min_,
    mul,
    neg,
    rem,
    sign,
    sub as sub_,
)
from ember._src.primitives.bits import (
    bitcast_convert_type,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    shift_left,
    shift_right_logical,
)
from ember._src.primitives.comparisons import eq, gt, le, lt, ne
from ember._src.primitives.math_functions import log, log1p, sqrt
from ember._src.primitives.reduce import argmax
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    broadcast_to_shape,
    convert_element_type,
    expand_dims,
    iota_along,
    reshape,
)
from ember._src.primitives.sharding_constraint import laid_out
from ember._src.primitives.slicing import concatenate, slice_op
from ember._src.primitives.special import erf, erf_inv
from ember._src.transforms.jit import jit

_U32 = np.dtype(np.uint32)
_UINT_BY_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))

# --------------------------------------------------------------------------------------------
# Threefry-2x32


def _u32(value: int) -> np.ndarray:
    return np.asarray(value, _U32)


def _rotate_left(x: Any, distance: int) -> Any:
    return bitwise_or(shift_left(x, _u32(distance)), shift_right_logical(x, _u32(32 - distance)))


def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The Threefry-2x32 block cipher (20 rounds) of counters (x1, x2) under key (k1, k2)."""
    ks = [k1, k2, bitwise_xor(bitwise_xor(k1, k2), _u32(0x1BD11BDA))]
    x = [add(x1, ks[0]), add(x2, ks[1])]
    for block in range(5):
        for distance in _ROTATIONS[block % 2]:
            x[0] = add(x[0], x[1])
            x[1] = bitwise_xor(x[0], _rotate_left(x[1], distance))
        x[0] = add(x[0], ks[(block + 1) % 3])
        x[1] = add(add(x[1], ks[(block + 2) % 3]), _u32(block + 1))
    return x[0], x[1]


def _counters(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The 64-bit row-major index of every element of ``shape``, as (high, low) words."""
    size = math.prod(shape)
    if size >= 2**32:
        raise NotImplementedError(
            f"random samples of shape {shape} ({size} elements): ember draws at most 2**32 - 1 "
            f"values per call; draw in pieces with split keys{errors.where()}"
        )
    low = reshape(iota_along(_U32, (size,), 0), shape) if shape else np.zeros((), _U32)
    # the high words are all zero: a broadcast scalar, not a host array of the whole shape
    return broadcast_to_shape(np.zeros((), _U32), shape), low


def _halves(key: Any) -> tuple[Any, Any]:
    shape = get_aval(key).shape
    if not shape or shape[-1] != 2 or get_aval(key).dtype != _U32:
        raise errors.EmberTypeError(
            f"expected a PRNG key (uint32 data with a last axis of 2, from ember.random.key), "
            f"got {get_aval(key).str_short()}{errors.where()}"
        )
    if len(shape) != 1:
        raise errors.EmberTypeError(
            f"this function takes a single key, got a batch of shape {shape[:-1]}; use vmap"
            f"{errors.where()}"
        )
    k1 = reshape(slice_op(key, (0,), (1,)), ())
    k2 = reshape(slice_op(key, (1,), (2,)), ())
    return k1, k2


def _random_bits(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    k1, k2 = _halves(key)
    high, low = _counters(shape)
    bits1, bits2 = threefry2x32(k1, k2, high, low)
    dtype = _UINT_BY_BITS[bit_width]
    if bit_width == 64:
        upper = shift_left(convert_element_type(bits1, dtype), np.asarray(32, dtype))
        return bitwise_or(upper, convert_element_type(bits2, dtype))
    mixed = bitwise_xor(bits1, bits2)
    return mixed if bit_width == 32 else convert_element_type(mixed, dtype)


# --------------------------------------------------------------------------------------------
# Keys


def _seed_words(seed: Any) -> Any:
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        # As in JAX: the seed becomes the default integer type first (int32 unless x64 is on),
        # whose high word is 0 for 32-bit seeds, and whose bits are kept as they are.
        value = int(seed)
        bits = np.iinfo(dtypes.default_int()).bits
        if not -(2 ** (bits - 1)) <= value < 2**bits:
            raise OverflowError(
                f"PRNG seed {value} does not fit in {dtypes.short_name(dtypes.default_int())}; "
                f"enable x64 for 64-bit seeds{errors.where()}"
            )
        value &= (1 << bits) - 1
        return np.array([value >> 32, value & 0xFFFFFFFF], _U32)
    aval = get_aval(seed)
    if aval.shape or not dtypes.is_integer(aval.dtype):
        raise errors.EmberTypeError(
            f"a PRNG seed must be an integer scalar, got {aval.str_short()}{errors.where()}"
        )
    low = convert_element_type(seed, _U32)
    if aval.dtype.itemsize == 8:
        high = convert_element_type(shift_right_logical(seed, np.asarray(32, aval.dtype)), _U32)
    else:
        high = np.zeros((), _U32)
    return concatenate([expand_dims(high, (0,)), expand_dims(low, (0,))], 0)


_IMPLEMENTATIONS = ("threefry2x32", "threefry")


def _check_impl(impl: Any, dtype: Any = None) -> None:
    """ember has one PRNG (Threefry-2x32, JAX's default) and keys are their raw data."""
    name = getattr(impl, "name", impl)
    if name is not None and name not in _IMPLEMENTATIONS:
        raise NotImplementedError(
            f"PRNG implementation {impl!r}: ember has only threefry2x32, JAX's default"
            f"{errors.where()}"
        )
    if dtype is not None:
        raise NotImplementedError(
            f"typed key arrays (dtype={dtype!r}): ember's keys are their uint32 data"
            f"{errors.where()}"
        )


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """A PRNG key from an integer seed (``uint32[2]`` key data)."""
    _check_impl(impl, dtype)
    return _seed_words(seed)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:
    """A PRNG key from an integer seed (``uint32[2]`` key data), as ``key``."""
    _check_impl(impl)
    return _seed_words(seed)


def key_data(keys: Any) -> Any:
    """The raw ``uint32`` words of keys (ember's keys are their data already)."""
    return keys


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    _check_impl(impl, dtype)
    return key_bits_array


def with_out_sharding(sampler: Any) -> Any:
    """``sampler`` taking JAX's keyword-only ``out_sharding=`` as well."""
    signature = inspect.signature(sampler)
    extra = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)

    @functools.wraps(sampler)
    def sample(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        return laid_out(sampler(*args, **kwargs), out_sharding)

    sample.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])
    return sample


def _check_mode(name: str, mode: Any, *, default: str | None) -> None:
    """JAX's ``mode`` picks how many random bits a draw uses; ember draws the default ("low")
    bits, the same as JAX's."""
    if mode in (default, "low"):
        return
    if mode == "high":
        raise NotImplementedError(f"{name}(mode='high'): ember draws JAX's default 'low' bits")
    raise ValueError(f"{name}: mode must be 'low' or 'high', got {mode!r}{errors.where()}")


def _split(key_: Any, shape: tuple[int, ...]) -> Any:
    k1, k2 = _halves(key_)
    high, low = _counters(shape)
    bits1, bits2 = threefry2x32(k1, k2, high, low)
    return concatenate([expand_dims(bits1, (-1,)), expand_dims(bits2, (-1,))], len(shape))


def _fold_in(key_: Any, data: Any) -> Any:
    k1, k2 = _halves(key_)
    words = _seed_words(data)
    x1 = reshape(slice_op(words, (0,), (1,)), (1,))
    x2 = reshape(slice_op(words, (1,), (2,)), (1,))
    y1, y2 = threefry2x32(k1, k2, x1, x2)
    return concatenate([y1, y2], 0)


_split_jit = jit(_split, static_argnums=1)
_fold_in_jit = jit(_fold_in)


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``) derived from ``key``."""
    shape = (operator.index(num),) if not isinstance(num, (tuple, list)) else tuple(num)
    if any(d < 0 for d in shape):
        raise ValueError(f"split: num must be non-negative, got {num}{errors.where()}")
    return _split_jit(key, shape)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and the integer ``data`` (e.g. a step number)."""
    return _fold_in_jit(key, _as_int32_scalar(data))


def _as_int32_scalar(data: Any) -> Any:
    if isinstance(data, (int, np.integer)):
        return np.asarray(int(data) & 0xFFFFFFFF, np.uint32).view(np.int32)
    return data


# --------------------------------------------------------------------------------------------
# Samplers


def _shape(shape: Any) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(core.canonicalize_shape(shape))


def _float_dtype(dtype: Any, what: str) -> np.dtype:
    dtypes.check_requested(dtype, what)
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else dtypes.default_float())
    if not dtypes.is_float(dtype) or dtype.kind == "c":
        raise errors.EmberTypeError(
            f"{what} needs a floating-point dtype, got {dtypes.short_name(dtype)}{errors.where()}"
        )
    return dtype


def _uniform(key_, shape, dtype, minval, maxval):
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    # Narrow mantissas (bfloat16) draw 8 random bits, as JAX does.
    rng_bits = 8 if nmant < 8 else nbits
    uint = _UINT_BY_BITS[nbits]
    bits = _random_bits(key_, rng_bits, shape)
    if rng_bits != nbits:
        bits = convert_element_type(bits, uint)
    one_bits = np.asarray(1.0, dtype).view(uint)
    mantissa = shift_right_logical(bits, np.asarray(rng_bits - nmant, uint))
    float_bits = bitwise_or(mantissa, one_bits)
    floats = sub_(bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype))
    minval = _broadcast(convert_element_type(minval, dtype), shape)
    maxval = _broadcast(convert_element_type(maxval, dtype), shape)
    scaled = add(mul(floats, sub_(maxval, minval)), minval)
    return max_(minval, scaled)


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    if not aval.shape:
        return broadcast_in_dim(x, shape, ())
    return broadcast_to_shape(x, shape)


_uniform_jit = jit(_uniform, static_argnums=(1, 2))


@with_out_sharding
def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0):
    """Uniform floats in ``[minval, maxval)``."""
    dtype = _float_dtype(dtype, "uniform")
    return _uniform_jit(key, _shape(shape), dtype, minval, maxval)


def _normal(key_, shape, dtype):
    low = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
    u = _uniform(key_, shape, dtype, low, np.asarray(1.0, dtype))
    return mul(np.asarray(np.sqrt(2), dtype), erf_inv(u))


_normal_jit = jit(_normal, static_argnums=(1, 2))


@with_out_sharding
def normal(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal samples."""
    dtype = _float_dtype(dtype, "normal")
    return _normal_jit(key, _shape(shape), dtype)


def _bits(key_, shape, bit_width):
    return _random_bits(key_, bit_width, shape)


_bits_jit = jit(_bits, static_argnums=(1, 2))


@with_out_sharding
def bits(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniformly random unsigned integers (every bit pattern equally likely)."""
    dtype = np.dtype(dtype) if dtype is not None else _U32
    if dtype.kind != "u":
        raise errors.EmberTypeError(f"bits needs an unsigned dtype, got {dtype}{errors.where()}")
    return _bits_jit(key, _shape(shape), dtype.itemsize * 8)


def _bernoulli(key_, shape, dtype, p):
    return lt(
        _uniform(key_, shape, dtype, 0.0, 1.0), _broadcast(convert_element_type(p, dtype), shape)
    )


_bernoulli_jit = jit(_bernoulli, static_argnums=(1, 2))


@with_out_sharding
def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p``."""
    _check_mode("bernoulli", mode, default="low")
    p_aval = get_aval(p)
    dtype = p_aval.dtype if dtypes.is_float(p_aval.dtype) else dtypes.default_float()
    out_shape = p_aval.shape if shape is None else _shape(shape)
    return _bernoulli_jit(key, out_shape, dtype, p)


def _randint(key_, shape, dtype, minval, maxval):
    info = np.iinfo(dtype)
    nbits = info.bits
    unsigned = _UINT_BY_BITS[nbits]
    maxval_wide = maxval
    minval = _broadcast(_clip_to(minval, dtype), shape)
    maxval = _broadcast(_clip_to(maxval, dtype), shape)
    out_of_range = _broadcast(
        gt(
            maxval_wide,
            convert_element_type(np.asarray(info.max, dtype), get_aval(maxval_wide).dtype),
        ),
        shape,
    )
    keys = _split(key_, (2,))
    k1 = reshape(slice_op(keys, (0, 0), (1, 2)), (2,))
    k2 = reshape(slice_op(keys, (1, 0), (2, 2)), (2,))
    higher, lower = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    span = convert_element_type(sub_(maxval, minval), unsigned)
    one = np.asarray(1, unsigned)
    span = select_n(le(maxval, minval), span, _broadcast(one, shape))
    span = select_n(
        bitwise_and(out_of_range, gt(maxval, minval)),
        span,
        add(span, one),
    )
    multiplier = rem(_broadcast(np.asarray(2 ** (nbits // 2), unsigned), shape), span)
    multiplier = rem(mul(multiplier, multiplier), span)
    offset = add(mul(rem(higher, span), multiplier), rem(lower, span))
    offset = rem(offset, span)
    return add(minval, convert_element_type(offset, dtype))


def _clip_to(x: Any, dtype: np.dtype) -> Any:
    """``x`` converted to the integer ``dtype``, saturating at its limits (as JAX does)."""
    aval = get_aval(x)
    info = np.iinfo(dtype)
    if aval.dtype.kind in "iu" and np.iinfo(aval.dtype).max > info.max:
        x = min_(x, np.asarray(info.max, aval.dtype))
    if aval.dtype.kind == "i" and np.iinfo(aval.dtype).min < info.min:
        x = max_(x, np.asarray(info.min, aval.dtype))
    return convert_element_type(x, dtype)


_randint_jit = jit(_randint, static_argnums=(1, 2))


@with_out_sharding
def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Uniform integers in ``[minval, maxval)``."""
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else dtypes.default_int())
    if dtype.kind not in "iu":
        raise errors.EmberTypeError(f"randint needs an integer dtype, got {dtype}{errors.where()}")
    minval, maxval = _int_bound(minval), _int_bound(maxval)
    return _randint_jit(key, _shape(shape), dtype, minval, maxval)


def _int_bound(x: Any) -> Any:
    if isinstance(x, (int, np.integer)):
        return np.asarray(x, dtypes.default_int() if -(2**31) <= x < 2**31 else np.int64)
    return x


def _gumbel(key_, shape, dtype):
    tiny = np.asarray(dtypes.finfo(dtype).tiny, dtype)
    u = _uniform(key_, shape, dtype, tiny, np.asarray(1.0, dtype))
    return neg(log(neg(log(u))))


_gumbel_jit = jit(_gumbel, static_argnums=(1, 2))


@with_out_sharding
def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None) -> Any:
    _check_mode("gumbel", mode, default=None)
    return _gumbel_jit(key, _shape(shape), _float_dtype(dtype, "gumbel"))


def _exponential(key_, shape, dtype):
    return neg(log1p(neg(_uniform(key_, shape, dtype, 0.0, 1.0))))


_exponential_jit = jit(_exponential, static_argnums=(1, 2))


@with_out_sharding
def exponential(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    return _exponential_jit(key, _shape(shape), _float_dtype(dtype, "exponential"))


def _laplace(key_, shape, dtype):
    low = np.asarray(-1.0 + dtypes.finfo(dtype).epsneg, dtype)
    u = _uniform(key_, shape, dtype, low, np.asarray(1.0, dtype))
    return mul(sign(u), log1p(neg(abs_(u))))


_laplace_jit = jit(_laplace, static_argnums=(1, 2))


@with_out_sharding
def laplace(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    return _laplace_jit(key, _shape(shape), _float_dtype(dtype, "laplace"))


def _logistic(key_, shape, dtype):
    tiny = np.asarray(dtypes.finfo(dtype).tiny, dtype)
    x = _uniform(key_, shape, dtype, tiny, np.asarray(1.0, dtype))
    return sub_(log(x), log1p(neg(x)))


_logistic_jit = jit(_logistic, static_argnums=(1, 2))


@with_out_sharding
def logistic(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    return _logistic_jit(key, _shape(shape), _float_dtype(dtype, "logistic"))


def _truncated_normal(key_, shape, dtype, lower, upper):
    sqrt2 = np.asarray(np.sqrt(2), dtype)
    lower = _broadcast(convert_element_type(lower, dtype), shape)
    upper = _broadcast(convert_element_type(upper, dtype), shape)
    a, b = erf(div(lower, sqrt2)), erf(div(upper, sqrt2))
    u = _uniform(key_, shape, dtype, a, b)
    out = mul(sqrt2, erf_inv(u))
    return min_(max_(out, _next_toward(lower, np.inf, dtype)), _next_toward(upper, -np.inf, dtype))


def _next_toward(x: Any, direction: float, dtype: np.dtype) -> Any:
    """The float after ``x`` toward ``direction`` (bit arithmetic on the representation)."""
    uint = _UINT_BY_BITS[np.dtype(dtype).itemsize * 8]
    bits_ = bitcast_convert_type(x, uint)
    one = np.asarray(1, uint)
    away_from_zero = ne(lt(x, np.asarray(0, dtype)), np.asarray(direction < 0))
    stepped = select_n(away_from_zero, sub_(bits_, one), add(bits_, one))
    result = bitcast_convert_type(stepped, dtype)
    zero = eq(x, np.asarray(0, dtype))
    smallest = np.asarray(np.copysign(dtypes.finfo(dtype).smallest_subnormal, direction), dtype)
    return select_n(zero, result, _broadcast(smallest, get_aval(x).shape))


_truncated_normal_jit = jit(_truncated_normal, static_argnums=(1, 2))


@with_out_sharding
def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Normal samples conditioned on ``lower < x < upper``."""
    dtype = _float_dtype(dtype, "truncated_normal")
    if shape is None:
        shape = np.broadcast_shapes(get_aval(lower).shape, get_aval(upper).shape)
    return _truncated_normal_jit(key, _shape(shape), dtype, lower, upper)


def _categorical(key_, logits, axis, shape):
    logits_shape = get_aval(logits).shape
    axis %= len(logits_shape)
    batch_shape = logits_shape[:axis] + logits_shape[axis + 1 :]
    prefix = shape[: len(shape) - len(batch_shape)]
    sample_shape = list(shape[len(shape) - len(batch_shape) :])
    sample_shape.insert(axis, logits_shape[axis])
    dtype = get_aval(logits).dtype
    noise = _gumbel(key_, (*prefix, *sample_shape), dtype)
    expanded = reshape(logits, (1,) * len(prefix) + logits_shape) if prefix else logits
    full = (*prefix, *sample_shape)
    total = add(noise, broadcast_to_shape(expanded, full))
    return argmax(total, len(prefix) + axis, dtypes.default_int())


_categorical_jit = jit(_categorical, static_argnums=(2, 3))


@with_out_sharding
def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None, replace: bool = True,
                mode: str | None = None) -> Any:  # fmt: skip
    """Samples of category indices with log-probabilities ``logits`` along ``axis``."""
    _check_mode("categorical", mode, default=None)
    if not replace:
        raise NotImplementedError(
            f"categorical(replace=False) is not implemented; use choice(..., replace=False, "
            f"p=softmax(logits)){errors.where()}"
        )
    logits_shape = get_aval(logits).shape
    batch = logits_shape[: axis % len(logits_shape)] + logits_shape[axis % len(logits_shape) + 1 :]
    out_shape = batch if shape is None else _shape(shape)
    return _categorical_jit(key, logits, axis, out_shape)


# --------------------------------------------------------------------------------------------
# Shuffling and choosing (JAX's algorithms: repeated sorts by random keys; the Gumbel top-k)


def _shuffle(key_: Any, x: Any, axis: int) -> Any:
    size = get_aval(x).size
    # Enough rounds of sorting by 32-bit random keys to make collisions negligible.
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = _split(key_, (2,))
        key_ = reshape(slice_op(keys, (0, 0), (1, 2)), (2,))
        sub = reshape(slice_op(keys, (1, 0), (2, 2)), (2,))
        sort_keys = _random_bits(sub, 32, get_aval(x).shape)
        _, x = sort_ops.sort((sort_keys, x), axis, is_stable=True, num_keys=1)
    return x


_shuffle_jit = jit(_shuffle, static_argnums=2)


@with_out_sharding
def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``range(x)`` (an integer) or of ``x`` along ``axis``."""
    if np.ndim(x) == 0 and not isinstance(x, core.Tracer):
        n = operator.index(x)
        return _shuffle_jit(key, iota_along(dtypes.default_int(), core.canonicalize_shape(n), 0), 0)
    aval = get_aval(x)
    axis %= aval.ndim
    if independent or aval.ndim == 1:
        return _shuffle_jit(key, x, axis)
    order = _shuffle_jit(key, np.arange(aval.shape[axis], dtype=dtypes.default_int()), 0)
    return advanced_indexing.take(x, order, axis=axis, mode="clip")


def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None):  # fmt: skip
    """Random draws from ``a`` (an integer n means ``range(n)``), optionally weighted by ``p``."""
    _check_mode("choice", mode, default=None)
    shape = _shape(shape)
    scalar = np.ndim(a) == 0 and not isinstance(a, core.Tracer)
    n = operator.index(a) if scalar else get_aval(a).shape[axis]
    draws = math.prod(shape)
    if not replace and draws > n:
        raise ValueError(
            f"choice: cannot take {draws} samples from {n} without replacement{errors.where()}"
        )
    if p is None:
        if replace:
            index = randint(key, shape, 0, n)
        else:
            pool = n if scalar else np.arange(n, dtype=dtypes.default_int())
            index = slice_op(permutation(key, pool), (0,), (draws,))
    else:
        weights = convert_element_type(p, dtypes.default_float()) if not dtypes.is_inexact(
            get_aval(p).dtype
        ) else p  # fmt: skip
        if replace:
            cumulative = sorting.cumsum(weights)
            total = reshape(slice_op(cumulative, (n - 1,), (n,)), ())
            u = uniform(key, shape, get_aval(cumulative).dtype)
            r = mul(total, sub_(np.asarray(1.0, get_aval(cumulative).dtype), u))
            index = searching.searchsorted(cumulative, r).astype(dtypes.default_int())
        else:
            g = add(gumbel(key, (n,), get_aval(weights).dtype), log(weights))
            index = top_k(g, draws)[1].astype(dtypes.default_int())
    if scalar:
        return reshape(index, shape)
    picked = advanced_indexing.take(a, reshape(index, (draws,)), axis=axis, mode="clip")
    aval = get_aval(a)
    return reshape(picked, aval.shape[:axis] + shape + aval.shape[axis + 1 :])


# --------------------------------------------------------------------------------------------
# Samplers built on linear algebra


@with_out_sharding
def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = None,
                        method: str = "cholesky") -> Any:  # fmt: skip
    """Samples of N(mean, cov); ``method`` factors ``cov`` by "cholesky", "eigh" or "svd"."""
    dtype = _float_dtype(dtype, "multivariate_normal")
    mean = convert_element_type(mean, dtype)
    cov = convert_element_type(cov, dtype)
    mean_shape, cov_shape = get_aval(mean).shape, get_aval(cov).shape
    if len(mean_shape) < 1 or len(cov_shape) < 2 or cov_shape[-2:] != (mean_shape[-1],) * 2:
        raise ValueError(
            f"multivariate_normal: mean {mean_shape} and cov {cov_shape} do not match"
            f"{errors.where()}"
        )
    if shape is None:
        shape = np.broadcast_shapes(mean_shape[:-1], cov_shape[:-2])
    shape = _shape(shape)
    if method == "cholesky":
        factor = linalg.cholesky(cov)
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = v * expand_dims(sqrt(w), (-2,))
    elif method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = u * expand_dims(sqrt(s), (-2,))
    else:
        raise ValueError(f"multivariate_normal: unknown method {method!r}")
    samples = normal(key, shape + mean_shape[-1:], dtype)
    return contractions.einsum("...ij,...j->...i", factor, samples) + mean


@with_out_sharding
def orthogonal(key: Any, n: int, shape: Any = (), dtype: Any = None, m: int | None = None):
    """Uniformly distributed orthogonal (n x m) matrices (Haar measure)."""
    dtype = _float_dtype(dtype, "orthogonal")
    shape = _shape(shape)
    m = n if m is None else m
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z)
    signs = sign(linalg.diagonal(r))
    q = q * expand_dims(signs, (-2,))
    return linalg.matrix_transpose(q) if n < m else q


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
