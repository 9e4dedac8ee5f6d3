"""Staging: tracing Python functions into jaxprs (make_jaxpr, jit).

``StagingTrace`` records every primitive applied to its tracers as an equation. Values from
outside the trace — device arrays, NumPy data, tracers of enclosing transformations — become
*constant variables* of the jaxpr (Python scalars become inline literals), so the caller can
pass them in explicitly when it binds the staged computation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import (
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    Zero,
    current_trace,
    evaluate_eagerly,
    folding_constants,
    get_aval,
    set_current_trace,
)
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ember._src.source_info import current_source_info, reset_name_stack
from ember._src.state_types import is_ref


class StagingTracer(Tracer):
    __slots__ = ("_aval", "var")

    def __init__(self, trace: StagingTrace, aval: ShapedArray, var: Var):
        self._trace = trace
        self._aval = aval
        self.var = var

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def __repr__(self) -> str:
        # As JAX shows a value traced by jit or make_jaxpr: JitTracer(~float32[]) if weak.
        return f"JitTracer({self._aval})"


class StagingTrace(Trace):
    """Records primitives into a jaxpr instead of running them."""

    __slots__ = ("invars", "eqns", "_const_vars", "_consts", "name")

    def __init__(self, parent: Trace | None, name: str = "staging"):
        super().__init__(parent)
        self.invars: list[Var] = []
        self.eqns: list[Eqn] = []
        self._const_vars: dict[int, Var] = {}
        self._consts: list[tuple[Var, Any]] = []
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"

    def describe(self) -> str:
        return f"the tracing of {self.name} (by jit, make_jaxpr or a control-flow function)"

    # -- inputs and atoms ----------------------------------------------------------------------

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return StagingTracer(self, aval, var)

    def to_atom(self, x: Any) -> Var | Literal:
        """The jaxpr atom standing for ``x``: our own variable, a literal, or a constvar."""
        if isinstance(x, StagingTracer) and x._trace is self:
            return x.var
        if type(x) in _PY_SCALARS:
            return Literal(x, get_aval(x))
        if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
            aval = get_aval(x)
            return Literal(np.asarray(x, aval.dtype)[()], aval)
        if isinstance(x, Zero):
            raise TypeError("internal error: a symbolic zero reached staging")
        var = self._const_vars.get(id(x))
        if var is None:
            var = Var(get_aval(x))
            self._const_vars[id(x)] = var
            self._consts.append((var, x))
        return var

    # -- primitives ------------------------------------------------------------------------------

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        if folding_constants() and not any(isinstance(x, Tracer) for x in args):
            return evaluate_eagerly(primitive, args, params)
        atoms = [self.to_atom(x) for x in args]
        avals_in = [a.aval for a in atoms]
        avals_out = rules.abstract_eval(primitive, avals_in, params)
        return self.add_eqn(primitive, atoms, avals_out, params)

    def add_eqn(self, primitive: Primitive, atoms: list, avals_out: Any, params: dict) -> Any:
        if primitive.multiple_results:
            outs = [StagingTracer(self, aval, Var(aval)) for aval in avals_out]
            self.eqns.append(
                Eqn(primitive, atoms, [t.var for t in outs], params, current_source_info())
            )
            return outs
        out = StagingTracer(self, avals_out, Var(avals_out))
        self.eqns.append(Eqn(primitive, atoms, [out.var], params, current_source_info()))
        return out

    # -- the result ------------------------------------------------------------------------------

    def to_jaxpr(self, outputs: Sequence[Any], debug_info: str | None = None) -> ClosedJaxpr:
        outvars = [self.to_atom(x) for x in outputs]
        constvars = [var for var, _ in self._consts]
        consts = [value for _, value in self._consts]
        jaxpr = Jaxpr(constvars, self.invars, outvars, self.eqns, debug_info)
        return ClosedJaxpr(jaxpr, consts)


_PY_SCALARS = (bool, int, float, complex)


def trace_to_jaxpr(
    fun: Callable[..., Sequence[Any]],
    in_avals: Sequence[ShapedArray],
    name: str = "staging",
    trace_type: type[StagingTrace] = StagingTrace,
) -> ClosedJaxpr:
    """Trace ``fun`` (flat arguments in, a flat sequence of outputs out) into a jaxpr.

    Values captured from outside become the jaxpr's constants.
    """
    trace = trace_type(current_trace(), name)
    args = [trace.new_arg(aval) for aval in in_avals]
    with set_current_trace(trace), reset_name_stack():
        outs = fun(*args)
    _check_outputs(outs, name)
    return trace.to_jaxpr(outs, debug_info=name)


def _check_outputs(outs: Any, name: str) -> None:
    if not isinstance(outs, (list, tuple)):
        raise TypeError(f"internal error: traced function {name} must return a list of outputs")
    for x in outs:
        if isinstance(x, Tracer) and is_ref(x.aval):
            raise errors.EmberTypeError(
                f"{name} returned a Ref ({x.aval.str_short()}); a Ref lives only inside the "
                f"function that has it: return its value (x_ref[...]) instead{errors.where()}"
            )
        if not (isinstance(x, Tracer) or type(x) in _PY_SCALARS or hasattr(x, "dtype")):
            raise errors.EmberTypeError(
                f"{name} returned a value of type {type(x).__name__}, which is not an array"
                f"{errors.where()}"
            )


def literal_value(aval: ShapedArray, value: Any) -> Literal:
    return Literal(np.asarray(value, aval.dtype)[()], aval)


def weak_scalar_aval(value: Any) -> ShapedArray:
    return ShapedArray((), dtypes.python_scalar_dtype(value), type(value) is not bool)
