"""lax functions over one primitive each, with JAX's lax signatures: the argument forms and
the keyword ``out_sharding`` that the primitive's own wrapper does not take."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.primitives.conv import conv_general_dilated as _conv_general_dilated
from ember._src.primitives.elementwise import select_n, stop_gradient_p
from ember._src.primitives.linalg import dot_general as _dot_general
from ember._src.primitives.rng_bit_generator import (
    RandomAlgorithm,
    rng_bit_generator as _rng_bit_generator,
)
from ember._src.primitives.shape import (
    broadcast_in_dim as _broadcast_in_dim,
    convert_element_type as _convert_element_type,
    iota_along,
    reduce_sum as _reduce_sum,
    reshape as _reshape,
)
from ember._src.primitives.sharding_constraint import laid_out as _laid_out
from ember._src.tree.util import tree_map


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Add leading dimensions of the given sizes."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return _laid_out(_broadcast_in_dim(operand, sizes + aval.shape, dims), out_sharding)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` holds, else ``on_false`` (shapes must match)."""
    return select_n(pred, on_false, on_true)


def stop_gradient(x: Any) -> Any:
    """Identity on a pytree, with a zero derivative."""
    return tree_map(stop_gradient_p.bind, x)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast ``operand`` to ``new_dtype`` (a strongly typed result)."""
    return _convert_element_type(operand, new_dtype)


def iota(dtype: Any, size: int) -> Any:
    """The 1-D array ``[0, 1, ..., size - 1]`` of ``dtype`` (see broadcasted_iota for n-D)."""
    return iota_along(dtype, (operator.index(size),), 0)


def broadcast_in_dim(
    operand: Any,
    shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` broadcast to ``shape``; its axis i becomes ``broadcast_dimensions[i]``."""
    return _laid_out(_broadcast_in_dim(operand, shape, broadcast_dimensions), out_sharding)


def reshape(
    operand: Any,
    new_sizes: Sequence[int],
    dimensions: Sequence[int] | None = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` reshaped to ``new_sizes`` (transposed by ``dimensions`` first, if given)."""
    return _laid_out(_reshape(operand, new_sizes, dimensions), out_sharding)


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """The sum of ``operand`` over ``axes``."""
    return _laid_out(_reduce_sum(operand, axes), out_sharding)


def dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """General dot product: contract and batch the axes ``dimension_numbers`` name."""
    out = _dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    return _laid_out(out, out_sharding)


def conv_general_dilated(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """General dilated convolution (XLA's ConvGeneralDilated)."""
    out = _conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        feature_group_count, batch_group_count, precision, preferred_element_type,
    )  # fmt: skip
    return _laid_out(out, out_sharding)


def rng_bit_generator(
    key: Any,
    shape: Sequence[int],
    dtype: Any = np.uint32,
    algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT,
    *,
    out_sharding: Any = None,
) -> tuple[Any, Any]:
    """(new key, random bits of ``shape`` and ``dtype``); ``out_sharding`` lays out the bits."""
    new_key, bits = _rng_bit_generator(key, shape, dtype, algorithm)
    return new_key, _laid_out(bits, out_sharding)
