"""``ember.nn.initializers``: parameter initialisers with JAX's signatures and algorithms.

Each initialiser is a function ``init(key, shape, dtype=float32) -> Array``. The variance
scaling family computes fans as JAX does (the receptive field of convolution kernels counts
towards both fans), so the same key gives the same parameters as in JAX.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ember._src import dtypes
from ember._src.numpy import (
    creation,
    elementwise as enp,
    linalg as _linalg,
    manipulation as _manipulation,
)
from ember._src.primitives.indexing import dynamic_update_slice_op
from ember._src.random.prng import (
    normal as _normal,
    truncated_normal as _truncated_normal,
    uniform as _uniform,
)


class Initializer(Protocol):
    """What every initialiser returns: ``init(key, shape, dtype) -> Array``."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None) -> Any: ...


def _dtype(dtype: Any) -> np.dtype:
    return dtypes.canonicalize(np.dtype(dtype) if dtype is not None else dtypes.default_float())


def zeros(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    return creation.zeros(tuple(shape), _dtype(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    return creation.ones(tuple(shape), _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        return creation.full(tuple(shape), value, _dtype(dtype_))

    return init


def normal(stddev: float = 1e-2, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        dt = _dtype(dtype_)
        return enp.multiply(_normal(key, tuple(shape), dt), np.asarray(stddev, dt))

    return init


def truncated_normal(
    stddev: float = 1e-2, dtype: Any = None, lower: float = -2.0, upper: float = 2.0
) -> Initializer:
    """Normal samples truncated to ``[lower, upper]`` (in units of ``stddev``), times
    ``stddev``."""

    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        dt = _dtype(dtype_)
        samples = _truncated_normal(key, lower, upper, tuple(shape), dt)
        return enp.multiply(samples, np.asarray(stddev, dt))

    return init


def uniform(scale: float = 1e-2, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        dt = _dtype(dtype_)
        return enp.multiply(_uniform(key, tuple(shape), dt), np.asarray(scale, dt))

    return init


def _fans(shape: Sequence[int], in_axis: int, out_axis: int, batch_axis: Sequence[int]):
    shape = tuple(shape)
    if len(shape) <= 1:
        raise ValueError(f"variance scaling needs a shape of rank 2 or more, got {shape}")
    batch = tuple(a % len(shape) for a in batch_axis)
    in_axis, out_axis = in_axis % len(shape), out_axis % len(shape)
    batch_size = math.prod(shape[a] for a in batch)
    receptive = math.prod(shape) / shape[in_axis] / shape[out_axis] / batch_size
    return shape[in_axis] * receptive, shape[out_axis] * receptive


def variance_scaling(
    scale: float,
    mode: str,
    distribution: str,
    in_axis: int = -2,
    out_axis: int = -1,
    batch_axis: Sequence[int] = (),
    dtype: Any = None,
) -> Initializer:
    """Samples with variance ``scale / fan`` (fan_in, fan_out or fan_avg)."""
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling: unknown mode {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: unknown distribution {distribution!r}")

    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        dt = _dtype(dtype_)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = np.asarray(scale / fan, dt)
        shape = tuple(shape)
        if distribution == "truncated_normal":
            # The standard deviation of a unit normal truncated to [-2, 2].
            stddev = np.asarray(np.sqrt(variance) / np.asarray(0.87962566103423978, dt), dt)
            return enp.multiply(_truncated_normal(key, -2, 2, shape, dt), stddev)
        if distribution == "normal":
            return enp.multiply(_normal(key, shape, dt), np.asarray(np.sqrt(variance), dt))
        samples = _uniform(key, shape, dt, -1)
        return enp.multiply(samples, np.asarray(np.sqrt(3 * variance), dt))

    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(
        1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype
    )


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Orthogonal matrices (reshaped for kernels of rank > 2), as JAX's initializer."""

    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        dt = _dtype(dtype_)
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer needs a shape of rank 2 or more")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        q, r = _linalg.qr(_normal(key, matrix_shape, dt))
        q = enp.multiply(q, enp.sign(_linalg.diagonal(r))[None, :])
        if n_rows < n_cols:
            q = _linalg.matrix_transpose(q)
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = _manipulation.reshape(q, rest + (n_cols,))
        q = _manipulation.moveaxis(q, -1, column_axis)
        return enp.multiply(q, np.asarray(scale, dt))

    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Convolution kernels that are zero except at the spatial centre, which holds an
    orthogonal matrix (the "delta orthogonal" scheme for deep convolutional networks)."""

    def init(key: Any, shape: Sequence[int], dtype_: Any = dtype) -> Any:
        dt = _dtype(dtype_)
        shape = tuple(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError(
                f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, got {shape}"
            )
        if shape[-1] < shape[-2]:
            raise ValueError(f"`fan_in` must be less or equal than `fan_out`, got shape {shape}")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        centre = [(k - 1) // 2 for k in shape[:-2]]
        spatial = len(shape) - 2
        block = _manipulation.reshape(matrix, (1,) * spatial + shape[-2:])
        starts = [np.int32(c) for c in centre] + [np.int32(0)] * 2
        return dynamic_update_slice_op(creation.zeros(shape, dt), block, starts)

    return init
