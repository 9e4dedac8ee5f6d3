"""Rules that touch memory or the grid: Ref reads and writes (plain and masked), atomics,
``program_id`` and ``num_programs``.

Every access goes through ``refs.addresses``, which also masks the part of a block that hangs
over the array's edge; a user's mask is combined with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember_plugin_kit.triton import indexing, scratch
from ember_plugin_kit.triton.arithmetic import kind_index
from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import INDEX_DTYPE, Value, is_float
from ember_plugin_kit.triton.refs import Addresses, RefBlock, addresses
from ember_plugin_kit.triton.scratch import RegisterRef
from ember_plugin_kit.triton.tensors import broadcast_to, convert

_BYTE = np.dtype(np.int8)  # a bool in memory


def _combine_masks(kctx: KernelContext, bounds: Value | None, user: Value | None, shape):
    e = kctx.emitter
    if user is not None:
        user = broadcast_to(e, convert(e, user, np.bool_), shape)
    if bounds is None or user is None:
        return bounds if user is None else user
    return e.op(f"arith.andi {bounds.name}, {user.name} : {bounds.type}", shape, np.bool_)


def load(kctx: KernelContext, at: Addresses, mask: Value | None = None, other=None) -> Value:
    """The values at ``at`` (zeros, or ``other``, where masked off)."""
    e = kctx.emitter
    dtype = at.pointers.dtype
    stored = _BYTE if dtype == np.bool_ else dtype  # what the pointers point to
    mask = _combine_masks(kctx, at.mask, mask, at.shape)
    operands = at.pointers.name
    if mask is not None:
        if other is None:
            other = e.constant(0, stored, at.shape)
        else:
            other = broadcast_to(e, convert(e, convert(e, other, dtype), stored), at.shape)
        operands += f", {mask.name}, {other.name}"
    loaded = e.op(f"tt.load {operands} : {at.pointers.type}", at.shape, stored)
    return convert(e, loaded, np.bool_) if dtype == np.bool_ else loaded


def store(kctx: KernelContext, at: Addresses, value: Value, mask: Value | None = None) -> None:
    e = kctx.emitter
    dtype = at.pointers.dtype
    value = broadcast_to(e, convert(e, value, dtype), at.shape)
    if dtype == np.bool_:
        value = convert(e, value, _BYTE)
    mask = _combine_masks(kctx, at.mask, mask, at.shape)
    masked = f", {mask.name}" if mask is not None else ""
    e.line(f"tt.store {at.pointers.name}, {value.name}{masked} : {at.pointers.type}")


def _at(kctx: KernelContext, eqn, ref: RefBlock, dynamic) -> Addresses:
    if isinstance(ref, RegisterRef):
        raise kctx.fail(
            eqn.primitive.name,
            "a scratch Ref: the Triton lowering keeps scratch in registers, which take only "
            "whole-Ref reads and writes (ref[...]), not masked or atomic accesses",
        )
    entries = indexing.entries(eqn.params["indexer"], dynamic, ref.shape)
    return addresses(kctx.emitter, ref, entries)


@rule("get")
def _get(kctx: KernelContext, eqn, ref: RefBlock, *dynamic) -> list:
    if isinstance(ref, RegisterRef):
        return scratch.read(kctx, eqn, ref, dynamic)
    return [load(kctx, _at(kctx, eqn, ref, dynamic))]


@rule("swap")
def _swap(kctx: KernelContext, eqn, ref: RefBlock, value: Value, *dynamic) -> list:
    if isinstance(ref, RegisterRef):
        return scratch.write(kctx, eqn, ref, value, dynamic)
    at = _at(kctx, eqn, ref, dynamic)
    old = load(kctx, at)  # Triton drops the load when the old value is unused
    store(kctx, at, value)
    return [old]


@rule("addupdate")
def _addupdate(kctx: KernelContext, eqn, ref: RefBlock, value: Value, *dynamic) -> list:
    if isinstance(ref, RegisterRef):
        return scratch.accumulate(kctx, eqn, ref, value, dynamic)
    e = kctx.emitter
    at = _at(kctx, eqn, ref, dynamic)
    old = load(kctx, at)
    value = broadcast_to(e, convert(e, value, old.dtype), at.shape)
    add = "arith.addf" if is_float(old.dtype) else "arith.addi"
    store(kctx, at, e.op(f"{add} {old.name}, {value.name} : {old.type}", at.shape, old.dtype))
    return []


@rule("masked_load")
def _masked_load(kctx: KernelContext, eqn, *operands) -> list:
    access = indexing.masked_operands("masked_load", eqn.params, operands)
    at = _at(kctx, eqn, access.ref, access.dynamic)
    return [load(kctx, at, access.mask, access.other)]


@rule("masked_swap")
def _masked_swap(kctx: KernelContext, eqn, *operands) -> list:
    access = indexing.masked_operands("masked_swap", eqn.params, operands)
    at = _at(kctx, eqn, access.ref, access.dynamic)
    old = load(kctx, at, access.mask)
    store(kctx, at, access.value, access.mask)
    return [old]


# atomic_type -> (op on floats, on signed integers, on unsigned integers)
_ATOMICS = {
    "add": ("fadd", "add", "add"),
    "max": (None, "max", "umax"),
    "min": (None, "min", "umin"),
    "and": (None, "and", "and"),
    "or": (None, "or", "or"),
    "xor": (None, "xor", "xor"),
    "xchg": ("exch", "exch", "exch"),
}


@rule("atomic_rmw")
def _atomic_rmw(kctx: KernelContext, eqn, *operands) -> list:
    access = indexing.masked_operands("atomic_rmw", eqn.params, operands)
    at = _at(kctx, eqn, access.ref, access.dynamic)
    value, mask = access.value, access.mask
    atomic_type = str(eqn.params["atomic_type"]).lower().rsplit(".", 1)[-1]
    dtype = at.pointers.dtype
    op = _ATOMICS.get(atomic_type, (None,) * 3)[kind_index(dtype)]
    if op is None:
        raise kctx.fail("atomic_rmw", f"atomic {atomic_type} of {dtype}")
    e = kctx.emitter
    value = broadcast_to(e, convert(e, value, dtype), at.shape)
    mask = _combine_masks(kctx, at.mask, mask, at.shape)
    if mask is None:
        mask = e.constant(True, np.bool_, at.shape)
    text = (
        f"tt.atomic_rmw {op}, acq_rel, gpu, {at.pointers.name}, {value.name}, {mask.name} : "
        f"({at.pointers.type}, {value.type}, {mask.type}) -> {value.type}"
    )
    return [e.op(text, at.shape, dtype)]


@rule("atomic_cas")
def _atomic_cas(kctx: KernelContext, eqn, ref: RefBlock, cmp: Value, value: Value, *dynamic):
    at = _at(kctx, eqn, ref, dynamic)
    e = kctx.emitter
    dtype = at.pointers.dtype
    cmp = broadcast_to(e, convert(e, cmp, dtype), at.shape)
    value = broadcast_to(e, convert(e, value, dtype), at.shape)
    text = (
        f"tt.atomic_cas acq_rel, gpu, {at.pointers.name}, {cmp.name}, {value.name} : "
        f"({at.pointers.type}, {cmp.type}, {value.type}) -> {value.type}"
    )
    return [e.op(text, at.shape, dtype)]


def _grid_axis(kctx: KernelContext, primitive: str, axis: int) -> int:
    if not 0 <= axis < len(kctx.grid):
        raise kctx.fail(primitive, f"axis {axis} of a grid of rank {len(kctx.grid)}")
    return axis


@rule("program_id")
def _program_id(kctx: KernelContext, eqn) -> list:
    return [kctx.program_ids[_grid_axis(kctx, "program_id", eqn.params["axis"])]]


@rule("num_programs")
def _num_programs(kctx: KernelContext, eqn) -> list:
    axis = _grid_axis(kctx, "num_programs", eqn.params["axis"])
    return [kctx.emitter.constant(kctx.grid[axis], INDEX_DTYPE)]


@rule("multiple_of", "max_contiguous")
def _hint(kctx: KernelContext, eqn, x: Any) -> list:
    # Alignment hints: the values are unchanged, and Triton infers most of them itself.
    return [x]
