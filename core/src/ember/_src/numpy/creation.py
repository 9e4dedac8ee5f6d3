"""Array creation: array/asarray, zeros/ones/full (and *_like), arange, linspace, eye."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import Tracer, get_aval, is_arraylike
from ember._src.execution import placement
from ember._src.numpy.manipulation import stack
from ember._src.numpy.operands import (
    as_operand,
    cast,
    check_dtype_arg,
    promote_to_inexact,
    shape_tuple,
)
from ember._src.primitives.arithmetic import add, div, mul, sub
from ember._src.primitives.collectives import vary_like
from ember._src.primitives.comparisons import eq
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    broadcast_to_shape,
    convert_element_type,
    iota_along,
    reshape,
)
from ember._src.primitives.sharding_constraint import laid_out, retype
from ember._src.runtime.array import Array
from ember._src.tree.util import tree_flatten


def asarray(
    a: Any,
    dtype: Any = None,
    order: str | None = None,
    *,
    copy: bool | None = None,
    device: Any = None,
) -> Any:
    """``a`` as an ember array (a no-op for arrays of the right dtype). Only the default
    ``order`` ('K': keep the layout) exists, as in JAX."""
    if order is not None and order != "K":
        raise NotImplementedError(f"asarray: only order='K' is implemented{errors.where()}")
    dtypes.check_requested(dtype, "asarray")
    dtype = check_dtype_arg(dtype)
    if isinstance(a, (Array, Tracer)):
        if dtype is not None and dtype != a.dtype:
            a = convert_element_type(a, dtype)
        return _place(a, device)
    if isinstance(a, (list, tuple)):
        leaves = tree_flatten(a)[0]
        if any(isinstance(x, (Array, Tracer)) for x in leaves):
            return stack([asarray(x, dtype) for x in a])
    if hasattr(a, "__jax_array__"):
        a = a.__jax_array__()
    try:
        host = np.asarray(a, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"cannot convert {type(a).__name__} to an array: {err}{errors.where()}"
        ) from None
    if host.dtype == object:
        raise TypeError(
            f"cannot convert {type(a).__name__} to an array of numbers: NumPy makes it an array "
            f"of dtype object (Python objects), which ember cannot hold{errors.where()}"
        )
    weak = dtype is None and dtypes.is_python_scalar(a)
    if dtype is None:
        host = (
            host.astype(dtypes.canonicalize(host.dtype))
            if not weak
            else np.asarray(a, dtypes.python_scalar_dtype(a))
        )
    target = device if device is not None else None
    return placement.device_put_numpy(host, _device_of(target), weak_type=weak)


def asarray_inexact(x: Any) -> Any:
    """``x`` as an array of a floating or complex dtype (integers and booleans become the
    default float)."""
    (x,) = promote_to_inexact(asarray(as_operand(x)))
    return x


def _device_of(device: Any) -> Any:
    return placement.resolve_device(device, "device")


def _place(x: Any, device: Any) -> Any:
    """``x`` on ``device`` (the array API's ``device=`` keyword); tracers stay as they are."""
    device = _device_of(device)  # checked even for tracers: a bad device is a bad call
    if device is None or not isinstance(x, Array):
        return x
    return placement.to_device(x, device)


def array(object: Any, dtype: Any = None, copy: bool = True, ndmin: int = 0) -> Any:
    result = asarray(object, dtype)
    extra = ndmin - get_aval(result).ndim
    if extra > 0:
        result = reshape(result, (1,) * extra + get_aval(result).shape)
    return result


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:  # fmt: skip
    """``fill_value`` everywhere; ``out_sharding`` (as JAX's) splits the result."""
    return laid_out(_place(_full(shape, fill_value, dtype), device), out_sharding)


def _full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    shape = shape_tuple(shape)
    dtype = check_dtype_arg(dtype)
    if isinstance(fill_value, (Array, Tracer)):
        value = fill_value if dtype is None else convert_element_type(fill_value, dtype)
        aval = get_aval(value)
        if aval.ndim:
            return broadcast_to_shape(value, shape)
        return broadcast_in_dim(value, shape, ())
    fill = np.asarray(fill_value)
    if dtype is None:
        dtype = (
            dtypes.python_scalar_dtype(fill_value)
            if dtypes.is_python_scalar(fill_value)
            else dtypes.canonicalize(fill.dtype)
        )
    if fill.ndim:
        return broadcast_to_shape(asarray(fill, dtype), shape)
    # asarray first: broadcasting to shape () returns its operand, which must be an Array.
    return broadcast_in_dim(asarray(np.asarray(fill_value, dtype)), shape, ())


def zeros(shape: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    dtypes.check_requested(dtype, "zeros")
    dtype = dtype or dtypes.default_float()
    return full(shape, 0, dtype, device=device, out_sharding=out_sharding)


def ones(shape: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    dtypes.check_requested(dtype, "ones")
    dtype = dtype or dtypes.default_float()
    return full(shape, 1, dtype, device=device, out_sharding=out_sharding)


def empty(shape: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    return zeros(shape, dtype, device=device, out_sharding=out_sharding)


def _like(a: Any, dtype: Any, shape: Any) -> tuple[Any, tuple[int, ...]]:
    aval = get_aval(a) if not isinstance(a, (list, tuple)) else get_aval(np.asarray(a))
    return (check_dtype_arg(dtype) or aval.dtype), (
        aval.shape if shape is None else shape_tuple(shape)
    )


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:  # fmt: skip
    """``fill_value`` in the shape and dtype of ``a`` (unless given), split as
    ``out_sharding`` says, else (same shape) typed as ``a`` over Explicit mesh axes."""
    dtype, new_shape = _like(a, dtype, shape)
    out = full(new_shape, fill_value, dtype, device=device, out_sharding=out_sharding)
    if is_arraylike(a):
        out = vary_like(out, a)
    if out_sharding is None and device is None and shape is None and is_arraylike(a):
        return retype(out, get_aval(a).typed_sharding, a)
    return out


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
               out_sharding: Any = None) -> Any:  # fmt: skip
    return full_like(a, 0, dtype, shape, device=device, out_sharding=out_sharding)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
              out_sharding: Any = None) -> Any:  # fmt: skip
    return full_like(a, 1, dtype, shape, device=device, out_sharding=out_sharding)


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
               out_sharding: Any = None) -> Any:  # fmt: skip
    return zeros_like(prototype, dtype, shape, device=device, out_sharding=out_sharding)


def _static_number(value: Any, name: str) -> Any:
    return core.concrete_or_error(value, f"arange's {name} argument")


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None, out_sharding: Any = None) -> Any:  # fmt: skip
    """Evenly spaced values in [start, stop); its arguments must be concrete (not traced)."""
    return laid_out(_place(_arange(start, stop, step, dtype), device), out_sharding)


