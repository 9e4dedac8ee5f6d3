"""Smaller transformations with JAX's names: ``custom_gradient``, ``linear_transpose``,
``closure_convert``, ``typeof`` and ``jacobian``.

Each is built from the core machinery rather than adding any: staging a function to a jaxpr
(``trace_to_jaxpr``), evaluating one (``eval_jaxpr``), transposing one (``backward_pass``)
and ``custom_vjp``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Tracer, Zero, get_aval, tangent_aval
from ember._src.errors import CustomDerivativeError
from ember._src.execution.devices import device_put
from ember._src.interpreters.ad import JVPTracer, UndefinedPrimal, backward_pass
from ember._src.interpreters.ad_util import zeros
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.staging import StagingTracer, trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, Var
from ember._src.transforms.arguments import leaf_aval
from ember._src.transforms.custom_derivatives import custom_vjp
from ember._src.transforms.jacobians import jacrev
from ember._src.tree.ops import Partial
from ember._src.tree.util import (
    PyTreeDef,
    register_pytree_node,
    tree_flatten,
    tree_structure,
    tree_unflatten,
    treedef_is_leaf,
)

# ``jax.jacobian`` is reverse mode.
jacobian = jacrev


def typeof(x: Any) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of an array, tracer or scalar."""
    return get_aval(x)


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _trace_flat(fun: Callable[..., Any], in_tree: PyTreeDef, avals: list, name: str):
    """Stage ``fun`` (taking the pytree ``in_tree`` of arguments) to a jaxpr; also return the
    structure of its output."""
    out_trees: list[PyTreeDef] = []

    def flat(*leaves: Any) -> list[Any]:
        out_leaves, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, leaves)))
        out_trees.append(out_tree)
        return out_leaves

    closed = trace_to_jaxpr(flat, avals, name=name)
    return closed, out_trees[0]


# --------------------------------------------------------------------------------------------
# custom_gradient


class _RuleResiduals:
    """The user's gradient rule, staged: its jaxpr and the values it closed over. The values
    are the pytree's leaves, so they travel as custom_vjp residuals (through jit and vmap)."""

    __slots__ = ("jaxpr", "consts", "ct_tree", "result_tree")

    def __init__(self, jaxpr: Jaxpr, consts: list, ct_tree: PyTreeDef, result_tree: PyTreeDef):
        self.jaxpr = jaxpr
        self.consts = consts
        self.ct_tree = ct_tree
        self.result_tree = result_tree


register_pytree_node(
    _RuleResiduals,
    lambda r: (r.consts, (r.jaxpr, r.ct_tree, r.result_tree)),
    lambda aux, consts: _RuleResiduals(aux[0], list(consts), aux[1], aux[2]),
)


def custom_gradient(fun: Callable[..., Any]) -> custom_vjp:
    """A function with its own gradient: ``fun(*args)`` returns ``(value, vjp_fn)`` where
    ``vjp_fn(cotangent)`` returns the cotangents of the arguments (a tuple with one per
    argument; a single value when there is one argument).

    The result is a ``custom_vjp`` function, so reverse mode uses ``vjp_fn`` and forward mode
    is an error, as in JAX.
    """
    name = _name(fun)

    @functools.wraps(fun)
    def primal(*args: Any, **kwargs: Any) -> Any:
        return _value_and_rule(fun, name, args, kwargs)[0]

    def fwd(*args: Any) -> tuple[Any, _RuleResiduals]:
        value, rule = _value_and_rule(fun, name, args, {})
        value_leaves, call_tree = tree_flatten((value,))  # the rule takes one argument
        ct_avals = [tangent_aval(get_aval(v)) for v in value_leaves]
        # Stage the rule now: what it closes over (the forward pass's values) becomes the
        # jaxpr's constants, which we carry as residuals instead of in a Python closure.
        closed, result_tree = _trace_flat(rule, call_tree, ct_avals, name)
        ct_tree = tree_structure(value)
        return value, _RuleResiduals(closed.jaxpr, closed.consts, ct_tree, result_tree)

    def bwd(res: _RuleResiduals, ct: Any) -> Any:
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != res.ct_tree:
            raise CustomDerivativeError(
                f"custom_gradient {name}: cotangent structure {ct_tree} differs from the "
                f"value's {res.ct_tree}{errors.where()}"
            )
        results = tree_unflatten(res.result_tree, eval_jaxpr(res.jaxpr, res.consts, *ct_leaves))
        return (results,) if treedef_is_leaf(res.result_tree) else results

    wrapped = custom_vjp(primal)
    wrapped.defvjp(fwd, bwd)
    return wrapped


