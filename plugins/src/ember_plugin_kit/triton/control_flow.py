"""Rules for control flow and nested calls: ``scan`` without xs (``fori_loop`` with static
bounds) and ``while`` become ``scf.for`` / ``scf.while``; ``cond`` (``pl.when``, ``lax.cond``)
becomes ``scf.if``; calls (a nested jit, custom_jvp/custom_vjp, remat) are lowered inline.

Refs a loop body or branch closes over are passed to it as they are (they name memory, not
values); only arrays and scalars are carried through the regions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import INDEX_DTYPE, Value, element_type, tensor_type
from ember_plugin_kit.triton.tensors import convert


def lower_sub(kctx: KernelContext, jaxpr: Any, args: Sequence[Any]) -> list:
    """Lower a ClosedJaxpr or an open Jaxpr inline."""
    if hasattr(jaxpr, "consts"):
        return kctx.lower_closed(jaxpr, args)
    return kctx.lower_jaxpr(jaxpr, [], args)


def _results(name: str, avals: Sequence[Any]) -> list[Value]:
    """The Values of a region op's results, named ``name`` (one) or ``name#i`` (several)."""
    if len(avals) == 1:
        return [Value(name, tuple(avals[0].shape), np.dtype(avals[0].dtype))]
    return [Value(f"{name}#{i}", tuple(a.shape), np.dtype(a.dtype)) for i, a in enumerate(avals)]


def _lhs(name: str, count: int) -> str:
    if count == 0:
        return ""
    return f"{name} = " if count == 1 else f"{name}:{count} = "


def _yield(kctx: KernelContext, op: str, values: Sequence[Value]) -> None:
    if values:
        names = ", ".join(v.name for v in values)
        kctx.emitter.line(f"{op} {names} : {', '.join(v.type for v in values)}")
    else:
        kctx.emitter.line(op)


def _type_list(avals: Sequence[Any]) -> str:
    return ", ".join(tensor_type(tuple(a.shape), element_type(a.dtype)) for a in avals)


@rule("scan")
def _scan(kctx: KernelContext, eqn, *operands) -> list:
    params = eqn.params
    num_consts, num_carry = params["num_consts"], params["num_carry"]
    if len(operands) != num_consts + num_carry or len(eqn.outvars) != num_carry:
        raise kctx.fail("scan", "a scan over xs or with ys (only fori_loop-style loops)")
    e = kctx.emitter
    consts, init = operands[:num_consts], operands[num_consts:]
    avals = [v.aval for v in eqn.outvars]
    lower_bound = e.constant(0, INDEX_DTYPE)
    upper_bound = e.constant(int(params["length"]), INDEX_DTYPE)
    step = e.constant(1, INDEX_DTYPE)
    result, counter = e.fresh(), e.fresh()
    carried = [Value(e.fresh(), v.shape, v.dtype) for v in init]
    iter_args = ", ".join(f"{c.name} = {v.name}" for c, v in zip(carried, init))
    header = f"scf.for {counter} = {lower_bound.name} to {upper_bound.name} step {step.name}"
    if carried:
        header += f" iter_args({iter_args}) -> ({_type_list(avals)})"
    e.line(f"{_lhs(result, len(carried))}{header} : i32 {{")
    with e.nested():
        outs = lower_sub(kctx, params["jaxpr"], [*consts, *carried])
        _yield(kctx, "scf.yield", outs)
    e.line("}")
    return _results(result, avals)


@rule("while")
def _while(kctx: KernelContext, eqn, *operands) -> list:
    params = eqn.params
    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    cond_consts = operands[:cond_n]
    body_consts = operands[cond_n : cond_n + body_n]
    init = operands[cond_n + body_n :]
    e = kctx.emitter
    avals = [v.aval for v in eqn.outvars]
    types = _type_list(avals)
    result = e.fresh()
    before = [Value(e.fresh(), v.shape, v.dtype) for v in init]
    inits = ", ".join(f"{b.name} = {v.name}" for b, v in zip(before, init))
    e.line(f"{_lhs(result, len(init))}scf.while ({inits}) : ({types}) -> ({types}) {{")
    with e.nested():
        (pred,) = lower_sub(kctx, params["cond_jaxpr"], [*cond_consts, *before])
        names = ", ".join(b.name for b in before)
        e.line(f"scf.condition({pred.name}) {names} : {types}")
    e.line("} do {")
    after = [Value(e.fresh(), v.shape, v.dtype) for v in init]
    e.line("^bb0(" + ", ".join(f"{a.name}: {a.type}" for a in after) + "):")
    with e.nested():
        outs = lower_sub(kctx, params["body_jaxpr"], [*body_consts, *after])
        _yield(kctx, "scf.yield", outs)
    e.line("}")
    return _results(result, avals)


def _branches(kctx: KernelContext, index: Value, branches, first: int, args, avals) -> list:
    """``branches[index - first]`` applied to ``args``: one ``scf.if`` per branch but the
    last, which takes every index past the others (as ``lax.cond`` clamps)."""
    if len(branches) == 1:
        return lower_sub(kctx, branches[0], args)
    e = kctx.emitter
    number = e.constant(first, index.dtype)
    is_first = e.op(f"arith.cmpi eq, {index.name}, {number.name} : {index.type}", (), np.bool_)
    result = e.fresh()
    results = f" -> ({_type_list(avals)})" if avals else ""
    e.line(f"{_lhs(result, len(avals))}scf.if {is_first.name}{results} {{")
    with e.nested():
        _yield(kctx, "scf.yield", lower_sub(kctx, branches[0], args))
    e.line("} else {")
    with e.nested():
        rest = _branches(kctx, index, branches[1:], first + 1, args, avals)
        _yield(kctx, "scf.yield", rest)
    e.line("}")
    return _results(result, avals) if avals else []


@rule("cond")
def _cond(kctx: KernelContext, eqn, index: Value, *args) -> list:
    branches = eqn.params["branches"]
    avals = [v.aval for v in eqn.outvars]
    index = convert(kctx.emitter, index, INDEX_DTYPE)
    return _branches(kctx, index, list(branches), 0, args, avals)


_CALL_JAXPR_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


@rule(
    "jit",
    "pjit",
    "closed_call",
    "core_call",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
    "remat",
    "checkpoint",
)
def _call(kctx: KernelContext, eqn, *args) -> list:
    for param in _CALL_JAXPR_PARAMS:
        if param in eqn.params:
            return lower_sub(kctx, eqn.params[param], args)
    raise kctx.fail(eqn.primitive.name, "a call without a jaxpr parameter")
