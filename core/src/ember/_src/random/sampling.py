"""What the samplers of ``random.continuous`` and ``random.discrete`` share: dtype and
parameter checks, the output shape, the jitted sampler behind an optimization barrier, and
the checks and draw that the floating samplers' public functions have in common."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.primitives.optimization_barrier import optimization_barrier
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.sharding_constraint import laid_out as _constrain
from ember._src.random.gamma import _check_key, _nth, _out_shape as _shape_with
from ember._src.random.prng import (
    _broadcast,
    _float_dtype,
    _split,
)
from ember._src.transforms.jit import jit


def _c(value: float, dtype: Any) -> np.ndarray:
    """A constant of ``dtype`` (Python floats round once, from double, as JAX's do)."""
    return np.asarray(value, dtype)


def _int_dtype(dtype: Any, what: str) -> np.dtype:
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else dtypes.default_int())
    if dtype.kind not in "iu":
        raise errors.EmberTypeError(
            f"{what} needs an integer dtype, got {dtypes.short_name(dtype)}{errors.where()}"
        )
    return dtype


def _numeric_dtype(dtype: Any, default: np.dtype, what: str) -> np.dtype:
    dtype = dtypes.canonicalize(np.dtype(dtype) if dtype is not None else default)
    if dtype.kind not in "iuf" and not dtypes.is_float(dtype):
        raise errors.EmberTypeError(
            f"{what} needs a numeric dtype, got {dtypes.short_name(dtype)}{errors.where()}"
        )
    return dtype


def _param_shape(x: Any, name: str, what: str) -> tuple[int, ...]:
    try:
        aval = get_aval(x)
    except errors.EmberTypeError:
        raise errors.EmberTypeError(
            f"{what}: {name} must be a number or an array, got {type(x).__name__}{errors.where()}"
        ) from None
    if not (dtypes.is_float(aval.dtype) or aval.dtype.kind in "iub") or aval.dtype.kind == "c":
        raise errors.EmberTypeError(
            f"{what}: {name} must be real, got {aval.str_short()}{errors.where()}"
        )
    return aval.shape


def _out_shape(what: str, shape: Any, *param_shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The result's shape: ``shape``, which the parameters' shapes must broadcast to, or by
    default their common shape."""
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*param_shapes))
        except ValueError:
            raise ValueError(
                f"{what}: the parameters' shapes {list(param_shapes)} are not "
                f"broadcast-compatible{errors.where()}"
            ) from None
    return _shape_with(what, shape, *param_shapes)


def _as(x: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    return _broadcast(convert_element_type(x, dtype), shape)


def _two_keys(key: Any) -> tuple[Any, Any]:
    keys = _split(key, (2,))
    return _nth(keys, 0), _nth(keys, 1)


def _sampler_jit(impl: Any, static_argnums: tuple[int, ...]) -> Any:
    """``impl`` jitted, its parameters (not the key) behind an optimization barrier.

    Called eagerly, a sampler gets its parameters as run-time arguments; under an outer jit
    they may be constants, and XLA may then fold functions of them (e.g. the log of gamma's
    d) at compile time, to results whose last bit can differ from the compiled code's. The
    barrier keeps them run-time values, so a sampler gives the same bits under jit as when
    called directly (which are JAX's).
    """

    def run(key: Any, *args: Any) -> Any:
        dynamic = [i for i in range(len(args)) if i + 1 not in static_argnums]
        hidden = optimization_barrier([args[i] for i in dynamic])
        args = list(args)
        for i, value in zip(dynamic, hidden):
            args[i] = value
        return impl(key, *args)

    return jit(run, static_argnums=static_argnums)


def _draw_float(what: str, sampler_jit: Any, key: Any, shape: Any, dtype: Any,
                out_sharding: Any, /, **params: Any) -> Any:  # fmt: skip
    """The public side of a floating sampler with real parameters ``params`` (by name, in
    the sampler's order): checks them, finds the output shape and draws."""
    _check_key(key)
    dtype = _float_dtype(dtype, what)
    shape = _out_shape(what, shape, *(_param_shape(x, name, what) for name, x in params.items()))
    return _constrain(sampler_jit(key, *params.values(), shape, dtype), out_sharding)
