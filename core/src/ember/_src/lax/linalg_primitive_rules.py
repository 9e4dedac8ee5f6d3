"""What the linear algebra primitives share: operand checks, computing half precision in
float32, batching by moving the batch axis to the front, the sharding rule of stacks
(batch dimensions may be split, matrix dimensions must be whole), and small matrix helpers."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, get_aval
from ember._src.dtypes import HALF_FLOATS
from ember._src.lax.linalg_operands import (
    identity_matrix,
    where_broadcast,
)
from ember._src.primitives import sharding_rules
from ember._src.primitives.shape import (
    batch_size,
    bdim_to_front,
    broadcast_to_shape,
    convert_element_type,
)


def fail_shape(what: str, message: str) -> errors.ShapeMismatchError:
    return errors.ShapeMismatchError(f"{what}: {message}{errors.where()}")


def check_matrix(what: str, x: ShapedArray, square: bool = False) -> None:
    if x.ndim < 2:
        raise fail_shape(what, f"expected a matrix or a stack of them, got {x.str_short()}")
    if square and x.shape[-1] != x.shape[-2]:
        raise fail_shape(what, f"expected square matrices, got {x.str_short()}")
    if not dtypes.is_inexact(x.dtype):
        raise errors.EmberTypeError(
            f"{what}: expected a floating-point or complex operand, got {x.str_short()}"
            f"{errors.where()}"
        )


def check_same_dtype(what: str, *avals: ShapedArray) -> None:
    if len({a.dtype for a in avals}) != 1:
        operands = ", ".join(a.str_short() for a in avals)
        raise errors.EmberTypeError(
            f"{what}: the operands must share a dtype, got {operands}{errors.where()}"
        )


def check_batch(what: str, x: ShapedArray, other: ShapedArray, core: int, name: str) -> None:
    batch = x.shape[:-2]
    if other.ndim != len(batch) + core or other.shape[: len(batch)] != batch:
        raise fail_shape(
            what, f"{name} ({other.str_short()}) must have the batch dimensions {batch}"
        )


def in_float32(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` computed in float32 for half-precision operands, its results converted back."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **params: Any) -> Any:
        dtype = get_aval(args[0]).dtype
        if dtype not in HALF_FLOATS:
            return fn(*args, **params)
        up = [
            convert_element_type(a, np.float32) if get_aval(a).dtype == dtype else a for a in args
        ]
        outs = fn(*up, **params)
        if isinstance(outs, (list, tuple)):
            return [convert_element_type(o, dtype) if is_float32(o) else o for o in outs]
        return convert_element_type(outs, dtype)

    return wrapped


def is_float32(x: Any) -> bool:
    return get_aval(x).dtype == np.dtype(np.float32)


def batch_at_front(primitive):
    """Batching: every operand's batch axis moves to the front (unbatched ones are broadcast)
    and the primitive is bound once."""

    def rule(vals, dims, **params):
        size = batch_size(vals, dims)
        fronts = [bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
        outs = primitive.bind(*fronts, **params)
        if primitive.multiple_results:
            return outs, [0] * len(outs)
        return outs, 0

    return rule


def batch_dims_split(
    core_in: Sequence[int], core_out: Callable[..., int | Sequence[int]]
) -> rules.per_primitive:
    """A sharding rule for primitives over stacks: the batch dimensions (the same in every
    operand) may be split, each the same way in every operand; the matrix (or vector)
    dimensions, ``core_in`` trailing ones of each operand, must be whole. ``core_out(**params)``
    gives the number of trailing core dimensions of each result (an int: the one result)."""

    def build(primitive):
        def rule(*avals, **params):
            what = primitive.name
            mesh = sharding_rules.common_mesh(what, avals)
            for aval, core in zip(avals, core_in):
                dims = range(aval.ndim - core, aval.ndim)
                sharding_rules.require_unsplit(
                    what, avals, aval, dims, "a factorisation needs whole matrices"
                )
            batch = avals[0].ndim - core_in[0]
            columns = zip(*(sharding_rules.entries(a)[:batch] for a in avals))
            split = [sharding_rules.consensus(what, avals, c) for c in columns]
            cores = core_out(**params)
            if isinstance(cores, int):
                return sharding_rules.build(what, avals, mesh, [*split, *(None,) * cores])
            return [sharding_rules.build(what, avals, mesh, [*split, *(None,) * c]) for c in cores]

        return rule

    return rules.per_primitive(build)


def tril(x: Any, k: int = 0) -> Any:
    m, n = get_aval(x).shape[-2:]
    return where_broadcast(np.tril(np.ones((m, n), bool), k), x, 0).astype(get_aval(x).dtype)


def triu(x: Any, k: int = 0) -> Any:
    m, n = get_aval(x).shape[-2:]
    return where_broadcast(np.triu(np.ones((m, n), bool), k), x, 0).astype(get_aval(x).dtype)


def eye_like(x: Any, rows: int, columns: int) -> Any:
    batch = get_aval(x).shape[:-2]
    eye = identity_matrix(rows, get_aval(x).dtype, columns)
    return broadcast_to_shape(eye, (*batch, rows, columns))


def zeros_results(ctx) -> list[Any]:
    return [ctx.constant(np.zeros(a.shape, a.dtype), a) for a in ctx.avals_out]
