"""Scratch Refs (``scratch_shapes``, ``pl.run_scoped``) kept in registers.

Triton has no memory a program owns besides its registers, so a scratch Ref is lowered to a
value: a ``RegisterRef`` holds the SSA value the Ref contains now, a write replaces it and a
read returns it. Besides the whole Ref (``ref[...]``, ``ref[...] = v``, ``ref[...] += v``: an
accumulator, the common use), integer indices work, static or traced (``ref[i]``,
``ref[:, i] = v``): a write is a select where the index matches, a read at a traced index a
select and a max along the dimension; reads also take the power-of-two slices of
``slicing``. Other parts of a register tensor cannot be addressed and are refused. Loops and
branches that write a scratch Ref carry its value through their regions (see
``control_flow``). The Ref starts as zeros (Pallas leaves it uninitialised).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember_plugin_kit.triton import indexing
from ember_plugin_kit.triton.arithmetic import select
from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Value, is_float
from ember_plugin_kit.triton.indexing import SliceEntry
from ember_plugin_kit.triton.slicing import at_index, pick, slice_dimension, take
from ember_plugin_kit.triton.tensors import broadcast_to, check_power_of_two, convert, expand_dims

# Triton's largest tensor (TRITON_MAX_TENSOR_NUMEL): a bigger scratch cannot be one value.
MAX_SCRATCH_ELEMENTS = 2**20


@dataclass(eq=False)  # compared by identity: two scratch Refs of one shape are different Refs
class RegisterRef:
    """A scratch Ref of the kernel: its current value."""

    value: Value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype


def new_scratch(kctx: KernelContext, aval: Any, what: str) -> RegisterRef:
    """A fresh scratch Ref of ``aval`` (a Ref's aval: its shape and dtype), zero-filled."""
    shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
    if math.prod(shape) > MAX_SCRATCH_ELEMENTS:
        raise NotImplementedError(
            f"Pallas kernel {kctx.name!r}: {what} of shape {shape} has more than "
            f"{MAX_SCRATCH_ELEMENTS} elements; the Triton lowering keeps scratch in registers, "
            "which hold at most that many; use interpret=True"
        )
    check_power_of_two(shape, what)
    return RegisterRef(kctx.emitter.constant(0, dtype, shape))


def register_refs(operands: Sequence[Any]) -> list[RegisterRef]:
    """The distinct scratch Refs among ``operands``, in order of first appearance."""
    found: list[RegisterRef] = []
    for x in operands:
        if isinstance(x, RegisterRef) and all(x is not r for r in found):
            found.append(x)
    return found


def substitute(operands: Sequence[Any], refs: Sequence[RegisterRef], inner: Sequence[Any]):
    """``operands`` with each of ``refs`` replaced by its counterpart in ``inner``."""
    return [next((n for r, n in zip(refs, inner) if r is x), x) for x in operands]


def _entries(kctx: KernelContext, eqn, ref: RegisterRef, dynamic: Sequence[Any]) -> list:
    entries = indexing.entries(eqn.params["indexer"], dynamic, ref.shape)
    for entry in entries:
        if isinstance(entry, Value) and entry.shape:
            raise kctx.fail(eqn.primitive.name, _WHY + "; not integer-array indices")
        if isinstance(entry, SliceEntry) and isinstance(entry.start, Value):
            raise kctx.fail(eqn.primitive.name, _WHY + "; not slices with a traced start")
    return entries


_WHY = (
    "a scratch Ref is kept in registers by the Triton lowering, which reads and writes it "
    "whole (ref[...]), at integer indices, or (reads only) in power-of-two slices"
)


def _is_whole(entry: Any, size: int) -> bool:
    return isinstance(entry, SliceEntry) and (entry.start, entry.size, entry.stride) == (
        0,
        size,
        1,
    )


def _read(kctx: KernelContext, primitive: str, ref: RegisterRef, entries: list) -> Value:
    e = kctx.emitter
    x = ref.value
    # From the last dimension back, so that the earlier ones keep their axis numbers.
    for axis in reversed(range(len(entries))):
        entry = entries[axis]
        if isinstance(entry, SliceEntry):
            sliced = slice_dimension(e, x, axis, entry.start, entry.size, entry.stride)
            if sliced is None:
                raise kctx.fail(primitive, _WHY + f"; not {entry.size} elements from {entry.start}")
            x = sliced
        elif isinstance(entry, Value):
            x = take(kctx, x, axis, entry)
        elif 0 <= int(entry) < x.shape[axis]:
            x = pick(e, x, axis, int(entry))
        else:
            raise IndexError(f"index {entry} of a scratch Ref's dimension of size {x.shape[axis]}")
    return x


def _write(kctx: KernelContext, primitive: str, ref: RegisterRef, entries: list, value: Value):
    """Replace ``ref[entries]`` by ``value``: the whole Ref, or where the integer indices
    point (a select, the value broadcast along the indexed dimensions)."""
    e = kctx.emitter
    hit = None
    for axis, entry in enumerate(entries):
        if isinstance(entry, SliceEntry):
            if not _is_whole(entry, ref.shape[axis]):
                raise kctx.fail(primitive, _WHY + "; not a part of a dimension")
        else:
            at = at_index(kctx, axis, ref.shape, entry)
            hit = at if hit is None else _and(kctx, hit, at)
    value = convert(e, value, ref.dtype)
    kept = [axis for axis, entry in enumerate(entries) if isinstance(entry, SliceEntry)]
    value = broadcast_to(e, value, tuple(ref.shape[axis] for axis in kept))
    for axis, entry in enumerate(entries):
        if not isinstance(entry, SliceEntry) and ref.shape:
            value = expand_dims(e, value, axis) if value.shape else value
    value = broadcast_to(e, value, ref.shape)
    if hit is None:
        ref.value = value
    else:
        ref.value = select(kctx, broadcast_to(e, hit, ref.shape), value, ref.value)


def _and(kctx: KernelContext, x: Value, y: Value) -> Value:
    shape = tuple(np.broadcast_shapes(x.shape, y.shape))
    e = kctx.emitter
    x, y = broadcast_to(e, x, shape), broadcast_to(e, y, shape)
    return e.op(f"arith.andi {x.name}, {y.name} : {x.type}", shape, np.bool_)


def read(kctx: KernelContext, eqn, ref: RegisterRef, dynamic: Sequence[Any]) -> list:
    return [_read(kctx, "get", ref, _entries(kctx, eqn, ref, dynamic))]


def write(kctx: KernelContext, eqn, ref: RegisterRef, value: Value, dynamic) -> list:
    entries = _entries(kctx, eqn, ref, dynamic)
    old = _read(kctx, "swap", ref, entries)  # Triton drops it when unused
    _write(kctx, "swap", ref, entries, value)
    return [old]


def accumulate(kctx: KernelContext, eqn, ref: RegisterRef, value: Value, dynamic) -> list:
    e = kctx.emitter
    entries = _entries(kctx, eqn, ref, dynamic)
    old = _read(kctx, "addupdate", ref, entries)
    value = broadcast_to(e, convert(e, value, ref.dtype), old.shape)
    add = "arith.addf" if is_float(ref.dtype) else "arith.addi"
    total = e.op(f"{add} {old.name}, {value.name} : {old.type}", old.shape, old.dtype)
    _write(kctx, "addupdate", ref, entries, total)
    return []


@rule("run_scoped")
def _run_scoped(kctx: KernelContext, eqn, *operands) -> list:
    body = eqn.params["jaxpr"]
    avals = body.in_avals[: len(body.in_avals) - len(operands)]
    scratch = [new_scratch(kctx, a, "a run_scoped scratch Ref") for a in avals]
    return kctx.lower_closed(body, [*scratch, *operands])
