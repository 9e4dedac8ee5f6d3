"""``ember.scipy.ndimage.map_coordinates`` (orders 0 and 1), as ``jax.scipy.ndimage``.

Boundary modes follow JAX: 'wrap' is periodic with period n (SciPy's 'wrap' differs), and in
'constant' mode each neighbour outside the input contributes ``cval`` with its own weight.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.nonzero import where

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _round_half_away(x: Any) -> Any:
    return enp.sign(x) * enp.floor(enp.abs(x) + 0.5)


def _indices(index: Any, size: int, mode: str) -> tuple[Any, Any]:
    """(in-range index to gather, whether the sample is inside) for integer ``index``."""
    if mode == "constant":
        inside = (index >= 0) & (index < size)
        return enp.clip(index, 0, size - 1), inside
    if mode == "nearest":
        return enp.clip(index, 0, size - 1), None
    if mode == "wrap":
        return enp.mod(index, size), None
    if mode == "mirror":
        if size == 1:
            return creation.zeros_like(index), None
        period = 2 * size - 2
        folded = enp.mod(enp.abs(index), period)
        return where(folded >= size, period - folded, folded), None
    folded = enp.mod(index, 2 * size)  # reflect: the edge sample is repeated
    return where(folded >= size, 2 * size - 1 - folded, folded), None


def _corners(coordinate: Any, order: int) -> list[tuple[Any, Any]]:
    """(integer index, weight) pairs that interpolate along one axis."""
    if order == 0:
        return [(_round_half_away(coordinate).astype(np.int32), None)]
    lower = enp.floor(coordinate)
    upper_weight = coordinate - lower
    lower = lower.astype(np.int32)
    return [(lower, 1 - upper_weight), (lower + 1, upper_weight)]


def map_coordinates(
    input: Any, coordinates: Sequence[Any], order: int, mode: str = "constant", cval: Any = 0.0
) -> Any:
    """``input`` sampled at ``coordinates`` (one array per axis of ``input``, broadcast
    together) by nearest-sample (order 0) or linear (order 1) interpolation."""
    image = creation.asarray(input)
    shape = get_aval(image).shape
    if len(coordinates) != len(shape):
        raise ValueError(
            f"map_coordinates: coordinates must be a sequence of length input.ndim "
            f"({len(shape)}), got {len(coordinates)}{errors.where()}"
        )
    if order not in (0, 1):
        raise NotImplementedError(
            f"map_coordinates: only orders 0 and 1 are supported, got {order}{errors.where()}"
        )
    if mode not in _MODES:
        raise NotImplementedError(
            f"map_coordinates: mode must be one of {_MODES}, got {mode!r}{errors.where()}"
        )
    coordinates = [creation.asarray(c) for c in coordinates]
    out_shape = np.broadcast_shapes(*(get_aval(c).shape for c in coordinates))
    dtype = get_aval(image).dtype
    work = dtype if dtypes.is_inexact(dtype) else dtypes.default_float()
    coordinates = [
        manipulation.broadcast_to(c.astype(dtypes.real_dtype(work)), out_shape) for c in coordinates
    ]
    axes = []
    for coordinate, size in zip(coordinates, shape):
        axes.append([(*_indices(i, size, mode), w) for i, w in _corners(coordinate, order)])
    values = image.astype(work)
    cval = creation.asarray(cval).astype(work)
    result = None
    for corner in itertools.product(*axes):
        sample = values[tuple(index for index, _, _ in corner)]
        insides = [inside for _, inside, _ in corner if inside is not None]
        if insides:
            sample = where(functools.reduce(operator.and_, insides), sample, cval)
        weights = [weight for _, _, weight in corner if weight is not None]
        if weights:
            sample = functools.reduce(operator.mul, weights).astype(work) * sample
        result = sample if result is None else result + sample
    if not dtypes.is_inexact(dtype):
        result = _round_half_away(result)
    return result.astype(dtype)
