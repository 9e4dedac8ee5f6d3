"""``custom_jvp`` and ``custom_vjp``: functions that bring their own derivative rules.

A call runs where its arguments live, as JAX's does:

- arguments that no transformation carries (an eager call, or one inside a rule whose values
  are known) run the Python function itself, every time: its Python control flow sees
  concrete values and its side effects happen on each call;
- arguments being differentiated (grad, jvp) run the user's rule at once on the primal
  values: ``custom_jvp``'s ``jvp(primals, tangents)``, or ``custom_vjp``'s ``fwd`` with
  ``bwd`` kept for the transpose; the function itself is not traced;
- under any other transformation (jit, vmap, ...) the function is traced to a jaxpr and bound
  as one primitive call (``custom_jvp_call`` / ``custom_vjp_call``, in
  ``primitives/custom_derivatives.py``) whose ordinary evaluation, lowering and batching use
  that jaxpr, and whose differentiation calls the same rules, which it carries as parameters.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import (
    EvalTrace,
    ShapedArray,
    Trace,
    Tracer,
    current_trace,
    get_aval,
    set_current_trace,
    tangent_aval,
)
from ember._src.interpreters.ad import JVPTrace
from ember._src.interpreters.ad_util import add_tangents, zeros
from ember._src.interpreters.partial_eval import PartialEvalTrace
from ember._src.primitives.custom_derivatives import (
    apply_jvp_rule,
    apply_vjp_rules,
    custom_jvp_call_p,
    custom_vjp_call_p,
)
from ember._src.primitives.jaxpr_transforms import trace_const_free
from ember._src.tree.util import PyTreeDef, flatten_fun, tree_flatten, tree_map, tree_unflatten

CustomDerivativeError = errors.CustomDerivativeError  # defined with the other public errors


# --------------------------------------------------------------------------------------------
# Shared by both decorators: argument handling, where a call runs, tracing


class _Traced:
    """One call's signature: its differentiable arguments' tree and types, its nondiff
    arguments, and its outputs' tree and types. A traced call also has its jaxpr and consts;
    a call whose rule runs at once (under differentiation) learns its outputs from the rule."""

    __slots__ = ("consts", "jaxpr", "in_tree", "in_avals", "out_tree", "out_avals", "nondiff")

    def __init__(self, in_tree, in_avals, nondiff, consts=(), jaxpr=None, out_tree=None):
        self.in_tree = in_tree
        self.in_avals: list[ShapedArray] = list(in_avals)
        self.nondiff = nondiff
        self.consts = list(consts)
        self.jaxpr = jaxpr
        self.out_tree: PyTreeDef | None = out_tree
        self.out_avals: list[ShapedArray] | None = None if jaxpr is None else jaxpr.out_avals

    def learn_outputs(self, out_tree: PyTreeDef, out_leaves: Sequence[Any]) -> None:
        """An untraced call's outputs are what its rule returned first."""
        if self.out_tree is None:
            self.out_tree = out_tree
            self.out_avals = [get_aval(x) for x in out_leaves]


def _where_it_runs(leaves: Sequence[Any]) -> Trace:
    """The trace that decides how a call on ``leaves`` runs: the current one, or below it
    while the current one is a differentiation trace (jvp, linearize's partial evaluation)
    that carries none of them, since such a trace hands what it does not carry to its parent.
    An ``EvalTrace`` means the arguments are concrete and no transformation needs the call."""
    trace = current_trace()
    while isinstance(trace, JVPTrace | PartialEvalTrace) and not any(
        isinstance(x, Tracer) and x._trace is trace for x in leaves
    ):
        trace = trace.parent
    return trace


class _EagerUnderDifferentiation(EvalTrace):
    """Runs a custom function eagerly on arguments that the differentiation traces around the
    call do not carry (its rule calling it on known primals). Every tracer alive belongs to
    those traces, so a tracer reaching an operation here is one the function closes over."""

    __slots__ = ("function",)

    def __init__(self, function: _CustomFunction):
        super().__init__(None)
        self.function = function

    def process_primitive(self, primitive, args, params):
        if any(isinstance(x, Tracer) for x in args):
            name = getattr(self.function, "__name__", "")
            raise CustomDerivativeError(
                f"{self.function.kind} function {name} closes over a value that is being "
                f"differentiated; pass that value as an argument instead, so that its rule "
                f"sees it{errors.where()}"
            )
        return super().process_primitive(primitive, args, params)