def _arange(start: Any, stop: Any, step: Any, dtype: Any) -> Any:
    start = _static_number(start, "start")
    stop = _static_number(stop, "stop") if stop is not None else None
    step = _static_number(step, "step") if step is not None else None
    dtype = check_dtype_arg(dtype)
    if stop is None and step is None and dtype is None or (stop is None and step is None):
        count = operator.index(start) if isinstance(start, (int, np.integer)) else None
        if count is not None:
            length = core.canonicalize_shape(max(count, 0), "arange's length")
            return iota_along(dtype or dtypes.default_int(), length, 0)
    if step is not None and step == 0:
        raise ValueError(f"arange: step must not be zero{errors.where()}")
    # NumPy's result dtype, from an empty range of the same argument types (the values
    # themselves may not fit in memory)
    empty_stop = start if stop is None else type(stop)(start)
    kind = np.arange(start, empty_stop, 1 if step is None else step).dtype
    if dtype is None:
        dtype = dtypes.default_float() if kind.kind == "f" else dtypes.canonicalize(kind)
    if kind.kind in "iu" and step in (None, 1) and np.dtype(dtype).kind in "iuf":
        lo, hi = (0, start) if stop is None else (start, stop)
        length = max(0, int(hi) - int(lo))
        base = iota_along(dtype, core.canonicalize_shape(length, "arange's length"), 0)
        offset = np.asarray(lo, dtype)[()]
        return add(base, offset) if offset else base
    return asarray(_host_arange(start, stop, step).astype(dtype))


