"""Bits packed into bytes and back (``packbits``, ``unpackbits``), in big- or little-endian
bit order along an axis."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.array_api import bitwise_right_shift
from ember._src.numpy.operands import as_operand, canonicalize_axis
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.slicing import pad as lax_pad


def _bit_weights(bitorder: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}{errors.where()}")
    powers = np.arange(8, dtype=np.uint8)
    return (1 << (7 - powers if bitorder == "big" else powers)).astype(np.uint8)


def _flatten_or_axis(a: Any, axis: Any) -> tuple[Any, int]:
    if axis is None:
        return manipulation.ravel(a), 0
    return a, canonicalize_axis(axis, get_aval(a).ndim)


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Each run of 8 truth values along ``axis`` as one uint8 (the last run zero-padded)."""
    a = creation.asarray(as_operand(a))
    if get_aval(a).dtype.kind not in "iub":
        raise TypeError(
            f"packbits needs integer or boolean input, got "
            f"{dtypes.short_name(get_aval(a).dtype)}{errors.where()}"
        )
    weights = _bit_weights(bitorder)
    a, axis = _flatten_or_axis(a, axis)
    flags = convert_element_type(enp.not_equal(a, 0), dtypes.uint8)
    shape = get_aval(flags).shape
    groups = -(-shape[axis] // 8)
    config = [(0, 0, 0)] * len(shape)
    config[axis] = (0, groups * 8 - shape[axis], 0)
    flags = lax_pad(flags, np.uint8(0), config)
    grouped = manipulation.reshape(flags, shape[:axis] + (groups, 8) + shape[axis + 1 :])
    weights = manipulation.reshape(creation.asarray(weights), (8,) + (1,) * (len(shape) - axis - 1))
    return reductions.sum(enp.multiply(grouped, weights), axis=axis + 1, dtype=dtypes.uint8)


def unpackbits(
    a: Any, axis: int | None = None, count: int | None = None, bitorder: str = "big"
) -> Any:
    """The bits of each uint8 along ``axis`` as 0/1 uint8 values; ``count`` keeps that many
    (negative: drops that many from the end; more than available: pads with zeros)."""
    a = creation.asarray(as_operand(a))
    if get_aval(a).dtype != dtypes.uint8:
        raise TypeError(
            f"unpackbits needs uint8 input, got {dtypes.short_name(get_aval(a).dtype)}"
            f"{errors.where()}"
        )
    shifts = np.log2(_bit_weights(bitorder)).astype(np.uint8)
    a, axis = _flatten_or_axis(a, axis)
    shape = get_aval(a).shape
    expanded = manipulation.expand_dims(a, axis + 1)
    shifts = manipulation.reshape(creation.asarray(shifts), (8,) + (1,) * (len(shape) - axis - 1))
    unpacked = enp.bitwise_and(bitwise_right_shift(expanded, shifts), np.uint8(1))
    unpacked = manipulation.reshape(unpacked, shape[:axis] + (shape[axis] * 8,) + shape[axis + 1 :])
    if count is None:
        return unpacked
    count = int(core.concrete_or_error(count, "unpackbits's count"))
    total = shape[axis] * 8
    keep = count if count >= 0 else max(total + count, 0)
    config = [(0, 0, 0)] * len(shape)
    config[axis] = (0, keep - total, 0)  # negative padding crops
    return lax_pad(unpacked, np.uint8(0), config)
