"""Automatic differentiation: forward mode (JVP), linearisation and transposition.

Reverse mode is built as JAX builds it: ``linearize`` runs the JVP under partial evaluation,
so the primal computation runs (or is staged by an enclosing jit) while the tangent
computation is recorded as a *linear* jaxpr; ``backward_pass`` then transposes that jaxpr,
equation by equation in reverse, with each primitive's transpose rule. Symbolic ``Zero``
tangents and cotangents flow through both phases so unused derivatives cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember._src import dtypes, rules
from ember._src.core import (
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    Zero,
    current_trace,
    get_aval,
    set_current_trace,
    tangent_aval,
)
from ember._src.interpreters.ad_util import add_tangents, instantiate
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import PartialEvalTrace
from ember._src.ir import ClosedJaxpr, Jaxpr, Literal, Var

# --------------------------------------------------------------------------------------------
# Forward mode


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self.primal)


class JVPTrace(Trace):
    __slots__ = ()

    def __repr__(self) -> str:
        return "JVPTrace"

    def describe(self) -> str:
        return "differentiation (grad, jvp or a jacobian)"

    def unpack(self, x: Any) -> tuple[Any, Any]:
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, Zero(tangent_aval(get_aval(x)))

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        primals, tangents = [], []
        any_tangent = False
        for x in args:
            if isinstance(x, JVPTracer) and x._trace is self:
                primals.append(x.primal)
                tangents.append(x.tangent)
                any_tangent = any_tangent or type(x.tangent) is not Zero
            else:
                primals.append(x)
                tangents.append(None)
        with set_current_trace(self.parent):
            if not any_tangent:
                return primitive.bind(*primals, **params)
            tangents = [
                Zero(tangent_aval(get_aval(p))) if t is None else t
                for p, t in zip(primals, tangents)
            ]
            primal_out, tangent_out = rules.jvp_rule(primitive)(primals, tangents, **params)
        if primitive.multiple_results:
            return [self.wrap(p, t) for p, t in zip(primal_out, tangent_out)]
        return self.wrap(primal_out, tangent_out)

    def wrap(self, primal: Any, tangent: Any) -> Any:
        if type(tangent) is Zero:
            return primal
        return JVPTracer(self, primal, tangent)


def jvp_flat(
    fun: Callable[..., Sequence[Any]], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[list[Any], list[Any]]:
    """Run ``fun`` on primals with tangents; return (primal outputs, tangent outputs).

    Tangents may be symbolic ``Zero``s; output tangents are ``Zero`` where they don't depend
    on any input tangent.
    """
    trace = JVPTrace(current_trace())
    args = [trace.wrap(p, t) for p, t in zip(primals, tangents)]
    with set_current_trace(trace):
        outs = fun(*args)
    unpacked = [trace.unpack(x) for x in outs]
    return [p for p, _ in unpacked], [t for _, t in unpacked]


# --------------------------------------------------------------------------------------------
# Linearisation


class LinearFunction:
    """The linear map produced by ``linearize``: a jaxpr over tangents plus its residuals."""

    def __init__(
        self,
        jaxpr: ClosedJaxpr,
        in_avals: Sequence[ShapedArray],
        out_avals: Sequence[ShapedArray],
        out_zero: list[bool],
    ):
        self.jaxpr = jaxpr
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self.out_zero = out_zero

    def __call__(self, *tangents: Any) -> list[Any]:
        outs = iter(eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *tangents))
        return [
            Zero(tangent_aval(aval)) if zero else next(outs)
            for zero, aval in zip(self.out_zero, self.out_avals)
        ]

    def transpose(
        self, cotangents: Sequence[Any], residuals: Sequence[Any] | None = None
    ) -> list[Any]:
        """The VJP: cotangents of the outputs to cotangents of the inputs. ``residuals``
        replace the jaxpr's constants (the same values, passed through a trace)."""
        live = [ct for ct, zero in zip(cotangents, self.out_zero) if not zero]
        args = [UndefinedPrimal(aval) for aval in self.in_avals]
        consts = self.jaxpr.consts if residuals is None else residuals
        return backward_pass(self.jaxpr.jaxpr, consts, args, live)