def _host_arange(start: Any, stop: Any, step: Any) -> np.ndarray:
    """``np.arange(start, stop, step)``, after checking its length: NumPy would try to build a
    length no memory holds (or fail with a message that names no argument)."""
    lo, hi = (0, start) if stop is None else (start, stop)
    delta = 1 if step is None else step
    length = max(0, math.ceil((hi - lo) / delta)) if np.isfinite((hi - lo) / delta) else None
    if length is None:
        raise ValueError(f"arange({start}, {stop}, {step}) has no finite length{errors.where()}")
    core.canonicalize_shape((length,), "arange's length")
    if length > _HOST_ARANGE_LIMIT:  # the values are built on the host first
        raise ValueError(
            f"arange({start}, {stop}, {step}) would have {length} elements; ember builds "
            f"non-integer ranges on the host, limited to {_HOST_ARANGE_LIMIT} (use "
            f"start + step * arange(n) for longer ones){errors.where()}"
        )
    return np.arange(start, stop, step)


# An arange whose values NumPy computes on the host: 2**28 float64 values are 2 GiB.
_HOST_ARANGE_LIMIT = 2**28


def linspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
) -> Any:
    if retstep:
        values, step = _linspace(start, stop, num, endpoint, dtype)
        return _place(values, device), step
    return _place(_linspace(start, stop, num, endpoint, dtype)[0], device)


def _linspace(start: Any, stop: Any, num: Any, endpoint: bool, dtype: Any) -> tuple[Any, Any]:
    num = operator.index(core.concrete_or_error(num, "linspace's num"))
    if num < 0:
        raise ValueError(
            f"linspace: number of samples, {num}, must be non-negative{errors.where()}"
        )
    # As JAX: by default the inexact type of start and stop (int8..int32 -> float32).
    dtype = check_dtype_arg(dtype) or dtypes.to_inexact(
        dtypes.promote([(get_aval(v).dtype, get_aval(v).weak_type) for v in (start, stop)])[0]
    )
    compute = dtypes.default_float() if np.dtype(dtype).kind in "iub" else dtype
    start_c = (
        cast(start, compute)
        if dtypes.is_python_scalar(start)
        else convert_element_type(asarray(start), compute)
    )
    stop_c = (
        cast(stop, compute)
        if dtypes.is_python_scalar(stop)
        else convert_element_type(asarray(stop), compute)
    )
    divisor = (num - 1) if endpoint else num
    index = iota_along(dtypes.int32, (num,), 0)
    delta = sub(stop_c, start_c)
    if get_aval(delta).shape:
        raise ValueError(f"linspace supports scalar start and stop only{errors.where()}")
    step = div(delta, np.asarray(max(divisor, 1), compute)[()])
    values = add(mul(convert_element_type(index, compute), step), start_c)
    if endpoint and num > 1:
        # Pin the last sample to stop exactly, as NumPy does, despite rounding in the steps.
        values = select_n(eq(index, np.int32(num - 1)), values, stop_c)
    result = convert_element_type(values, dtype) if dtype != compute else values
    return result, step


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None):
    n = operator.index(core.concrete_or_error(N, "eye's N"))
    m = n if M is None else operator.index(core.concrete_or_error(M, "eye's M"))
    if n < 0 or m < 0:
        raise ValueError(f"eye: negative dimensions are not allowed (N={n}, M={m}){errors.where()}")
    k = diagonal_offset(core.concrete_or_error(k, "eye's k"), n, m)
    dtype = check_dtype_arg(dtype) or dtypes.default_float()
    rows = iota_along(dtypes.int32, (n, m), 0)
    cols = iota_along(dtypes.int32, (n, m), 1)
    return _place(convert_element_type(eq(add(rows, np.int32(k)), cols), dtype), device)


def diagonal_offset(k: Any, n: int, m: int) -> int:
    """The diagonal offset ``k`` of an ``n`` x ``m`` matrix, clamped to ``[-n, m]``.

    Every offset outside that range selects no element, so clamping changes no answer but
    keeps ``row + k`` inside int32 for offsets such as ``2**31`` or ``-2**40``."""
    return min(max(operator.index(k), -n), m)


def identity(n: int, dtype: Any = None) -> Any:
    return eye(n, dtype=dtype)