def _value_and_rule(fun, name, args, kwargs) -> tuple[Any, Callable[..., Any]]:
    result = fun(*args, **kwargs)
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[1])):
        raise CustomDerivativeError(
            f"custom_gradient function {name} must return a pair (value, vjp_fn) with vjp_fn "
            f"callable, got {type(result).__name__}{errors.where()}"
        )
    return result[0], result[1]


# --------------------------------------------------------------------------------------------
# linear_transpose


def linear_transpose(fun: Callable[..., Any], *primals: Any, reduce_axes=()) -> Partial:
    """The transpose of the linear function ``fun``: a function taking a cotangent shaped like
    ``fun``'s output and returning a tuple of cotangents shaped like ``primals``.

    ``primals`` only give shapes and dtypes (``ShapeDtypeStruct``s will do). Constant terms of
    an affine ``fun`` are dropped; a ``fun`` that is not linear is an error.
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    leaves, in_tree = tree_flatten(primals)
    in_avals = [leaf_aval(x, f"linear_transpose primal leaf #{i}") for i, x in enumerate(leaves)]
    closed, out_tree = _trace_flat(fun, in_tree, in_avals, _name(fun))
    out_avals = [a.strip_weak_type() for a in closed.jaxpr.out_avals]
    _check_linear_dtypes([a.dtype for a in in_avals], [a.dtype for a in out_avals])
    _check_transposable(closed.jaxpr, _name(fun))
    name = _name(fun)

    def transposed_fun(consts: list, out_cotangent: Any) -> tuple:
        return _transpose_call(closed, consts, in_tree, in_avals, out_tree, out_avals, name,
                               out_cotangent)  # fmt: skip

    return Partial(transposed_fun, closed.consts)


def _check_linear_dtypes(in_dtypes: list, out_dtypes: list) -> None:
    all_dtypes = in_dtypes + out_dtypes
    if all(dtypes.is_float(d) or d.kind == "c" for d in all_dtypes):
        return
    if all(d.kind in "iu" for d in all_dtypes):
        return
    raise errors.EmberTypeError(
        "linear_transpose only supports [float or complex] -> [float or complex], and integer "
        f"-> integer functions, but got {_names(in_dtypes)} -> {_names(out_dtypes)}"
        f"{errors.where()}"
    )


def _names(dts: list) -> str:
    return "[" + ", ".join(dtypes.short_name(d) for d in dts) + "]"


def _check_transposable(jaxpr: Jaxpr, name: str) -> None:
    """Every operation on (something computed from) an input needs a transpose rule; one
    without, like ``sin``, shows ``fun`` is not linear."""
    linear = {id(v) for v in jaxpr.invars}
    for eqn in jaxpr.eqns:
        if any(type(v) is Var and id(v) in linear for v in eqn.invars):
            if not rules.has_transpose(eqn.primitive):
                raise errors.EmberTypeError(
                    f"linear_transpose: {name} is not linear in its inputs (or uses an operation "
                    f"that has no transpose rule): it applies {eqn.primitive.name} to a value "
                    f"computed from them{errors.where()}"
                )
            linear.update(id(v) for v in eqn.outvars)


def _transpose_call(closed, consts, in_tree, in_avals, out_tree, out_avals, name, out_cotangent):
    ct_leaves, ct_tree = tree_flatten(out_cotangent)
    ct_leaves = [x if isinstance(x, Tracer) else device_put(x) for x in ct_leaves]
    if ct_tree != out_tree:
        raise errors.EmberTypeError(
            f"cotangent tree does not match function output, expected {out_tree} but got "
            f"{ct_tree}{errors.where()}"
        )
    for i, (ct, aval) in enumerate(zip(ct_leaves, out_avals)):
        got = get_aval(ct)
        if got.shape != aval.shape or got.dtype != aval.dtype:
            raise errors.EmberTypeError(
                f"cotangent type does not match function output: leaf #{i} is "
                f"{got.str_short()}, the output is {aval.str_short()}{errors.where()}"
            )
    args = [UndefinedPrimal(tangent_aval(a)) for a in in_avals]
    try:
        cts = backward_pass(closed.jaxpr, consts, args, ct_leaves)
    except errors.EmberError:
        raise
    except TypeError as e:
        # A transpose rule met two linear operands (``x * x``): fun is not linear.
        raise errors.EmberTypeError(
            f"linear_transpose: {name} is not linear in its inputs ({e}){errors.where()}"
        ) from e
    out = [zeros(ct.aval) if type(ct) is Zero else ct for ct in cts]
    return tree_unflatten(in_tree, out)


# --------------------------------------------------------------------------------------------
# closure_convert


def closure_convert(fun: Callable[..., Any], *example_args: Any) -> tuple[Callable, list]:
    """``(converted_fun, hoisted)``: ``converted_fun(*args, *hoisted)`` computes
    ``fun(*args)`` with the values ``fun`` closes over that might carry derivatives (tracers
    of an enclosing transformation) taken as explicit arguments, as ``custom_vjp`` needs.

    ``example_args`` give the argument structure, shapes and dtypes.
    """
    leaves, in_tree = tree_flatten(example_args)
    avals = [leaf_aval(x, f"closure_convert example leaf #{i}") for i, x in enumerate(leaves)]
    closed, out_tree = _trace_flat(fun, in_tree, avals, _name(fun))
    hoist = [_maybe_perturbed(c) for c in closed.consts]
    hoisted = [c for c, h in zip(closed.consts, hoist) if h]
    converted = functools.partial(_converted, closed, hoist, in_tree, out_tree)
    functools.update_wrapper(converted, fun)
    return converted, hoisted


def _converted(closed: ClosedJaxpr, hoist: list[bool], in_tree, out_tree, *args_and_consts):
    n_args = len(args_and_consts) - sum(hoist)
    args, given = args_and_consts[:n_args], iter(args_and_consts[n_args:])
    consts = [next(given) if h else c for c, h in zip(closed.consts, hoist)]
    leaves, tree = tree_flatten(tuple(args))
    if tree != in_tree:
        raise errors.EmberTypeError(
            "The inputs to the closure produced by closure_convert must have the same pytree "
            f"structure as the example arguments passed when closure_convert was called. "
            f"Expected {in_tree}, but got {tree}{errors.where()}"
        )
    return tree_unflatten(out_tree, eval_jaxpr(closed.jaxpr, consts, *leaves))


def _maybe_perturbed(x: Any) -> bool:
    """Whether ``x`` might carry a tangent: a tracer of differentiation, or a staged value of
    a differentiable dtype (differentiation may come later). Other tracers (vmap's) are
    looked through to the values they hold; plain arrays never carry one."""
    if not isinstance(x, Tracer):
        return False
    if isinstance(x, JVPTracer):
        return True
    if isinstance(x, StagingTracer):
        return tangent_aval(x.aval).dtype != dtypes.float0
    return any(_maybe_perturbed(v) for v in _tracer_contents(x))


def _tracer_contents(x: Tracer) -> list[Any]:
    slots = [s for cls in type(x).__mro__ for s in getattr(cls, "__slots__", ())]
    return [getattr(x, s) for s in slots if s != "_trace" and hasattr(x, s)]
