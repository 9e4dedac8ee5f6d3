"""How NumPy functions prepare their operands over the primitives: dtype promotion,
broadcasting, axis and dtype argument checks."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray, get_aval
from ember._src.primitives.elementwise import WeakScalar
from ember._src.primitives.shape import broadcast_to_shape, convert_element_type


def aval_of(x: Any, name: str) -> ShapedArray:
    try:
        return get_aval(x)
    except errors.EmberTypeError:
        if isinstance(x, (list, tuple)):
            return get_aval(np.asarray(x))
        raise errors.EmberTypeError(
            f"{name} got an argument of type {type(x).__name__}, which is not an array"
            f"{errors.where()}"
        ) from None


def as_operand(x: Any) -> Any:
    """Lists and tuples become NumPy arrays; everything else passes through."""
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def cast(x: Any, dtype: np.dtype, weak: bool = False) -> Any:
    """``x`` converted to ``dtype``; Python scalars become weakly typed constants."""
    if dtypes.is_python_scalar(x):
        array = np.asarray(x, dtype)
        return array.view(WeakScalar) if weak else array[()]
    if isinstance(x, (np.ndarray, np.generic)) and not isinstance(x, WeakScalar):
        if x.dtype != dtype:
            return np.asarray(x, dtype)
        return x
    return convert_element_type(x, dtype, weak)


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of an array, tracer or scalar."""
    return get_aval(x).shape


def dtype_of(x: Any) -> np.dtype:
    """The dtype of an array, tracer or scalar."""
    return get_aval(x).dtype


def scalar_like(value: Any, like: Any) -> Any:
    """``value`` as a NumPy scalar of ``like``'s dtype."""
    return np.asarray(value, dtype_of(like))[()]


def promote_dtypes(*args: Any) -> list[Any]:
    """Convert all arguments to their common dtype per the promotion lattice."""
    args = [as_operand(a) for a in args]
    avals = [get_aval(a) for a in args]
    dtype, weak = dtypes.promote([(a.dtype, a.weak_type) for a in avals])
    return [
        a if aval.dtype == dtype and aval.weak_type == weak else cast(a, dtype, weak)
        for a, aval in zip(args, avals)
    ]


def promote_to_inexact(*args: Any) -> list[Any]:
    """Like promote_dtypes, but integers and booleans become floats (float64 for 64-bit
    integers, float32 for narrower ones, as JAX)."""
    promoted = promote_dtypes(*args)
    aval = get_aval(promoted[0])
    if dtypes.is_inexact(aval.dtype):
        return promoted
    return [cast(a, dtypes.to_inexact(aval.dtype), aval.weak_type) for a in promoted]


def broadcast_shapes_for(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        shown = " ".join(str(s) for s in shapes)
        raise ValueError(
            f"{name}: operands could not be broadcast together with shapes {shown}{errors.where()}"
        ) from None


def broadcast_args(name: str, *args: Any) -> list[Any]:
    """Broadcast operands to a common shape (rank-0 operands are left to the primitive)."""
    shapes = [get_aval(a).shape for a in args]
    if all(s == shapes[0] or not s for s in shapes):
        return list(args)
    shape = broadcast_shapes_for(name, *shapes)
    return [
        a if not s or s == shape else broadcast_to_shape(a, shape) for a, s in zip(args, shapes)
    ]


def prepare(name: str, *args: Any) -> list[Any]:
    # The common case, operands of one abstract value, needs neither promotion nor broadcasting.
    first = getattr(args[0], "aval", None)
    if type(first) is ShapedArray and all(getattr(a, "aval", None) == first for a in args[1:]):
        return list(args)
    return broadcast_args(name, *promote_dtypes(*args))


def prepare_inexact(name: str, *args: Any) -> list[Any]:
    # The common case, floating operands of one abstract value, needs no work.
    first = getattr(args[0], "aval", None)
    if (
        type(first) is ShapedArray
        and dtypes.is_inexact(first.dtype)
        and all(getattr(a, "aval", None) == first for a in args[1:])
    ):
        return list(args)
    return broadcast_args(name, *promote_to_inexact(*args))


def canonicalize_axis(axis: Any, ndim: int, name: str = "axis") -> int:
    try:
        axis = operator.index(core.concrete_or_error(axis, name))
    except TypeError:
        raise errors.EmberTypeError(
            f"{name} must be an integer, got {axis!r}{errors.where()}"
        ) from None
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise np.exceptions.AxisError(
            f"{name} {axis} is out of bounds for array of dimension {ndim}{errors.where()}"
        )
    return axis % ndim if ndim else 0


def canonicalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``None`` means every axis; ints and sequences are validated and made non-negative."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)) or isinstance(axis, core.Tracer):
        axes = (canonicalize_axis(axis, ndim),)
    else:
        axes = tuple(canonicalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in {axis}{errors.where()}")
    return axes


def check_dtype_arg(dtype: Any) -> np.dtype | None:
    if dtype is None:
        return None
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise errors.EmberTypeError(f"data type {dtype!r} not understood{errors.where()}") from None
    dtypes.check_supported(dtype, "dtype={dtype}: arrays of dtype {dtype}")
    return dtypes.canonicalize(dtype)


def check_no_out(out: Any, name: str) -> None:
    """JAX arrays are immutable, so ``out=`` is accepted only as None (as in JAX)."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to {name} is not supported.{errors.where()}")


def shape_tuple(shape: Any) -> tuple[int, ...]:
    return core.canonicalize_shape(shape)


def ensure_sequence(x: Any) -> Sequence[Any]:
    return x if isinstance(x, (list, tuple)) else list(x)
