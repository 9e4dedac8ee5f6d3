"""Vectorisation (vmap): run a function on a batch by tracking where the batch axis lives.

A ``BatchTracer`` holds a value with one extra axis, at position ``batch_dim``. Each
primitive's batching rule receives the values and their batch dims (``None`` for operands
that are not batched) and returns the result and the result's batch dim, so no data moves
unless a rule needs it to.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors, rules
from ember._src.core import (
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    current_trace,
    extend_axis_env,
    get_aval,
    set_current_trace,
)

not_mapped = None

# The (axis_name, axis_size) of the vmap whose batching rule is running, so that jaxprs the
# rule batches again (call and control-flow bodies) see the same named axis.
_active_axis: contextvars.ContextVar[tuple[Any, int | None]] = contextvars.ContextVar(
    "ember_active_batch_axis", default=(None, None)
)


def drop_dim(typed: Any, dim: int) -> Any:
    """A typed sharding without dimension ``dim``'s entry (None when nothing stays split)."""
    if typed is None:
        return None
    entries = list(typed.spec) + [None] * (dim + 1 - len(typed.spec))
    del entries[dim]
    if all(e is None for e in entries):
        return None
    return type(typed)(typed.mesh, type(typed.spec)(*entries))


def active_axis_name() -> Any:
    """The axis name of the vmap whose batching rule is running (None outside rules)."""
    return _active_axis.get()[0]


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: int):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        aval = get_aval(self.val)
        d = self.batch_dim
        shape = aval.shape[:d] + aval.shape[d + 1 :]
        typed = drop_dim(aval.typed_sharding, d)
        return ShapedArray(shape, aval.dtype, aval.weak_type, typed, aval.vma)


class BatchTrace(Trace):
    __slots__ = ("axis_size", "axis_name")

    def __init__(self, parent: Trace, axis_size: int, axis_name: Any = None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def __repr__(self) -> str:
        name = f", axis_name={self.axis_name!r}" if self.axis_name is not None else ""
        return f"BatchTrace(axis_size={self.axis_size}{name})"

    def describe(self) -> str:
        name = f", axis name {self.axis_name!r}" if self.axis_name is not None else ""
        return f"vmap (axis size {self.axis_size}{name})"

    def unpack(self, x: Any) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        return x, not_mapped

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        vals, dims = [], []
        batched = False
        for x in args:
            if isinstance(x, BatchTracer) and x._trace is self:
                vals.append(x.val)
                dims.append(x.batch_dim)
                batched = True
            else:
                vals.append(x)
                dims.append(not_mapped)
        collective = rules.collective_batch_rule(primitive)
        with set_current_trace(self.parent):
            if collective is not None:  # even unbatched: it may name this vmap's axis
                out, out_dim = collective(self.axis_name, self.axis_size, vals, dims, **params)
            elif not batched:
                return primitive.bind(*vals, **params)
            else:
                token = _active_axis.set((self.axis_name, self.axis_size))
                try:
                    out, out_dim = rules.batch_rule(primitive)(vals, dims, **params)
                finally:
                    _active_axis.reset(token)
        if primitive.multiple_results:
            return [self.wrap(v, d) for v, d in zip(out, out_dim)]
        return self.wrap(out, out_dim)

    def wrap(self, val: Any, batch_dim: int | None) -> Any:
        if batch_dim is not_mapped:
            return val
        return BatchTracer(self, val, batch_dim)


def batch_flat(
    fun: Callable[..., Sequence[Any]],
    args: Sequence[Any],
    in_dims: Sequence[int | None],
    axis_size: int,
    axis_name: Any = None,
) -> tuple[list[Any], list[int | None]]:
    """Run ``fun`` batched; return the raw outputs and where each one's batch axis is."""
    if axis_name is None:
        # Batching a jaxpr inside a batch rule (jit, cond, scan, ...) is the same vmap again.
        axis_name = _active_axis.get()[0]
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    wrapped = []
    for x, d in zip(args, in_dims):
        if d is not_mapped:
            wrapped.append(x)
            continue
        shape = get_aval(x).shape
        if not -len(shape) <= d < len(shape):
            raise ValueError(
                f"vmap in_axes={d} is out of range for an argument of rank {len(shape)}"
                f"{errors.where()}"
            )
        wrapped.append(BatchTracer(trace, x, d % len(shape)))
    if axis_name is None:
        with set_current_trace(trace):
            outs = fun(*wrapped)
    else:
        with set_current_trace(trace), extend_axis_env(axis_name, axis_size):
            outs = fun(*wrapped)
    unpacked = [trace.unpack(x) for x in outs]
    return [v for v, _ in unpacked], [d for _, d in unpacked]
