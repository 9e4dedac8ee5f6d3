"""``custom_jvp`` and ``custom_vjp``: functions that bring their own derivative rules.

Each decorated function is traced to a jaxpr and bound as one primitive call
(``custom_jvp_call`` / ``custom_vjp_call``) whose ordinary evaluation, lowering and batching
use that jaxpr. Differentiation uses the user's rules instead:

- ``custom_jvp_call``'s jvp rule calls the user's ``jvp(primals, tangents)``; what it computes
  is ordinary primitives, so reverse mode follows by linearisation and transposition, as in
  JAX (the tangent output must be linear in the tangents).
- ``custom_vjp_call``'s jvp rule runs the user's ``fwd`` and emits the tangents through
  ``custom_lin``, a linear primitive whose transpose calls the user's ``bwd`` on the saved
  residuals. Forward mode through a ``custom_vjp`` function is therefore an error, as in JAX.

Under ``vmap`` the user's rules are batched too, with every output (and residual) batched.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Tracer, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_tangents, instantiate, zeros
from ember._src.interpreters.batching import batch_flat, not_mapped
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.lowering.module import LoweringError, lower_jaxpr_inline
from ember._src.primitives.jaxpr_transforms import batch_jaxpr, trace_const_free
from ember._src.primitives.shape import bdim_to_front
from ember._src.tree.util import PyTreeDef, flatten_fun, tree_flatten, tree_map, tree_unflatten

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("custom_lin", multiple_results=True)


CustomDerivativeError = errors.CustomDerivativeError  # defined with the other public errors


# --------------------------------------------------------------------------------------------
# Shared by both decorators: argument handling and tracing of the primal function


class _Traced:
    """One signature's trace of a decorated function."""

    __slots__ = ("consts", "jaxpr", "in_tree", "out_tree", "nondiff")

    def __init__(self, consts, jaxpr, in_tree, out_tree, nondiff):
        self.consts = consts
        self.jaxpr = jaxpr
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.nondiff = nondiff


