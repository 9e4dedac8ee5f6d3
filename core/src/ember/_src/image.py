"""``ember.image``: resizing by separable kernels, as ``jax.image``.

Each resized axis is one contraction with an (output, input) weight matrix: output pixel i
samples the input at ``(i + 0.5) / scale - translation / scale - 0.5``; the kernel (stretched
by 1 / scale when shrinking with ``antialias``) weighs the input pixels near that point, and the
weights are normalised to sum to one. Samples whose centre falls outside the input get zero
weight. 'nearest' in ``resize`` picks one input pixel per output pixel instead.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.numeric import Precision, canonical_precision
from ember._src.numpy import contractions, creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.nonzero import where


class ResizeMethod(enum.Enum):
    """Image resize method: NEAREST, LINEAR, LANCZOS3, LANCZOS5, CUBIC (Keys, a = -0.5).
    CUBIC_PYTORCH and AREA exist as in JAX but are not implemented."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        names = {
            "nearest": ResizeMethod.NEAREST,
            "linear": ResizeMethod.LINEAR,
            "bilinear": ResizeMethod.LINEAR,
            "trilinear": ResizeMethod.LINEAR,
            "triangle": ResizeMethod.LINEAR,
            "lanczos3": ResizeMethod.LANCZOS3,
            "lanczos5": ResizeMethod.LANCZOS5,
            "cubic": ResizeMethod.CUBIC,
            "bicubic": ResizeMethod.CUBIC,
            "tricubic": ResizeMethod.CUBIC,
            "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
            "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
            "area": ResizeMethod.AREA,
        }
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return names[s]


def _method(method: Any) -> ResizeMethod:
    if isinstance(method, ResizeMethod):
        return method
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    raise TypeError(f"resize method must be a string or a ResizeMethod, got {method!r}")


# --------------------------------------------------------------------------------------------
# Kernels, as functions of the distance |x| in input pixels


def _triangle(x: Any) -> Any:
    return enp.maximum(0, 1 - x)


def _keys_cubic(x: Any) -> Any:
    """Keys' cubic convolution kernel with a = -0.5."""
    near = ((1.5 * x - 2.5) * x) * x + 1
    far = ((-0.5 * x + 2.5) * x - 4) * x + 2
    return where(x >= 2, 0, where(x >= 1, far, near))


def _lanczos(radius: int) -> Callable[[Any], Any]:
    def kernel(x: Any) -> Any:
        numerator = radius * enp.sin(np.pi * x) * enp.sin(np.pi * x / radius)
        safe = where(x > 1e-3, x, 1)
        value = where(x > 1e-3, numerator / (np.pi**2 * safe * safe), 1)
        return where(x > radius, 0, value)

    return kernel


_KERNELS = {
    ResizeMethod.LINEAR: _triangle,
    ResizeMethod.CUBIC: _keys_cubic,
    ResizeMethod.LANCZOS3: _lanczos(3),
    ResizeMethod.LANCZOS5: _lanczos(5),
}


def _weights(
    in_size: int, out_size: int, scale: Any, translation: Any, kernel, antialias: bool, dtype
) -> Any:
    """The (in_size, out_size) matrix taking one axis of the input to the output."""
    inverse = 1 / scale
    stretch = enp.maximum(inverse, 1) if antialias else creation.asarray(1, dtype)
    centres = (creation.arange(out_size, dtype=dtype) + 0.5) * inverse - translation * inverse
    centres = centres - 0.5
    distance = enp.abs(centres[None, :] - creation.arange(in_size, dtype=dtype)[:, None])
    weights = kernel(distance / stretch)
    total = reductions.sum(weights, axis=0, keepdims=True)
    tiny = 1000 * float(np.finfo(dtype).eps)
    weights = where(enp.abs(total) > tiny, weights / where(total == 0, 1, total), 0)
    inside = (centres >= -0.5) & (centres <= in_size - 0.5)
    return where(inside[None, :], weights, 0).astype(dtype)


