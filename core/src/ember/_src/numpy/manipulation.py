"""Shape manipulation: reshape, transpose, broadcast_to, concatenate, stack, squeeze, ..."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, errors
from ember._src.core import get_aval
from ember._src.execution import placement
from ember._src.numpy.operands import (
    as_operand,
    canonicalize_axes,
    canonicalize_axis,
    cast,
    check_dtype_arg,
    check_no_out,
    promote_dtypes,
)
from ember._src.primitives import shape as shape_ops, slicing as slicing_ops
from ember._src.primitives.sharding_constraint import laid_out


def reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
            copy: bool | None = None, out_sharding: Any = None) -> Any:  # fmt: skip
    """``a`` with a new shape of the same size; one dimension may be -1 (inferred).

    ``copy`` (the array API's) is accepted and has no effect: ember arrays are immutable."""
    if shape is None:
        shape = newshape
    _check_order(order, "reshape")
    a = as_operand(a)
    aval = get_aval(a)
    dims = (
        [shape]
        if isinstance(shape, (int, np.integer)) or isinstance(shape, core.Tracer)
        else list(shape)
    )
    try:
        dims = [operator.index(core.concrete_or_error(d, "reshape's shape")) for d in dims]
    except TypeError as err:
        if isinstance(err, errors.ConcretizationTypeError):
            raise
        raise errors.EmberTypeError(
            f"reshape's shape must be a sequence of integers, got {shape!r}{errors.where()}"
        ) from None
    if any(d < -1 for d in dims):
        raise ValueError(
            f"reshape's shape must have non-negative dimensions (or one -1), got {tuple(dims)}"
            f"{errors.where()}"
        )
    if dims.count(-1) > 1:
        raise ValueError(
            f"can only specify one unknown dimension (-1), got {tuple(dims)}{errors.where()}"
        )
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if known == 0 or aval.size % known:
            raise ValueError(
                f"cannot reshape array of size {aval.size} into shape {tuple(dims)}{errors.where()}"
            )
        dims[dims.index(-1)] = aval.size // known
    if int(np.prod(dims, dtype=np.int64)) != aval.size:
        raise ValueError(
            f"cannot reshape array of size {aval.size} into shape {tuple(dims)}{errors.where()}"
        )
    if order == "F":
        # Column-major: reverse the axes, reshape row-major to the reversed shape, reverse back.
        reversed_a = shape_ops.transpose(a, tuple(range(aval.ndim - 1, -1, -1)))
        out = shape_ops.reshape(reversed_a, dims[::-1])
        out = shape_ops.transpose(out, tuple(range(len(dims) - 1, -1, -1)))
        return laid_out(out, out_sharding)
    return shape_ops.reshape(a, dims, out_sharding=out_sharding)


def _check_order(order: Any, name: str) -> None:
    """'C' and 'F' are supported; 'A' (and ravel's 'K') are not, as in JAX."""
    if order in ("C", "F"):
        return
    if order == "A" or (order == "K" and name == "ravel"):
        raise NotImplementedError(f"{name}: order={order!r} is not implemented{errors.where()}")
    raise ValueError(f"{name}: unexpected value for 'order' argument: {order!r}{errors.where()}")


def ravel(a: Any, order: str = "C") -> Any:
    _check_order(order, "ravel")
    return reshape(a, -1, order)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    a = as_operand(a)
    ndim = get_aval(a).ndim
    if axes is None:
        perm = tuple(range(ndim - 1, -1, -1))
    else:
        perm = tuple(canonicalize_axis(ax, ndim) for ax in axes)
        if sorted(perm) != list(range(ndim)):
            raise ValueError(f"axes {tuple(axes)} don't match array of rank {ndim}{errors.where()}")
    return shape_ops.transpose(a, perm)


def permute_dims(a: Any, /, axes: Sequence[int]) -> Any:
    return transpose(a, axes)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    ndim = get_aval(as_operand(a)).ndim
    perm = list(range(ndim))
    i, j = canonicalize_axis(axis1, ndim), canonicalize_axis(axis2, ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return shape_ops.transpose(as_operand(a), perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    a = as_operand(a)
    ndim = get_aval(a).ndim
    src = canonicalize_axes(source, ndim)
    dst = canonicalize_axes(destination, ndim)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    order = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return shape_ops.transpose(a, order)


def broadcast_to(array: Any, shape: Any, *, out_sharding: Any = None) -> Any:
    """``array`` broadcast to ``shape``; ``out_sharding`` (as JAX's) splits the result."""
    return laid_out(_broadcast_to(array, shape), out_sharding)


def _broadcast_to(array: Any, shape: Any) -> Any:
    a = as_operand(array)
    shape = core.canonicalize_shape(shape)
    aval = get_aval(a)
    try:
        target = np.broadcast_shapes(aval.shape, shape)
    except ValueError:
        target = None
    if target != tuple(shape):
        raise ValueError(
            f"cannot broadcast an array of shape {aval.shape} to shape {tuple(shape)}"
            f"{errors.where()}"
        )
    return shape_ops.broadcast_to_shape(a, shape)


def broadcast_arrays(*args: Any) -> list[Any]:
    shapes = [get_aval(as_operand(a)).shape for a in args]
    shape = np.broadcast_shapes(*shapes)
    return [broadcast_to(a, shape) for a in args]


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Any:
    if not len(arrays):
        raise ValueError(f"need at least one array to concatenate{errors.where()}")
    arrays = [as_operand(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    ndims = {get_aval(a).ndim for a in arrays}
    if 0 in ndims:
        raise ValueError(f"zero-dimensional arrays cannot be concatenated{errors.where()}")
    if len(ndims) != 1:
        raise ValueError(
            f"all the input arrays must have the same number of dimensions, got "
            f"{[get_aval(a).ndim for a in arrays]}{errors.where()}"
        )
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [cast(a, check_dtype_arg(dtype)) for a in arrays]
    axis = canonicalize_axis(axis, ndims.pop())
    arrays = [_materialize(a) for a in arrays]
    return slicing_ops.concatenate(arrays, axis)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """The array API's name for ``concatenate`` (no ``dtype``, keyword-only ``axis``)."""
    return concatenate(arrays, axis=axis)


def _materialize(a: Any) -> Any:
    """NumPy operands of concatenate must become ember values so the primitive accepts them."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np.asarray(a)
    return a


def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    check_no_out(out, "jnp.stack")
    if not len(arrays):
        raise ValueError(f"need at least one array to stack{errors.where()}")
    arrays = [as_operand(a) for a in arrays]
    shapes = {get_aval(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(
            f"all input arrays must have the same shape, got {[get_aval(a).shape for a in arrays]}"
            f"{errors.where()}"
        )
    ndim = len(shapes.pop()) + 1
    axis = canonicalize_axis(axis, ndim)
    expanded = [shape_ops.expand_dims(a, (axis,)) for a in promote_dtypes(*arrays)]
    if dtype is not None:
        expanded = [cast(a, check_dtype_arg(dtype)) for a in expanded]
    return slicing_ops.concatenate(expanded, axis)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    arrays = [atleast_1d(a) for a in tup]
    return concatenate(arrays, axis=0 if get_aval(arrays[0]).ndim == 1 else 1, dtype=dtype)


def squeeze(a: Any, axis: Any = None) -> Any:
    a = as_operand(a)
    aval = get_aval(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(aval.shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, aval.ndim)
        for ax in axes:
            if aval.shape[ax] != 1:
                raise ValueError(
                    f"cannot select an axis to squeeze out which has size not equal to one "
                    f"(axis {ax} of shape {aval.shape}){errors.where()}"
                )
    return shape_ops.squeeze(a, axes)


def expand_dims(a: Any, axis: Any = 0) -> Any:
    a = as_operand(a)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out_ndim = get_aval(a).ndim + len(axes)
    axes = canonicalize_axes(axes, out_ndim)
    return shape_ops.expand_dims(a, axes)


def atleast_1d(*arys: Any) -> Any:
    """Each argument with at least one axis; one argument gives one array, several a list."""
    results = [_at_least_1d(a) for a in arys]
    return results[0] if len(results) == 1 else results


def atleast_2d(*arys: Any) -> Any:
    """Each argument with at least two axes; one argument gives one array, several a list."""
    results = [_at_least_2d(a) for a in arys]
    return results[0] if len(results) == 1 else results


def _at_least_1d(a: Any) -> Any:
    a = as_operand(a)
    return reshape(a, (1,)) if get_aval(a).ndim == 0 else a


def _at_least_2d(a: Any) -> Any:
    a = as_operand(a)
    ndim = get_aval(a).ndim
    if ndim >= 2:
        return a
    return reshape(a, (1,) * (2 - ndim) + get_aval(a).shape)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    dtype = check_dtype_arg(dtype)
    if dtype is None:
        raise TypeError("astype needs a dtype")
    out = shape_ops.convert_element_type(as_operand(x), dtype)
    if device is None or isinstance(out, core.Tracer):
        return out
    return placement.to_device(out, placement.resolve_device(device, "astype's device"))


def flip(m: Any, axis: Any = None) -> Any:
    m = as_operand(m)
    return slicing_ops.rev(m, canonicalize_axes(axis, get_aval(m).ndim))


def shape(a: Any) -> tuple[int, ...]:
    return get_aval(as_operand(a)).shape


def ndim(a: Any) -> int:
    return get_aval(as_operand(a)).ndim


def size(a: Any, axis: int | None = None) -> int:
    aval = get_aval(as_operand(a))
    return aval.size if axis is None else aval.shape[axis]