class _CustomFunction:
    """What custom_jvp and custom_vjp share: binding kwargs, nondiff args, where a call runs,
    tracing."""

    kind = "custom function"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        if not callable(fun):
            raise TypeError(f"{self.kind} expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        self._signature = _signature(fun)

    def __getattr__(self, name: str) -> Any:
        # As JAX's: a decorator stacked on another custom function (custom_vjp on custom_vmap)
        # passes the inner one's ``def...`` methods through, to define its rules.
        if name.startswith("def"):
            return getattr(self.fun, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        if not kwargs:
            return args
        if self._signature is None:
            raise TypeError(f"{self.kind} {self.__name__} cannot take keyword arguments")
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.args

    def _split(self, args: tuple) -> tuple[tuple, list[Any], PyTreeDef]:
        """(nondiff (position, value) pairs, differentiable leaves, their tree)."""
        nondiff = tuple((i, args[i]) for i in self.nondiff_argnums if i < len(args))
        nondiff_positions = {i for i, _ in nondiff}
        diff_args = tuple(a for i, a in enumerate(args) if i not in nondiff_positions)
        leaves, in_tree = tree_flatten(diff_args)
        return nondiff, leaves, in_tree

    def _call(self, args: tuple) -> Any:
        """Runs the call where its arguments live (the module's docstring says how)."""
        nondiff, leaves, in_tree = self._split(args)
        trace = _where_it_runs(leaves)
        if isinstance(trace, EvalTrace):
            if trace is current_trace():  # an eager call
                return self.fun(*args)
            with set_current_trace(_EagerUnderDifferentiation(self)):
                return self.fun(*args)
        if isinstance(trace, JVPTrace):
            signature = _Traced(in_tree, [get_aval(x) for x in leaves], nondiff)
            primals, tangents = zip(*(trace.unpack(x) for x in leaves))
            with set_current_trace(trace.parent):
                outs, tangent_outs = self._differentiate(signature, len(args), primals, tangents)
            wrapped = [trace.wrap(p, t) for p, t in zip(outs, tangent_outs)]
            return tree_unflatten(signature.out_tree, wrapped)
        traced = self._trace(args, nondiff, leaves, in_tree)
        outs = self._bind(traced, len(args), leaves)
        return tree_unflatten(traced.out_tree, outs)

    def _trace(self, args: tuple, nondiff: tuple, leaves: list[Any], in_tree) -> _Traced:
        avals = tuple(get_aval(x) for x in leaves)
        flat = flatten_fun(lambda *xs: self.fun(*_merge_args(len(args), nondiff, xs)), in_tree)
        consts, jaxpr = trace_const_free(flat, avals, getattr(self, "__name__", self.kind))
        return _Traced(in_tree, avals, nondiff, consts, jaxpr, flat.out_tree)

    def _differentiate(self, signature: _Traced, n_args: int, primals, tangents):
        raise NotImplementedError

    def _bind(self, traced: _Traced, n_args: int, leaves: list[Any]) -> list[Any]:
        raise NotImplementedError


def _signature(fun: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _merge_args(n: int, nondiff: tuple, diff_args: tuple) -> list[Any]:
    fixed = dict(nondiff)
    it = iter(diff_args)
    return [fixed[i] if i in fixed else next(it) for i in range(n)]


def _check_outputs(
    name: str, what: str, tree: PyTreeDef, expected_tree: PyTreeDef, leaves, expected_avals
) -> None:
    if tree != expected_tree:
        raise CustomDerivativeError(
            f"the {what} of {name} must have the structure of its primal output "
            f"({expected_tree}), got {tree}{errors.where()}"
        )
    for i, (x, aval) in enumerate(zip(leaves, expected_avals)):
        got = get_aval(x)
        if got.shape != aval.shape:
            raise CustomDerivativeError(
                f"the {what} of {name} has shape {got.shape} at leaf #{i}, but the primal output "
                f"there has shape {aval.shape}{errors.where()}"
            )


# --------------------------------------------------------------------------------------------
# custom_jvp


class custom_jvp(_CustomFunction):  # noqa: N801 - JAX's name
    """A function with a custom forward-mode derivative (``defjvp`` / ``defjvps``)."""

    kind = "custom_jvp"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None

    def defjvp(self, jvp: Callable[..., Any], symbolic_zeros: bool = False) -> Callable[..., Any]:
        """``jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """One rule per argument: ``jvp_i(tangent_i, primal_out, *primals) -> tangent_out``."""

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contribution = rule(t, out, *primals)
                total = (
                    contribution if total is None else tree_map(add_tangents, total, contribution)
                )
            if total is None:
                total = tree_map(lambda y: zeros(tangent_aval(get_aval(y))), out)
            return out, total

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.jvp is None:
            raise AttributeError(
                f"no JVP rule defined for custom_jvp function {self.__name__}; use defjvp"
            )
        return self._call(self._positional(args, kwargs))

    def _differentiate(self, signature: _Traced, n_args: int, primals, tangents):
        return apply_jvp_rule(_JvpRule(self, signature, n_args), primals, tangents)

    def _bind(self, traced: _Traced, n_args: int, leaves: list[Any]) -> list[Any]:
        return custom_jvp_call_p.bind(
            *traced.consts,
            *leaves,
            call_jaxpr=traced.jaxpr,
            jvp=_JvpRule(self, traced, n_args),
            num_consts=len(traced.consts),
        )


class _JvpRule:
    """The user's jvp, on flat primals and tangents (a parameter of custom_jvp_call)."""

    def __init__(self, owner: custom_jvp, traced: _Traced, n_args: int):
        self.owner = owner
        self.traced = traced
        self.n_args = n_args

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
        t = self.traced
        nondiff = [v for _, v in t.nondiff]
        primal_tree = tree_unflatten(t.in_tree, primals)
        tangent_tree = tree_unflatten(t.in_tree, tangents)
        name = f"custom_jvp rule of {self.owner.__name__}"
        result = self.owner.jvp(*nondiff, primal_tree, tangent_tree)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise CustomDerivativeError(
                f"the {name} must return a pair (primal_out, tangent_out){errors.where()}"
            )
        out_leaves, out_tree = tree_flatten(result[0])
        tangent_leaves, tangent_tree = tree_flatten(result[1])
        t.learn_outputs(out_tree, out_leaves)
        expected = t.out_avals
        _check_outputs(name, "primal output", out_tree, t.out_tree, out_leaves, expected)
        _check_outputs(name, "tangent output", tangent_tree, t.out_tree, tangent_leaves, expected)
        return out_leaves, tangent_leaves


# --------------------------------------------------------------------------------------------
# custom_vjp


class custom_vjp(_CustomFunction):  # noqa: N801 - JAX's name
    """A function with a custom reverse-mode derivative (``defvjp(fwd, bwd)``)."""

    kind = "custom_vjp"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(
        self, fwd: Callable[..., Any], bwd: Callable[..., Any], symbolic_zeros: bool = False
    ) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> cts``.

        ``bwd`` returns a tuple with one cotangent per differentiable argument (``None`` for
        a zero cotangent).
        """
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None:
            raise AttributeError(
                f"no VJP rule defined for custom_vjp function {self.__name__}; use defvjp"
            )
        return self._call(self._positional(args, kwargs))

    def _differentiate(self, signature: _Traced, n_args: int, primals, tangents):
        fwd, bwd = _FwdRule(self, signature, n_args), _BwdRule(self, signature)
        return apply_vjp_rules(fwd, bwd, primals, tangents)

    def _bind(self, traced: _Traced, n_args: int, leaves: list[Any]) -> list[Any]:
        return custom_vjp_call_p.bind(
            *traced.consts,
            *leaves,
            call_jaxpr=traced.jaxpr,
            fwd=_FwdRule(self, traced, n_args),
            bwd=_BwdRule(self, traced),
            num_consts=len(traced.consts),
        )


class _FwdRule:
    """The user's fwd on flat primals: returns (outputs, residual leaves, residual tree)."""

    def __init__(self, owner: custom_vjp, traced: _Traced, n_args: int):
        self.owner = owner
        self.traced = traced
        self.n_args = n_args

    def __call__(self, primals: Sequence[Any]) -> tuple[list, list, PyTreeDef]:
        t = self.traced
        call_args = _merge_args(self.n_args, t.nondiff, tree_unflatten(t.in_tree, primals))
        name = f"custom_vjp fwd of {self.owner.__name__}"
        result = self.owner.fwd(*call_args)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise CustomDerivativeError(
                f"the {name} must return a pair (output, residuals){errors.where()}"
            )
        out_leaves, out_tree = tree_flatten(result[0])
        t.learn_outputs(out_tree, out_leaves)
        _check_outputs(name, "output", out_tree, t.out_tree, out_leaves, t.out_avals)
        res_leaves, res_tree = tree_flatten(result[1])
        return out_leaves, res_leaves, res_tree


class _BwdRule:
    """The user's bwd on flat residuals and cotangents: one cotangent per primal leaf."""

    def __init__(self, owner: custom_vjp, traced: _Traced):
        self.owner = owner
        self.traced = traced

    def __call__(self, residuals: Sequence[Any], res_tree: PyTreeDef, cts: Sequence[Any]):
        t = self.traced
        nondiff = [v for _, v in t.nondiff]
        name = f"custom_vjp bwd of {self.owner.__name__}"
        result = self.owner.bwd(
            *nondiff, tree_unflatten(res_tree, residuals), tree_unflatten(t.out_tree, cts)
        )
        diff_trees = t.in_tree.subtrees
        if not isinstance(result, (tuple, list)) or len(result) != len(diff_trees):
            raise CustomDerivativeError(
                f"the {name} must return a tuple of {len(diff_trees)} cotangents (one per "
                f"differentiable argument), got {type(result).__name__}"
                f"{'' if not isinstance(result, (tuple, list)) else f' of {len(result)}'}"
                f"{errors.where()}"
            )
        leaves_out = []
        in_avals = iter(t.in_avals)
        for i, (ct, tree) in enumerate(zip(result, diff_trees)):
            avals = [next(in_avals) for _ in range(tree.num_leaves)]
            if ct is None:
                leaves_out.extend(zeros(tangent_aval(a)) for a in avals)
                continue
            ct_leaves, ct_tree = tree_flatten(ct)
            if ct_tree != tree:
                raise CustomDerivativeError(
                    f"the {name} returned a cotangent of structure {ct_tree} for argument #{i}, "
                    f"which has structure {tree}{errors.where()}"
                )
            for leaf, aval in zip(ct_leaves, avals):
                if get_aval(leaf).shape != aval.shape:
                    raise CustomDerivativeError(
                        f"the {name} returned a cotangent of shape {get_aval(leaf).shape} for an "
                        f"argument of shape {aval.shape}{errors.where()}"
                    )
            leaves_out.extend(ct_leaves)
        return leaves_out
