"""Rules for control flow and nested calls: ``scan`` without xs (``fori_loop`` with static
bounds) and ``while`` become ``scf.for`` / ``scf.while``; ``cond`` (``pl.when``, ``lax.cond``)
becomes ``scf.if``; calls (a nested jit, custom_jvp/custom_vjp, remat) are lowered inline.

Refs a loop body or branch closes over are passed to it as they are (they name memory, not
values); only arrays and scalars are carried through the regions, and the values of scratch
Refs (``scratch.RegisterRef``: scratch lives in registers), which a region may write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import INDEX_DTYPE, Value, element_type, tensor_type
from ember_plugin_kit.triton.scratch import RegisterRef, register_refs, substitute
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


def _inner_refs(values: Sequence[Value]) -> list[RegisterRef]:
    """Scratch Refs inside a region, starting from the values carried into it."""
    return [RegisterRef(v) for v in values]


def _set_scratch(scratch: Sequence[RegisterRef], results: list) -> list:
    """Give each scratch Ref its value after a region op (the op's trailing results) and
    return the op's other results."""
    kept = len(results) - len(scratch)
    for ref, value in zip(scratch, results[kept:]):
        ref.value = value
    return results[:kept]


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
    scratch = register_refs(consts)
    init = [*init, *(r.value for r in scratch)]
    avals = [*(v.aval for v in eqn.outvars), *(r.value for r in scratch)]
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
        inner = _inner_refs(carried[num_carry:])
        outs = lower_sub(kctx, params["jaxpr"], [*substitute(consts, scratch, inner), *carried])
        _yield(kctx, "scf.yield", [*outs, *(r.value for r in inner)])
    e.line("}")
    return _set_scratch(scratch, _results(result, avals))


@rule("while")
def _while(kctx: KernelContext, eqn, *operands) -> list:
    params = eqn.params
    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    cond_consts = operands[:cond_n]
    body_consts = operands[cond_n : cond_n + body_n]
    scratch = register_refs([*cond_consts, *body_consts])
    n = len(operands) - cond_n - body_n
    init = [*operands[cond_n + body_n :], *(r.value for r in scratch)]
    e = kctx.emitter
    avals = [*(v.aval for v in eqn.outvars), *(r.value for r in scratch)]
    types = _type_list(avals)
    result = e.fresh()
    before = [Value(e.fresh(), v.shape, v.dtype) for v in init]
    inits = ", ".join(f"{b.name} = {v.name}" for b, v in zip(before, init))
    e.line(f"{_lhs(result, len(init))}scf.while ({inits}) : ({types}) -> ({types}) {{")
    with e.nested():
        refs = _inner_refs(before[n:])
        consts = substitute(cond_consts, scratch, refs)
        (pred,) = lower_sub(kctx, params["cond_jaxpr"], [*consts, *before[:n]])
        names = ", ".join(b.name for b in before)
        e.line(f"scf.condition({pred.name}) {names} : {types}")
    e.line("} do {")
    after = [Value(e.fresh(), v.shape, v.dtype) for v in init]
    e.line("^bb0(" + ", ".join(f"{a.name}: {a.type}" for a in after) + "):")
    with e.nested():
        refs = _inner_refs(after[n:])
        consts = substitute(body_consts, scratch, refs)
        outs = lower_sub(kctx, params["body_jaxpr"], [*consts, *after[:n]])
        _yield(kctx, "scf.yield", [*outs, *(r.value for r in refs)])
    e.line("}")
    return _set_scratch(scratch, _results(result, avals))


def _branches(kctx: KernelContext, index: Value, branches, first: int, lower, avals) -> list:
    """``lower(branches[index - first])``: one ``scf.if`` per branch but the last, which
    takes every index past the others (as ``lax.cond`` clamps)."""
    if len(branches) == 1:
        return lower(branches[0])
    e = kctx.emitter
    number = e.constant(first, index.dtype)
    is_first = e.op(f"arith.cmpi eq, {index.name}, {number.name} : {index.type}", (), np.bool_)
    result = e.fresh()
    results = f" -> ({_type_list(avals)})" if avals else ""
    e.line(f"{_lhs(result, len(avals))}scf.if {is_first.name}{results} {{")
    with e.nested():
        _yield(kctx, "scf.yield", lower(branches[0]))
    e.line("} else {")
    with e.nested():
        rest = _branches(kctx, index, branches[1:], first + 1, lower, avals)
        _yield(kctx, "scf.yield", rest)
    e.line("}")
    return _results(result, avals) if avals else []


@rule("cond")
def _cond(kctx: KernelContext, eqn, index: Value, *args) -> list:
    branches = eqn.params["branches"]
    scratch = register_refs(args)
    avals = [*(v.aval for v in eqn.outvars), *(r.value for r in scratch)]

    def lower(branch) -> list:
        # Each branch starts from the scratch values before the cond and yields its own.
        refs = _inner_refs([r.value for r in scratch])
        outs = lower_sub(kctx, branch, substitute(args, scratch, refs))
        return [*outs, *(r.value for r in refs)]

    index = convert(kctx.emitter, index, INDEX_DTYPE)
    return _set_scratch(scratch, _branches(kctx, index, list(branches), 0, lower, avals))


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
