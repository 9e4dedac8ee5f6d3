"""The parts of the Python array API standard (2024.12) that NumPy's own names don't cover:
the standard's spellings of the inverse trigonometric functions, shifts and ``nextafter``,
``isdtype``, ``from_dlpack``, ``unstack``, the cumulative sum and product with
``include_initial``, the four ``unique_*`` functions and the inspection namespace.

The ``unique_*`` functions have value-dependent output shapes: under a transformation they
need JAX's static ``size=`` (and optionally ``fill_value=``), as ``unique`` does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.execution import placement
from ember._src.execution.devices import devices as default_backend_devices, local_devices
from ember._src.numpy import creation, dlpack, elementwise, manipulation
from ember._src.numpy.operands import canonicalize_axis, prepare, prepare_inexact
from ember._src.numpy.set_routines import unique
from ember._src.numpy.sorting import cumprod, cumsum
from ember._src.primitives import bits, precision
from ember._src.primitives.shape import convert_element_type, reshape
from ember._src.primitives.slicing import slice_op

# --------------------------------------------------------------------------------------------
# Elementwise: the standard's names


acos = elementwise.arccos
acosh = elementwise.arccosh
asin = elementwise.arcsin
asinh = elementwise.arcsinh
atan = elementwise.arctan
atanh = elementwise.arctanh
atan2 = elementwise.arctan2
bitwise_invert = elementwise.bitwise_not


def _integer_operands(name: str, x1: Any, x2: Any) -> tuple[Any, Any]:
    x1, x2 = prepare(name, x1, x2)
    dtype = get_aval(x1).dtype
    if dtype == dtypes.bool_:  # as NumPy: booleans shift as int8
        x1, x2 = convert_element_type(x1, dtypes.int8), convert_element_type(x2, dtypes.int8)
    elif dtype.kind not in "iu":
        raise TypeError(
            f"{name} is only defined for integer arrays, got {dtypes.short_name(dtype)}"
            f"{errors.where()}"
        )
    return x1, x2


def bitwise_left_shift(x1: Any, x2: Any, /) -> Any:
    """``x1 << x2``; shifts by the bit width or more give zero, as in NumPy."""
    x1, x2 = _integer_operands("bitwise_left_shift", x1, x2)
    return bits.shift_left(x1, x2)


def bitwise_right_shift(x1: Any, x2: Any, /) -> Any:
    """``x1 >> x2``: arithmetic for signed integers, logical for unsigned ones."""
    x1, x2 = _integer_operands("bitwise_right_shift", x1, x2)
    if get_aval(x1).dtype.kind == "i":
        return bits.shift_right_arithmetic(x1, x2)
    return bits.shift_right_logical(x1, x2)


def nextafter(x1: Any, x2: Any, /) -> Any:
    """The next representable floating-point value after ``x1`` towards ``x2``."""
    x1, x2 = prepare_inexact("nextafter", x1, x2)
    dtype = get_aval(x1).dtype
    if dtype.kind == "c":
        raise errors.EmberTypeError(f"nextafter is not defined for complex arrays{errors.where()}")
    return precision.nextafter(x1, x2)


# --------------------------------------------------------------------------------------------
# Data types

_KINDS = {
    "bool": lambda d: d == dtypes.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: dtypes.is_float(d),
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iuc" or dtypes.is_float(d),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names
    ("bool", "signed integer", "unsigned integer", "integral", "real floating",
    "complex floating", "numeric"), or a tuple of those."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise errors.EmberTypeError(
            f"isdtype: {dtype!r} is not a data type{errors.where()}"
        ) from None
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(
                f"isdtype: unknown kind {kind!r}; expected a dtype or one of {sorted(_KINDS)}"
            )
        return bool(_KINDS[kind](dtype))
    try:
        return dtype == np.dtype(kind)
    except TypeError:
        raise TypeError(
            f"isdtype: kind must be a dtype, a kind name or a tuple, got {kind!r}"
        ) from None


# --------------------------------------------------------------------------------------------
# Creation


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """An ember array holding the data of ``x``, any object with ``__dlpack__``."""
    return dlpack.import_array(x, device, copy)


def _device(device: Any) -> Any:
    return placement.resolve_device(device, "device")


# --------------------------------------------------------------------------------------------
# Manipulation


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple of arrays of one rank less."""
    x = creation.asarray(x)
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError(f"unstack needs an array of rank 1 or more{errors.where()}")
    axis = canonicalize_axis(axis, aval.ndim)
    shape = aval.shape[:axis] + aval.shape[axis + 1 :]
    parts = []
    for i in range(aval.shape[axis]):
        start, limit = [0] * aval.ndim, list(aval.shape)
        start[axis], limit[axis] = i, i + 1
        parts.append(reshape(slice_op(x, start, limit), shape))
    return tuple(parts)