class _CustomFunction:
    """What custom_jvp and custom_vjp share: binding kwargs, nondiff args, tracing, caching."""

    kind = "custom function"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        if not callable(fun):
            raise TypeError(f"{self.kind} expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        self._signature = _signature(fun)
        self._cache: dict[tuple, tuple[_Traced, Any]] = {}

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        if not kwargs:
            return args
        if self._signature is None:
            raise TypeError(f"{self.kind} {self.__name__} cannot take keyword arguments")
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.args

    def _trace(self, args: tuple) -> tuple[_Traced, list[Any]]:
        nondiff = tuple((i, args[i]) for i in self.nondiff_argnums if i < len(args))
        nondiff_positions = {i for i, _ in nondiff}
        diff_args = tuple(a for i, a in enumerate(args) if i not in nondiff_positions)
        leaves, in_tree = tree_flatten(diff_args)
        avals = tuple(get_aval(x) for x in leaves)
        key = _cache_key(in_tree, avals, nondiff)
        if key is not None and key in self._cache:
            return self._cache[key][0], leaves
        flat = flatten_fun(lambda *xs: self.fun(*_merge_args(len(args), nondiff, xs)), in_tree)
        consts, jaxpr = trace_const_free(flat, avals, getattr(self, "__name__", self.kind))
        traced = _Traced(consts, jaxpr, in_tree, flat.out_tree, nondiff)
        if key is not None and not any(isinstance(c, Tracer) for c in consts):
            self._cache[key] = (traced, None)
        return traced, leaves


def _signature(fun: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _cache_key(in_tree, avals, nondiff) -> tuple | None:
    try:
        key = (in_tree, avals, nondiff)
        hash(key)
        return key
    except TypeError:  # an unhashable nondiff argument: trace every time
        return None


def _merge_args(n: int, nondiff: tuple, diff_args: tuple) -> list[Any]:
    fixed = dict(nondiff)
    it = iter(diff_args)
    return [fixed[i] if i in fixed else next(it) for i in range(n)]


def _check_const_tangents(name: str, tangents: Sequence[Any]) -> None:
    if any(type(t) is not Zero for t in tangents):
        raise CustomDerivativeError(
            f"{name} closes over a value that is being differentiated; pass that value as an "
            f"argument instead, so that its rule sees it{errors.where()}"
        )


def _materialize(tangents: Sequence[Any]) -> list[Any]:
    out = []
    for t in tangents:
        if type(t) is Zero and t.aval.dtype == dtypes.float0:
            out.append(np.zeros(t.aval.shape, dtypes.float0))
        else:
            out.append(instantiate(t))
    return out


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
        self._cache.clear()
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
        args = self._positional(args, kwargs)
        traced, leaves = self._trace(args)
        rule = _JvpRule(self, traced, len(args))
        outs = custom_jvp_call_p.bind(
            *traced.consts,
            *leaves,
            call_jaxpr=traced.jaxpr,
            jvp=rule,
            num_consts=len(traced.consts),
        )
        return tree_unflatten(traced.out_tree, outs)


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
        expected = t.jaxpr.out_avals
        _check_outputs(name, "primal output", out_tree, t.out_tree, out_leaves, expected)
        _check_outputs(name, "tangent output", tangent_tree, t.out_tree, tangent_leaves, expected)
        return out_leaves, tangent_leaves


@rules.def_abstract_eval(custom_jvp_call_p)
def _custom_jvp_abstract_eval(*avals, call_jaxpr, jvp, num_consts):
    return call_jaxpr.out_avals


@rules.def_reference(custom_jvp_call_p)
def _custom_jvp_reference(*args, call_jaxpr, jvp, num_consts):
    return evaluate_jaxpr(call_jaxpr, args)


@rules.def_lowering(custom_jvp_call_p)
def _custom_jvp_lowering(ctx, *args, call_jaxpr, jvp, num_consts):
    return lower_jaxpr_inline(ctx, call_jaxpr.jaxpr, [], args)


@rules.def_jvp(custom_jvp_call_p)
def _custom_jvp_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    _check_const_tangents(f"custom_jvp function {jvp.owner.__name__}", tangents[:num_consts])
    outs, tangent_outs = jvp(primals[num_consts:], _materialize(tangents[num_consts:]))
    fixed = []
    for y, t in zip(outs, tangent_outs):
        aval = tangent_aval(get_aval(y))
        fixed.append(Zero(aval) if aval.dtype == dtypes.float0 else t)
    return list(outs), fixed


@rules.def_batch(custom_jvp_call_p)
def _custom_jvp_batch(vals, dims, *, call_jaxpr, jvp, num_consts):
    size, fronts, in_batched = _batch_setup(vals, dims)
    consts, batched, _ = batch_jaxpr(call_jaxpr, in_batched, size, True)
    rule = _BatchedRule(jvp, call_jaxpr.in_avals[num_consts:], in_batched[num_consts:], size)
    outs = custom_jvp_call_p.bind(
        *consts, *fronts, call_jaxpr=batched, jvp=rule, num_consts=len(consts) + num_consts
    )
    return outs, [0] * len(outs)


def _batch_setup(vals, dims):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    fronts = [v if d is not_mapped else bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
    return size, fronts, [d is not not_mapped for d in dims]


class _BatchedRule:
    """A flat rule (jvp, fwd or bwd) run under vmap: every output batched along axis 0.

    Which arguments are batched is read off their rank: an argument with one more axis than
    its unbatched type carries the batch axis first.
    """

    def __init__(self, inner: Any, avals: Sequence[ShapedArray], batched: Sequence[bool], size):
        self.inner = inner
        self.owner = inner.owner
        self.traced = getattr(inner, "traced", None)
        self.avals = list(avals)
        self.batched = list(batched)
        self.size = size

    def _dims(self, values: Sequence[Any], avals: Sequence[ShapedArray]) -> list[Any]:
        return [0 if get_aval(v).ndim == a.ndim + 1 else not_mapped for v, a in zip(values, avals)]

    def _run(self, fn, values, avals):
        dims = self._dims(values, avals)
        outs, out_dims = batch_flat(fn, values, dims, self.size)
        return [bdim_to_front(x, d, self.size) for x, d in zip(outs, out_dims)]

    def __call__(self, *groups: Sequence[Any]) -> Any:
        return self.inner_call(*groups)

    # A jvp rule: (primals, tangents) -> (outs, tangent outs)
    def inner_call(self, primals, tangents):
        n = len(primals)
        counts = []

        def fn(*xs):
            outs, touts = self.inner(list(xs[:n]), list(xs[n:]))
            counts.append(len(outs))
            return [*outs, *touts]

        tangent_avals = [tangent_aval(a) for a in self.avals]
        flat = self._run(fn, [*primals, *tangents], [*self.avals, *tangent_avals])
        return flat[: counts[0]], flat[counts[0] :]


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
        self._cache.clear()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None:
            raise AttributeError(
                f"no VJP rule defined for custom_vjp function {self.__name__}; use defvjp"
            )
        args = self._positional(args, kwargs)
        traced, leaves = self._trace(args)
        fwd = _FwdRule(self, traced, len(args))
        outs = custom_vjp_call_p.bind(
            *traced.consts,
            *leaves,
            call_jaxpr=traced.jaxpr,
            fwd=fwd,
            bwd=_BwdRule(self, traced),
            num_consts=len(traced.consts),
        )
        return tree_unflatten(traced.out_tree, outs)


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
        _check_outputs(name, "output", out_tree, t.out_tree, out_leaves, t.jaxpr.out_avals)
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
        in_avals = iter(t.jaxpr.in_avals[len(t.consts) :])
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


@rules.def_abstract_eval(custom_vjp_call_p)
def _custom_vjp_abstract_eval(*avals, call_jaxpr, fwd, bwd, num_consts):
    return call_jaxpr.out_avals


@rules.def_reference(custom_vjp_call_p)
def _custom_vjp_reference(*args, call_jaxpr, fwd, bwd, num_consts):
    return evaluate_jaxpr(call_jaxpr, args)


@rules.def_lowering(custom_vjp_call_p)
def _custom_vjp_lowering(ctx, *args, call_jaxpr, fwd, bwd, num_consts):
    return lower_jaxpr_inline(ctx, call_jaxpr.jaxpr, [], args)


@rules.def_jvp(custom_vjp_call_p)
def _custom_vjp_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    _check_const_tangents(f"custom_vjp function {fwd.owner.__name__}", tangents[:num_consts])
    outs, residuals, res_tree = fwd(primals[num_consts:])
    out_avals = tuple(tangent_aval(get_aval(y)) for y in outs)
    tangent_outs = custom_lin_p.bind(
        *residuals,
        *_materialize(tangents[num_consts:]),
        num_res=len(residuals),
        bwd=bwd,
        res_tree=res_tree,
        out_avals=out_avals,
    )
    return list(outs), tangent_outs


@rules.def_batch(custom_vjp_call_p)
def _custom_vjp_batch(vals, dims, *, call_jaxpr, fwd, bwd, num_consts):
    size, fronts, in_batched = _batch_setup(vals, dims)
    consts, batched, _ = batch_jaxpr(call_jaxpr, in_batched, size, True)
    arg_avals = call_jaxpr.in_avals[num_consts:]
    outs = custom_vjp_call_p.bind(
        *consts,
        *fronts,
        call_jaxpr=batched,
        fwd=_BatchedFwd(fwd, arg_avals, in_batched[num_consts:], size),
        bwd=_BatchedBwd(bwd, call_jaxpr.out_avals, size),
        num_consts=len(consts) + num_consts,
    )
    return outs, [0] * len(outs)


class _BatchedFwd(_BatchedRule):
    def inner_call(self, primals):
        trees: list[PyTreeDef] = []
        counts: list[int] = []

        def fn(*xs):
            outs, residuals, res_tree = self.inner(list(xs))
            trees.append(res_tree)
            counts.append(len(outs))
            return [*outs, *residuals]

        flat = self._run(fn, list(primals), self.avals)
        return flat[: counts[0]], flat[counts[0] :], trees[0]


class _BatchedBwd:
    """bwd under vmap: residuals and outputs' cotangents carry the batch axis first."""

    def __init__(self, inner: Any, out_avals: Sequence[ShapedArray], size: int):
        self.inner = inner
        self.owner = inner.owner
        self.traced = inner.traced
        self.out_avals = list(out_avals)
        self.size = size

    def __call__(self, residuals, res_tree, cts):
        n_res = len(residuals)
        ct_dims = [
            0 if get_aval(c).ndim == a.ndim + 1 else not_mapped for c, a in zip(cts, self.out_avals)
        ]
        outs, out_dims = batch_flat(
            lambda *xs: self.inner(list(xs[:n_res]), res_tree, list(xs[n_res:])),
            [*residuals, *cts],
            [0] * n_res + ct_dims,
            self.size,
        )
        return [bdim_to_front(x, d, self.size) for x, d in zip(outs, out_dims)]


# --------------------------------------------------------------------------------------------
# custom_lin: the linear primitive whose transpose is the user's bwd


@rules.def_abstract_eval(custom_lin_p)
def _custom_lin_abstract_eval(*avals, num_res, bwd, res_tree, out_avals):
    return list(out_avals)


def _forward_mode_error(bwd) -> LoweringError:
    return LoweringError(
        f"forward-mode differentiation (jvp, jacfwd, linearize evaluated forward) of the "
        f"custom_vjp function {bwd.owner.__name__} is not supported: it defines only a reverse "
        f"rule. Use grad/vjp/jacrev, or define the function with custom_jvp{errors.where()}"
    )


@rules.def_lowering(custom_lin_p)
def _custom_lin_lowering(ctx, *args, num_res, bwd, res_tree, out_avals):
    raise _forward_mode_error(bwd)


@rules.def_reference(custom_lin_p)
def _custom_lin_reference(*args, num_res, bwd, res_tree, out_avals):
    raise _forward_mode_error(bwd)


@rules.def_batch(custom_lin_p)
def _custom_lin_batch(vals, dims, *, num_res, bwd, res_tree, out_avals):
    # Reverse mode transposes custom_lin without evaluating it; batching it means its tangent
    # map is being evaluated forward, as jacfwd (a vmap of jvp) over a custom_vjp does.
    raise _forward_mode_error(bwd)


@rules.def_transpose(custom_lin_p)
def _custom_lin_transpose(cts, *args, num_res, bwd, res_tree, out_avals):
    residuals = args[:num_res]
    if any(is_undefined(r) for r in residuals):
        raise AssertionError("internal error: custom_vjp residuals must be known values")
    arg_cts = bwd(list(residuals), res_tree, [instantiate(c) for c in cts])
    tangent_args = args[num_res:]
    return [None] * num_res + [
        ct if is_undefined(a) else None for a, ct in zip(tangent_args, arg_cts)
    ]
