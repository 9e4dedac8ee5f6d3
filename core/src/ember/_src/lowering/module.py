"""Lowering whole jaxprs: equation by equation into a StableHLO ``@main`` function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import errors, rules
from ember._src.core import ShapedArray
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, check_result_sizes
from ember._src.lowering.mlir import (
    TOKEN,
    FunctionEmitter,
    ModuleContext,
    RuleContext,
    location,
    sdy_mesh_declaration,
    tensor_type,
)

LoweringError = errors.LoweringError  # defined with the other public errors


def lower_jaxpr_inline(
    ctx: RuleContext, jaxpr: Jaxpr, consts: Sequence[str], args: Sequence[str]
) -> list[str]:
    """Emit the equations of ``jaxpr`` into the current function; return its outputs' names.

    ``consts`` and ``args`` are SSA names for the jaxpr's constvars and invars.
    """
    env: dict[object, str] = {}
    for var, name in zip(jaxpr.constvars, consts):
        env[var] = name
    for var, name in zip(jaxpr.invars, args):
        env[var] = name

    def read(atom) -> str:
        if type(atom) is Literal:
            return ctx.constant(atom.val, atom.aval)
        return env[atom]

    platform = ctx.platform
    typed_mesh = ctx.module.mesh is not None
    rule_cache: dict = {}
    saved_in, saved_out = ctx.avals_in, ctx.avals_out
    saved_loc, saved_scope, caller = ctx.loc, ctx.scope, ctx.caller
    # This jaxpr's equations are named under the equation that lowers it inline, if any.
    scope = saved_scope if caller is None else f"{saved_scope}{_call_label(caller)}/"
    try:
        for eqn in jaxpr.eqns:
            primitive = eqn.primitive
            rule = rule_cache.get(primitive)
            if rule is None:
                rule = rule_cache[primitive] = rules.lowering_rule(primitive, platform)
            info = eqn.source_info
            name_stack = info.name_stack if info is not None else ""
            eqn_scope = f"{scope}{name_stack}/" if name_stack else scope
            ctx.loc = location(eqn_scope + primitive.name, info)
            ctx.scope, ctx.caller = eqn_scope, eqn
            ctx.avals_in = [v.aval for v in eqn.invars]
            ctx.avals_out = [v.aval for v in eqn.outvars]
            check_result_sizes(eqn)
            operands = [read(v) for v in eqn.invars]
            try:
                outs = rule(ctx, *operands, **eqn.params)
            except (LoweringError, errors.ExportError):
                raise  # (an exported program called where it cannot run says so itself)
            except Exception as err:
                where = f" (from {eqn.source_info})" if eqn.source_info else ""
                raise LoweringError(
                    f"lowering {primitive.name} for platform {platform!r} failed{where}: {err}"
                ) from err
            if not primitive.multiple_results:
                outs = [outs]
            if typed_mesh:
                outs = [pin_typed(ctx, x, v.aval) for x, v in zip(outs, eqn.outvars)]
            env.update(zip(eqn.outvars, outs))
        return [read(v) for v in jaxpr.outvars]
    finally:
        ctx.avals_in, ctx.avals_out = saved_in, saved_out
        ctx.loc, ctx.scope, ctx.caller = saved_loc, saved_scope, caller


def _call_label(eqn: Eqn) -> str:
    """How an equation names the scope of the jaxpr it calls: ``jit(g)`` for a call of a
    jitted ``g``, else the primitive (``scan``, ``while``, ``cond``)."""
    name = eqn.params.get("name")
    primitive = eqn.primitive.name
    return f"{primitive}({name})" if isinstance(name, str) else primitive


class ThreadedTokens:
    """The tokens of the ordered effects inside a region op (a loop, the branches of a cond),
    carried in and out of it so that the effects keep program order with those around it.

    A rule adds ``avals`` to the op's region arguments and results and ``outer`` to its
    operands; inside each region it calls ``enter`` with the region's token arguments and
    yields ``current``; after the op, ``leave`` with the op's token results. With no ordered
    effects inside, all of these are empty and change nothing.
    """

    def __init__(self, ctx: RuleContext, *jaxprs: ClosedJaxpr | Jaxpr):
        effects = set()
        for jaxpr in jaxprs:
            effects.update(e for e in jaxpr.effects if e.ordered)
        self.effects = sorted(effects, key=lambda e: e.name)
        self.avals = [TOKEN] * len(self.effects)
        self.outer = self.current(ctx)

    def current(self, ctx: RuleContext) -> list[str]:
        return [ctx.module.tokens[e] for e in self.effects]

    def enter(self, ctx: RuleContext, tokens: Sequence[str]) -> None:
        ctx.module.tokens.update(zip(self.effects, tokens))

    leave = enter


def pin_typed(ctx: RuleContext, x: str, aval: ShapedArray) -> str:
    """``x`` constrained to its typed sharding, if it has one: under Explicit mesh axes the
    partitioner lays every value out exactly as its type says."""
    typed = aval.typed_sharding
    if typed is None:
        return x
    mesh = ctx.module.mesh
    if typed.mesh.shape_tuple != mesh.shape_tuple:
        raise LoweringError(
            f"a value typed {aval.str_short()} over {typed.mesh!r} is used in a computation "
            f"over {mesh!r}; one computation runs on one mesh"
        )
    return ctx.op("sdy.sharding_constraint", [x], aval, {"sharding": typed.sdy_sharding(aval.ndim)})


def lower_module(
    closed: ClosedJaxpr,
    *,
    platform: str,
    name: str,
    donated_invars: Sequence[bool] = (),
    num_partitions: int = 1,
    arg_attrs: Sequence[str | None] = (),
    result_attrs: Sequence[str | None] = (),
    mesh: Any = None,
    collectives: Any = None,
    host_callbacks: list | None = None,
    effect_tokens: bool = False,
) -> str:
    """The StableHLO module text of ``closed``, whose consts are inlined as constants.

    Large constants should be hoisted into arguments by the caller (jit does this), since
    every inline constant is compiled into the executable. The Python functions the program
    calls back into are appended to ``host_callbacks``. With ``effect_tokens``, ``@main``
    takes and returns one token per ordered effect (``closed.jaxpr.ordered_effects``' order)
    before its arrays, so that a caller chains them from one call to the next; otherwise the
    tokens start inside the program.
    """
    module = ModuleContext(platform, name, mesh, collectives, host_callbacks)
    fn = FunctionEmitter()
    ctx = RuleContext(module, fn)
    jaxpr = closed.jaxpr
    donated = list(donated_invars) or [False] * len(jaxpr.invars)
    extra_arg = list(arg_attrs) or [None] * len(jaxpr.invars)

    params = []
    arg_names = []
    ordered = jaxpr.ordered_effects
    for i, effect in enumerate(ordered):
        if effect_tokens:
            token = f"%token{i}"
            fn.types[token] = tensor_type(TOKEN)
            params.append(f"{token}: !stablehlo.token")
        else:
            token = ctx.op("stablehlo.after_all", [], [TOKEN])[0]
        module.tokens[effect] = token
    for i, var in enumerate(jaxpr.invars):
        arg = f"%arg{i}"
        fn.types[arg] = tensor_type(var.aval)
        attrs = []
        if donated[i]:
            attrs.append("jax.buffer_donor = true")
        if extra_arg[i]:
            attrs.append(extra_arg[i])
        attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
        params.append(f"{arg}: {fn.types[arg]}{attr_text}")
        arg_names.append(arg)

    const_names = [
        ctx.constant(value, var.aval) for var, value in zip(jaxpr.constvars, closed.consts)
    ]
    outs = lower_jaxpr_inline(ctx, jaxpr, const_names, arg_names)
    extra_res = list(result_attrs) or [None] * len(outs)
    if effect_tokens and ordered:
        outs = [module.tokens[e] for e in ordered] + outs
        extra_res = [None] * len(ordered) + extra_res

    out_types = [fn.types[o] for o in outs]
    results = ", ".join(
        t + (f" {{{attr}}}" if attr else "") for t, attr in zip(out_types, extra_res)
    )
    ret = f"    return {', '.join(outs)} : {', '.join(out_types)}" if outs else "    return"
    body = "\n".join(fn.lines)
    functions = "\n".join(module.extra_functions)
    declarations = sdy_mesh_declaration(mesh) if mesh is not None else ""
    declarations += "".join(f"  {d}\n" for d in module.declarations.values())
    return (
        f"module @{module.name} attributes {{mhlo.num_partitions = {num_partitions} : i32, "
        f"mhlo.num_replicas = 1 : i32}} {{\n{declarations}"
        f"  func.func public @main({', '.join(params)}) -> ({results}) {{\n"
        f"{body}\n{ret}\n  }}\n{functions}}}\n"
    )