# --------------------------------------------------------------------------------------------
# Statistics: cumulative sum and product


def _accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """The standard's default: integers narrower than the default integer widen to it."""
    if dtype == dtypes.bool_:
        return dtypes.default_int()
    if dtype.kind in "iu":
        default = dtypes.default_int()
        if dtype.itemsize < default.itemsize:
            return default if dtype.kind == "i" else np.dtype(f"u{default.itemsize}")
    return dtype


def _cumulative(name: str, scan, identity: int, x: Any, axis, dtype, include_initial: bool):
    x = creation.asarray(x)
    aval = get_aval(x)
    if axis is None:
        if aval.ndim > 1:
            raise ValueError(f"{name} needs axis= for arrays of rank > 1{errors.where()}")
        axis = 0
    if aval.ndim == 0:
        raise ValueError(f"{name} needs an array of rank 1 or more{errors.where()}")
    axis = canonicalize_axis(axis, aval.ndim)
    dtype = _accumulator_dtype(aval.dtype) if dtype is None else dtypes.canonicalize(dtype)
    out = scan(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(get_aval(out).shape)
        shape[axis] = 1
        first = creation.full(tuple(shape), identity, get_aval(out).dtype)
        out = manipulation.concatenate([first, out], axis=axis)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:  # fmt: skip
    """Running sums along ``axis`` (``include_initial`` prepends the zero)."""
    return _cumulative("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:  # fmt: skip
    """Running products along ``axis`` (``include_initial`` prepends the one)."""
    return _cumulative("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


# --------------------------------------------------------------------------------------------
# Set functions


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _unique(name: str, x: Any, size: Any, fill_value: Any, **flags: bool) -> tuple:
    x = creation.asarray(x)
    if size is None and isinstance(x, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"{name} of a traced array has a value-dependent shape; pass a static size= "
            f"argument (and optionally fill_value=){errors.where()}"
        )
    if size is not None:
        size = core.concrete_or_error(size, f"{name}'s size argument")
    # The array API keeps every NaN distinct.
    out = unique(x, size=size, fill_value=fill_value, equal_nan=False, **flags)
    if not isinstance(out, tuple):
        return (out,)
    index_dtype = dtypes.default_int()
    return (out[0], *(convert_element_type(a, index_dtype) for a in out[1:]))


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueAllResult:
    """Sorted unique values of ``x`` with the index of each one's first occurrence, the
    inverse indices (``x``'s shape) and the counts. NaNs are distinct from each other;
    ``-0.0`` and ``0.0`` are one value. ``size=`` pads (or truncates) to a static length."""
    parts = _unique(
        "unique_all", x, size, fill_value, return_index=True, return_inverse=True,
        return_counts=True,
    )  # fmt: skip
    return UniqueAllResult(*parts)


def unique_counts(
    x: Any, /, *, size: int | None = None, fill_value: Any = None
) -> UniqueCountsResult:
    """Sorted unique values of ``x`` and how often each occurs."""
    return UniqueCountsResult(*_unique("unique_counts", x, size, fill_value, return_counts=True))


def unique_inverse(
    x: Any, /, *, size: int | None = None, fill_value: Any = None
) -> UniqueInverseResult:
    """Sorted unique values of ``x`` and, for each element of ``x``, its value's index."""
    parts = _unique("unique_inverse", x, size, fill_value, return_inverse=True)
    return UniqueInverseResult(*parts)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Sorted unique values of ``x``."""
    return _unique("unique_values", x, size, fill_value)[0]


# --------------------------------------------------------------------------------------------
# Inspection


_API_DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip


class ArrayNamespaceInfo:
    """What ``ember.numpy`` supports, as the array API's inspection functions report it.

    Without x64 the 64-bit types are not available (they narrow to 32 bits), so they are not
    listed."""

    def capabilities(self) -> dict[str, Any]:
        # Boolean masks index concrete arrays; under jit their shape would depend on values.
        return {"boolean indexing": True, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> Any:
        return local_devices()[0]

    def devices(self) -> list[Any]:
        return list(default_backend_devices())

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        return {
            "real floating": dtypes.default_float(),
            "complex floating": dtypes.default_complex(),
            "integral": dtypes.default_int(),
            "indexing": dtypes.default_int(),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        available = {
            name: np.dtype(name)
            for name in _API_DTYPE_NAMES
            if dtypes.canonicalize(np.dtype(name)) == np.dtype(name)
        }
        if kind is None:
            return available
        return {name: d for name, d in available.items() if isdtype(d, kind)}


def __array_namespace_info__() -> ArrayNamespaceInfo:  # noqa: N807 (the standard's name)
    return ArrayNamespaceInfo()