def linearize_flat(
    fun: Callable[..., Sequence[Any]], primals: Sequence[Any]
) -> tuple[list[Any], LinearFunction]:
    """Evaluate ``fun`` at ``primals`` and record its JVP as a linear jaxpr over tangents."""
    pe_trace = PartialEvalTrace(current_trace(), "linearize")
    tangent_avals = [tangent_aval(get_aval(p)) for p in primals]
    tangents_in = [pe_trace.new_arg(aval) for aval in tangent_avals]
    # An integer input (grad with allow_int) keeps its float0 input slot but carries a
    # symbolic zero: nothing may compute with, or materialise, a float0 tangent.
    tangents_in = [
        Zero(aval) if aval.dtype == dtypes.float0 else t
        for t, aval in zip(tangents_in, tangent_avals)
    ]
    jvp_trace = JVPTrace(pe_trace)
    args = [jvp_trace.wrap(p, t) for p, t in zip(primals, tangents_in)]
    with set_current_trace(jvp_trace):
        outs = fun(*args)
    unpacked = [jvp_trace.unpack(x) for x in outs]
    primals_out = [p for p, _ in unpacked]
    tangents_out = [t for _, t in unpacked]
    out_zero = [type(t) is Zero for t in tangents_out]
    live = [t for t in tangents_out if type(t) is not Zero]
    linear = pe_trace.to_jaxpr(live, debug_info="linearize")
    out_avals = [tangent_aval(get_aval(p)) for p in primals_out]
    return primals_out, LinearFunction(linear, tangent_avals, out_avals, out_zero)


# --------------------------------------------------------------------------------------------
# Transposition


class UndefinedPrimal:
    """Stands for a linear input of an equation being transposed."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def backward_pass(
    jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], cotangents: Sequence[Any]
) -> list[Any]:
    """Transpose ``jaxpr`` with respect to its linear inputs.

    ``args`` holds an ``UndefinedPrimal`` for each linear input and the value of each other
    (non-linear) input; constvars are non-linear too. Returns one cotangent per invar:
    ``Zero`` for linear inputs no cotangent reaches, ``None`` for non-linear ones.
    """
    linear: set[int] = {id(v) for v, a in zip(jaxpr.invars, args) if is_undefined(a)}
    primal_env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    primal_env.update((v, a) for v, a in zip(jaxpr.invars, args) if not is_undefined(a))
    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(type(v) is Var and id(v) in linear for v in eqn.invars):
            linear_eqns.append(eqn)
            linear.update(id(v) for v in eqn.outvars)
        else:
            # Non-linear work on residuals only (e.g. a transpose of a residual): run forward.
            invals = [v.val if type(v) is Literal else primal_env[v] for v in eqn.invars]
            outs = eqn.primitive.bind(*invals, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            primal_env.update(zip(eqn.outvars, outs))

    ct_env: dict[Var, Any] = {}

    def accumulate(var: Any, ct: Any) -> None:
        if type(var) is not Var or ct is None or type(ct) is Zero:
            return
        if id(var) not in linear:
            return
        ct_env[var] = add_tangents(ct_env[var], ct) if var in ct_env else ct

    for var, ct in zip(jaxpr.outvars, cotangents):
        accumulate(var, ct)

    for eqn in reversed(linear_eqns):
        cts_out = [ct_env.pop(v, None) for v in eqn.outvars]
        if all(ct is None for ct in cts_out):
            continue
        invals = [
            v.val
            if type(v) is Literal
            else UndefinedPrimal(v.aval)
            if id(v) in linear
            else primal_env[v]
            for v in eqn.invars
        ]
        if eqn.primitive.multiple_results:
            ct_arg = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts_out)]
        else:
            ct_arg = cts_out[0]
        cts_in = rules.transpose_rule(eqn.primitive)(ct_arg, *invals, **eqn.params)
        for var, ct in zip(eqn.invars, cts_in):
            accumulate(var, ct)

    return [
        ct_env.get(v, Zero(v.aval)) if is_undefined(a) else None for v, a in zip(jaxpr.invars, args)
    ]


def instantiate_all(values: Sequence[Any]) -> list[Any]:
    return [instantiate(v) for v in values]