def _float_image(image: Any) -> Any:
    image = creation.asarray(image)
    if not dtypes.is_inexact(get_aval(image).dtype):
        image = image.astype(dtypes.default_float())
    return image


def _contract_axes(
    image: Any, shape: Sequence[int], axes: Sequence[int], scale, translation, kernel, antialias,
    precision,
) -> Any:  # fmt: skip
    dtype = get_aval(image).dtype
    real = dtypes.real_dtype(dtype)
    scale = creation.asarray(scale).astype(real)
    translation = creation.asarray(translation).astype(real)
    for k, axis in enumerate(axes):
        in_size = get_aval(image).shape[axis]
        weights = _weights(
            in_size, shape[axis], scale[k], translation[k], kernel, antialias, real
        ).astype(dtype)
        moved = manipulation.moveaxis(image, axis, -1)
        moved = contractions.matmul(moved, weights, precision=precision)
        image = manipulation.moveaxis(moved, -1, axis)
    return image


def _check_shape(image: Any, shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != get_aval(image).ndim:
        raise ValueError(
            f"shape must have length equal to the number of dimensions of x; "
            f"{shape} vs {get_aval(image).shape}{errors.where()}"
        )
    return shape


def scale_and_translate(
    image: Any,
    shape: Sequence[int],
    spatial_dims: Sequence[int],
    scale: Any,
    translation: Any,
    method: str | ResizeMethod,
    antialias: bool = True,
    precision: Any = Precision.HIGHEST,
) -> Any:
    """Resample ``spatial_dims`` of ``image`` to ``shape`` with the given per-axis ``scale``
    and ``translation`` (output = input * scale + translation, in pixel-centre coordinates)."""
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError(
            "Nearest neighbor resampling is not currently supported for scale_and_translate."
        )
    if method not in _KERNELS:
        raise NotImplementedError(f"scale_and_translate: {method} is not supported")
    image = _float_image(image)
    shape = _check_shape(image, shape)
    ndim = len(shape)
    axes = [int(d) % ndim for d in spatial_dims]
    for axis in range(ndim):
        if axis not in axes and shape[axis] != get_aval(image).shape[axis]:
            raise ValueError(
                f"scale_and_translate: axis {axis} changes size but is not in spatial_dims"
                f"{errors.where()}"
            )
    return _contract_axes(
        image,
        shape,
        axes,
        scale,
        translation,
        _KERNELS[method],
        antialias,
        canonical_precision(precision),
    )


def _resize_nearest(image: Any, shape: Sequence[int]) -> Any:
    for axis, (in_size, out_size) in enumerate(zip(get_aval(image).shape, shape)):
        if in_size == out_size:
            continue
        # output pixel i takes the input pixel under its centre
        step = np.float32(in_size / out_size)
        centres = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * step
        index = np.minimum(np.floor(centres).astype(np.int32), in_size - 1)
        image = image[(slice(None),) * axis + (index,)]
    return image


def resize(
    image: Any,
    shape: Sequence[int],
    method: str | ResizeMethod,
    antialias: bool = True,
    precision: Any = Precision.HIGHEST,
) -> Any:
    """``image`` resized to ``shape`` (one entry per axis; axes whose size changes are
    resampled). Floating-point results for all methods but 'nearest', which keeps the dtype."""
    method = _method(method)
    image = creation.asarray(image)
    shape = _check_shape(image, shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"resize: negative output shape {shape}{errors.where()}")
    if method is ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    if method not in _KERNELS:
        raise NotImplementedError(f"resize: {method} is not supported{errors.where()}")
    image = _float_image(image)
    in_shape = get_aval(image).shape
    axes = [axis for axis in range(len(shape)) if shape[axis] != in_shape[axis]]
    if not axes:
        return image
    scale = [shape[a] / in_shape[a] if in_shape[a] else 1.0 for a in axes]
    translation = [0.0] * len(axes)
    return _contract_axes(
        image,
        shape,
        axes,
        scale,
        translation,
        _KERNELS[method],
        antialias,
        canonical_precision(precision),
    )
