"""The primitives behind ``custom_jvp`` and ``custom_vjp`` (``transforms/custom_derivatives.py``).

Each decorated function is traced to a jaxpr and bound as one primitive call
(``custom_jvp_call`` / ``custom_vjp_call``) whose ordinary evaluation, lowering and batching
use that jaxpr. Differentiation uses the user's rules instead, which the call carries as
parameters:

- ``custom_jvp_call``'s jvp rule calls the user's ``jvp(primals, tangents)``; what it computes
  is ordinary primitives, so reverse mode follows by linearisation and transposition, as in
  JAX (the tangent output must be linear in the tangents).
- ``custom_vjp_call``'s jvp rule runs the user's ``fwd`` and emits the tangents through
  ``custom_lin``, a linear primitive whose transpose calls the user's ``bwd`` on the saved
  residuals. Forward mode through a ``custom_vjp`` function is therefore an error, as in JAX.

Under ``vmap`` the user's rules are batched too, with every output (and residual) batched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import instantiate
from ember._src.interpreters.batching import batch_flat, not_mapped
from ember._src.interpreters.discharge import discharged_operands, new_ref_values, run_discharged
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.lowering.module import LoweringError, lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.jaxpr_transforms import batch_jaxpr
from ember._src.primitives.shape import bdim_to_front
from ember._src.tree.util import PyTreeDef

# --------------------------------------------------------------------------------------------
# Shared by both calls: what the user's rules receive


def _check_const_tangents(name: str, tangents: Sequence[Any]) -> None:
    if any(type(t) is not Zero for t in tangents):
        raise errors.CustomDerivativeError(
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


# --------------------------------------------------------------------------------------------
# custom_jvp_call


def _custom_jvp_abstract_eval(*avals, call_jaxpr, jvp, num_consts):
    return call_jaxpr.out_avals


def _custom_jvp_reference(*args, call_jaxpr, jvp, num_consts):
    return evaluate_jaxpr(call_jaxpr, args)


def _custom_jvp_lowering(ctx, *args, call_jaxpr, jvp, num_consts):
    return lower_jaxpr_inline(ctx, call_jaxpr.jaxpr, [], args)


def _custom_jvp_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    _check_const_tangents(f"custom_jvp function {jvp.owner.__name__}", tangents[:num_consts])
    return apply_jvp_rule(jvp, primals[num_consts:], tangents[num_consts:])


def apply_jvp_rule(jvp, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    """A custom_jvp function's outputs and their tangents, from its flat rule ``jvp``
    (symbolic zero tangents in, integer outputs' float0 tangents out as symbolic zeros)."""
    outs, tangent_outs = jvp(list(primals), _materialize(tangents))
    fixed = []
    for y, t in zip(outs, tangent_outs):
        aval = tangent_aval(get_aval(y))
        fixed.append(Zero(aval) if aval.dtype == dtypes.float0 else t)
    return list(outs), fixed


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


def _custom_call_discharge(in_avals, out_avals, *args, call_jaxpr, **params):
    """A custom-derivative call given Refs is inlined, discharged: its rule is for values
    (a kernel's body is not differentiated through its Refs)."""
    marks = discharged_operands(in_avals, args)
    outs = run_discharged(call_jaxpr.jaxpr, call_jaxpr.consts, args, marks)
    n = len(out_avals)
    return new_ref_values(marks, outs[n:]), outs[:n]


custom_jvp_call_p = rules.define_primitive(
    "custom_jvp_call",
    own_vma=True,  # typed by its jaxpr
    discharge=_custom_call_discharge,
    sharding=sharding_rules.from_jaxpr("call_jaxpr"),
    abstract_eval=_custom_jvp_abstract_eval,
    jvp=_custom_jvp_jvp,
    batch=_custom_jvp_batch,
    lowering=_custom_jvp_lowering,
    reference=_custom_jvp_reference,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# custom_vjp_call


def _custom_vjp_abstract_eval(*avals, call_jaxpr, fwd, bwd, num_consts):
    return call_jaxpr.out_avals


def _custom_vjp_reference(*args, call_jaxpr, fwd, bwd, num_consts):
    return evaluate_jaxpr(call_jaxpr, args)


def _custom_vjp_lowering(ctx, *args, call_jaxpr, fwd, bwd, num_consts):
    return lower_jaxpr_inline(ctx, call_jaxpr.jaxpr, [], args)


def _custom_vjp_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    _check_const_tangents(f"custom_vjp function {fwd.owner.__name__}", tangents[:num_consts])
    return apply_vjp_rules(fwd, bwd, primals[num_consts:], tangents[num_consts:])


def apply_vjp_rules(fwd, bwd, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    """A custom_vjp function's outputs (its flat ``fwd`` run now) and their tangents: a
    ``custom_lin`` of the tangents, whose transpose runs ``bwd`` on the saved residuals."""
    outs, residuals, res_tree = fwd(list(primals))
    out_avals = tuple(tangent_aval(get_aval(y)) for y in outs)
    tangent_outs = custom_lin_p.bind(
        *residuals,
        *_materialize(tangents),
        num_res=len(residuals),
        bwd=bwd,
        res_tree=res_tree,
        out_avals=out_avals,
    )
    return list(outs), tangent_outs


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


custom_vjp_call_p = rules.define_primitive(
    "custom_vjp_call",
    own_vma=True,  # typed by its jaxpr
    discharge=_custom_call_discharge,
    sharding=sharding_rules.from_jaxpr("call_jaxpr"),
    abstract_eval=_custom_vjp_abstract_eval,
    jvp=_custom_vjp_jvp,
    batch=_custom_vjp_batch,
    lowering=_custom_vjp_lowering,
    reference=_custom_vjp_reference,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# custom_lin: the linear primitive whose transpose is the user's bwd


def _custom_lin_abstract_eval(*avals, num_res, bwd, res_tree, out_avals):
    return list(out_avals)


def _forward_mode_error(bwd) -> LoweringError:
    return LoweringError(
        f"forward-mode differentiation (jvp, jacfwd, linearize evaluated forward) of the "
        f"custom_vjp function {bwd.owner.__name__} is not supported: it defines only a reverse "
        f"rule. Use grad/vjp/jacrev, or define the function with custom_jvp{errors.where()}"
    )


def _custom_lin_lowering(ctx, *args, num_res, bwd, res_tree, out_avals):
    raise _forward_mode_error(bwd)


def _custom_lin_reference(*args, num_res, bwd, res_tree, out_avals):
    raise _forward_mode_error(bwd)


def _custom_lin_batch(vals, dims, *, num_res, bwd, res_tree, out_avals):
    # Reverse mode transposes custom_lin without evaluating it; batching it means its tangent
    # map is being evaluated forward, as jacfwd (a vmap of jvp) over a custom_vjp does.
    raise _forward_mode_error(bwd)


def _custom_lin_transpose(cts, *args, num_res, bwd, res_tree, out_avals):
    residuals = args[:num_res]
    if any(is_undefined(r) for r in residuals):
        raise AssertionError("internal error: custom_vjp residuals must be known values")
    arg_cts = bwd(list(residuals), res_tree, [instantiate(c) for c in cts])
    tangent_args = args[num_res:]
    return [None] * num_res + [
        ct if is_undefined(a) else None for a, ct in zip(tangent_args, arg_cts)
    ]


def _custom_lin_sharding(*avals, out_avals, **params):
    return [a.typed_sharding for a in out_avals]


custom_lin_p = rules.define_primitive(
    "custom_lin",
    own_vma=True,  # typed by the forward pass (out_avals)
    sharding=_custom_lin_sharding,
    abstract_eval=_custom_lin_abstract_eval,
    transpose=_custom_lin_transpose,
    batch=_custom_lin_batch,
    lowering=_custom_lin_lowering,
    reference=_custom_lin_reference,
    multiple_results=True,
)
