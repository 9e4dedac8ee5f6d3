"""Scratch Refs (``scratch_shapes``, ``pl.run_scoped``) kept in registers.

Triton has no memory a program owns besides its registers, so a scratch Ref is lowered to a
value: a ``RegisterRef`` holds the SSA value the Ref contains now, a write replaces it and a
read returns it. Only whole-Ref accesses (``ref[...]``, ``ref[...] = v``, ``ref[...] += v``)
are supported: a part of a register tensor cannot be addressed. That suits the common use, an
accumulator. Loops and branches that write a scratch Ref carry its value through their
regions (see ``control_flow``). The Ref starts as zeros (Pallas leaves it uninitialised).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Value, is_float
from ember_plugin_kit.triton.tensors import broadcast_to, check_power_of_two, convert

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


def _check_whole(kctx: KernelContext, primitive: str, ref: RegisterRef, eqn) -> None:
    whole = all(
        entry[0] == "slice" and entry[1] == 0 and entry[2] == size and entry[3] == 1
        for entry, size in zip(eqn.params["indexer"].entries, ref.shape)
    )
    if not whole:
        raise kctx.fail(
            primitive,
            "a part of a scratch Ref: the Triton lowering keeps scratch in registers, where "
            "only the whole Ref (ref[...]) can be read or written",
        )


def read(kctx: KernelContext, eqn, ref: RegisterRef) -> list:
    _check_whole(kctx, "get", ref, eqn)
    return [ref.value]


def write(kctx: KernelContext, eqn, ref: RegisterRef, value: Value) -> list:
    _check_whole(kctx, "swap", ref, eqn)
    e = kctx.emitter
    old = ref.value
    ref.value = broadcast_to(e, convert(e, value, ref.dtype), ref.shape)
    return [old]


def accumulate(kctx: KernelContext, eqn, ref: RegisterRef, value: Value) -> list:
    _check_whole(kctx, "addupdate", ref, eqn)
    e = kctx.emitter
    old = ref.value
    value = broadcast_to(e, convert(e, value, ref.dtype), ref.shape)
    add = "arith.addf" if is_float(ref.dtype) else "arith.addi"
    ref.value = e.op(f"{add} {old.name}, {value.name} : {old.type}", ref.shape, ref.dtype)
    return []


@rule("run_scoped")
def _run_scoped(kctx: KernelContext, eqn, *operands) -> list:
    body = eqn.params["jaxpr"]
    avals = body.in_avals[: len(body.in_avals) - len(operands)]
    scratch = [new_scratch(kctx, a, "a run_scoped scratch Ref") for a in avals]
    return kctx.lower_closed(body, [*scratch, *operands])
