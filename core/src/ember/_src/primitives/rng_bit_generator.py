"""``rng_bit_generator``: XLA's stateless bit generator, ``(key, shape) -> (new_key, bits)``.

The algorithm behind ``RNG_DEFAULT`` is the backend's own, so the bits (and the new key) are
implementation-defined: deterministic for a given key on a given backend, but different
between backends, as in JAX. The ``reference`` backend uses NumPy's Philox generator keyed
by the key's 128 bits, and returns the key with its second 64-bit word incremented. Use
``ember.random`` for numbers that are the same everywhere.

Keys are ``uint32[4]`` (or ``uint64[2]``); bits are unsigned integers of any width.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors, rules
from ember._src.core import ShapedArray
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives.control_flow.loops import sequential_map
from ember._src.primitives.elementwise import zero_jvp
from ember._src.primitives.shape import move_axis
from ember._src.primitives.sharding_constraint import laid_out


class RandomAlgorithm(enum.IntEnum):
    """Which algorithm ``rng_bit_generator`` uses."""

    RNG_DEFAULT = 0  # the platform's default
    RNG_THREE_FRY = 1  # Threefry-2x32
    RNG_PHILOX = 2  # Philox-4x32

    def __str__(self) -> str:
        return self.name


_UNSIGNED = {np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)}
_KEY_AVALS = ((4,), np.dtype(np.uint32)), ((2,), np.dtype(np.uint64))


def _abstract_eval(key: ShapedArray, *, shape, dtype, algorithm):
    if (key.shape, key.dtype) not in _KEY_AVALS:
        raise errors.EmberTypeError(
            f"rng_bit_generator needs a uint32[4] or uint64[2] key, got {key.str_short()}"
            f"{errors.where()}"
        )
    return [ShapedArray(key.shape, key.dtype), ShapedArray(shape, dtype)]


def _lowering(ctx, key, *, shape, dtype, algorithm):
    key_aval, bits_aval = ctx.avals_out
    wide = ShapedArray((2,), np.dtype(np.uint64))
    if key_aval.dtype == np.dtype(np.uint32):
        # The op takes a u64[2] state; u32[4] keys are its bits, two words per element.
        pairs = ctx.op("stablehlo.reshape", [key], ShapedArray((2, 2), key_aval.dtype))
        key = ctx.op("stablehlo.bitcast_convert", [pairs], wide)
    attrs = {"rng_algorithm": f"#stablehlo<rng_algorithm {algorithm.name.removeprefix('RNG_')}>"}
    new_key, bits = ctx.op("stablehlo.rng_bit_generator", [key], [wide, bits_aval], attrs)
    if key_aval.dtype == np.dtype(np.uint32):
        pairs = ctx.op("stablehlo.bitcast_convert", [new_key], ShapedArray((2, 2), key_aval.dtype))
        new_key = ctx.op("stablehlo.reshape", [pairs], key_aval)
    return [new_key, bits]


def _reference(key, *, shape, dtype, algorithm):
    state = np.ascontiguousarray(key).view(np.uint64).copy()  # two 64-bit words
    generator = np.random.Generator(np.random.Philox(key=state))
    count = int(np.prod(shape, dtype=np.int64))
    raw = generator.bit_generator.random_raw(count)
    bits = (raw >> np.uint64(64 - 8 * dtype.itemsize)).astype(dtype).reshape(shape)
    state[1] += np.uint64(1)
    return [state.view(key.dtype), bits]


def _batch(vals, dims, **params):
    # One call per key, in a loop (the op itself takes a single key).
    (key,), (d,) = vals, dims
    if d is not_mapped:
        return rng_bit_generator_p.bind(key, **params), [not_mapped, not_mapped]
    keys = move_axis(key, d, 0)
    new_keys, bits = sequential_map(lambda k: tuple(rng_bit_generator_p.bind(k, **params)), keys)
    return [new_keys, bits], [0, 0]


rng_bit_generator_p = rules.define_primitive(
    "rng_bit_generator",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=_abstract_eval,
    jvp=zero_jvp,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    multiple_results=True,
)


def rng_bit_generator(
    key: Any,
    shape: Sequence[int],
    dtype: Any = np.uint32,
    algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT,
    *,
    out_sharding: Any = None,
) -> tuple[Any, Any]:
    """(the next key, random bits of ``shape`` and unsigned ``dtype`` from ``key``);
    ``out_sharding`` lays out the bits."""
    shape = tuple(core.canonicalize_shape(shape))
    dtype = np.dtype(dtype)
    if dtype not in _UNSIGNED:
        raise errors.EmberTypeError(
            f"rng_bit_generator: unsupported dtype {dtypes.short_name(dtype)} (needs uint8, "
            f"uint16, uint32 or uint64){errors.where()}"
        )
    algorithm = RandomAlgorithm(algorithm)
    new_key, bits = rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm)
    return new_key, bits if out_sharding is None else laid_out(bits, out_sharding)
