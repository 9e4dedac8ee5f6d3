"""The primitive behind ``custom_vmap`` (``transforms/custom_batching.py``).

A ``custom_vmap`` function is traced to a jaxpr and bound as one ``custom_vmap_call``, which
carries the jaxpr (``call``) and the user's batching rule (``rule``) as parameters:

- evaluation, lowering and the reference backend run the jaxpr;
- under ``vmap`` the rule runs instead, on the operands with their batch axes first;
- the jvp, as JAX's, is another ``custom_vmap_call``: of the jaxpr's JVP, whose batching
  rule runs the user's rule on the operands batched alike in primal and tangent and
  differentiates it, vmapping that over the operands batched in only one of the two.

``rule`` here is *flat*: ``rule(axis_size, in_batched, args) -> (outs, out_batched)`` with
flat lists (the transform wraps the user's pytree rule in one). The first ``num_consts``
operands are values the function closes over; the rule never sees them, and they may not be
batched, since the user's rule could not know about them.

Reverse mode is not supported, as in JAX: linearising leaves the primal outputs unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import dtypes, errors, rules
from ember._src.core import Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import jvp_flat
from ember._src.interpreters.ad_util import instantiate
from ember._src.interpreters.batching import batch_flat, not_mapped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import merge
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.jaxpr_transforms import jvp_jaxpr
from ember._src.primitives.shape import move_axis


def rule_name(rule: Any) -> str:
    return getattr(rule, "__name__", "<unnamed rule>")


# --------------------------------------------------------------------------------------------
# Evaluation: the jaxpr


def _abstract_eval(*avals, call, rule, num_consts):
    return call.out_avals


def _reference(*args, call, rule, num_consts):
    return evaluate_jaxpr(call, args)


def _lowering(ctx, *args, call, rule, num_consts):
    return lower_jaxpr_inline(ctx, call.jaxpr, [], args)


def _eager(*args, call, rule, num_consts):
    """Run eagerly (a ``jvp`` with nothing around it binds one), the jaxpr runs equation by
    equation: each call has a new jaxpr and rule, so a program compiled for the call as a
    whole would never be found again."""
    return eval_jaxpr(call.jaxpr, call.consts, *args)


# --------------------------------------------------------------------------------------------
# Batching: the user's rule


def _front(x: Any, d: int | None) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` stays as it is (the rule is told)."""
    return x if d is not_mapped else move_axis(x, d, 0)


def _batch(vals, dims, *, call, rule, num_consts):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    if any(d is not not_mapped for d in dims[:num_consts]):
        raise ValueError(
            f"a custom_vmap function (vmap rule {rule_name(rule)}) closes over a value that "
            f"vmap batches; pass that value as an argument instead, so that its rule sees it"
            f"{errors.where()}"
        )
    args = [_front(v, d) for v, d in zip(vals[num_consts:], dims[num_consts:])]
    in_batched = [d is not not_mapped for d in dims[num_consts:]]
    outs, out_batched = rule(size, in_batched, args)
    _check_rule_outputs(rule, call.out_avals, outs, out_batched, size)
    return list(outs), [0 if b else not_mapped for b in out_batched]


def _check_rule_outputs(rule, out_avals, outs, out_batched, size: int) -> None:
    """The rule's outputs have the function's output types, with the batch axis first where
    it says so (a wrong shape would otherwise surface far from its cause)."""
    for i, (x, b, aval) in enumerate(zip(outs, out_batched, out_avals)):
        shape = get_aval(x).shape
        expected = (size, *aval.shape) if b else aval.shape
        if shape != expected:
            raise ValueError(
                f"custom vmap rule ({rule_name(rule)}) returned an output of shape {shape} at "
                f"leaf #{i}, marked {'batched' if b else 'unbatched'}; the function's output "
                f"there has shape {aval.shape}, so it must have shape {expected}"
                f"{errors.where()}"
            )


# --------------------------------------------------------------------------------------------
# Differentiation: a custom_vmap_call of the JVP


def _has_tangent(aval) -> bool:
    """Integer operands have float0 tangents, which are never materialised."""
    return tangent_aval(aval).dtype != dtypes.float0


def _jvp(primals, tangents, *, call, rule, num_consts):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise errors.CustomDerivativeError(
            f"a custom_vmap function (vmap rule {rule_name(rule)}) closes over a value that is "
            f"being differentiated; pass that value as an argument instead{errors.where()}"
        )
    arg_avals = call.in_avals[num_consts:]
    with_tangent = [_has_tangent(a) for a in arg_avals]
    live = [instantiate(t) for t, w in zip(tangents[num_consts:], with_tangent) if w]
    jvp_consts, jvp_call, out_nonzero = jvp_jaxpr(
        call, [False] * num_consts + with_tangent, instantiate_out=True
    )
    outs = custom_vmap_call_p.bind(
        *jvp_consts,
        *primals,
        *live,
        call=jvp_call,
        rule=JvpOfRule(rule, with_tangent, out_nonzero),
        num_consts=len(jvp_consts) + num_consts,
    )
    n_out = len(call.out_avals)
    tangent_outs = iter(outs[n_out:])
    zeros = [Zero(tangent_aval(a)) for a in call.out_avals]
    return outs[:n_out], [next(tangent_outs) if nz else z for nz, z in zip(out_nonzero, zeros)]


class JvpOfRule:
    """The batching rule of a ``custom_vmap_call``'s JVP, as JAX's.

    Its operands are the primals, then the tangents that are not float0. Operands batched in
    both primal and tangent go to the user's rule, marked batched, inside a jvp; operands
    batched in only one of the two are vmapped over (an ordinary vmap of that jvp), so that
    the rule sees a primal and its tangent batched alike.
    """

    def __init__(self, inner: Any, with_tangent: Sequence[bool], out_nonzero: Sequence[bool]):
        self.inner = inner
        self.__name__ = rule_name(inner)
        self.with_tangent = list(with_tangent)
        self.out_nonzero = list(out_nonzero)

    def __call__(self, size: int, in_batched: Sequence[bool], args: Sequence[Any]):
        n = len(self.with_tangent)
        primal_batched = list(in_batched[:n])
        # Each operand's tangent's batching (False where it has no tangent).
        tangent_batched = merge(self.with_tangent, [False] * n, in_batched[n:])
        mutual = [p and t for p, t in zip(primal_batched, tangent_batched)]
        extra = [p != t for p, t in zip(primal_batched, tangent_batched)]
        extra_primal = [0 if p and e else not_mapped for p, e in zip(primal_batched, extra)]
        extra_tangent = [
            0 if t and e else not_mapped
            for t, e, w in zip(tangent_batched, extra, self.with_tangent)
            if w
        ]
        rule_batched: list[list[bool]] = []

        def rule_outputs(*primals):
            outs, out_batched = self.inner(size, mutual, list(primals))
            rule_batched.append(list(out_batched))
            return outs

        def jvp_of_rule(*xs):
            primals, live = xs[:n], xs[n:]
            zeros = [
                Zero(tangent_aval(get_aval(p))) for p, w in zip(primals, self.with_tangent) if not w
            ]
            tangents = merge(self.with_tangent, zeros, live)
            outs, tangent_outs = jvp_flat(rule_outputs, primals, tangents)
            kept = [instantiate(t) for t, nz in zip(tangent_outs, self.out_nonzero) if nz]
            return [*outs, *kept]

        flat, dims = batch_flat(jvp_of_rule, list(args), [*extra_primal, *extra_tangent], size)
        n_out = len(self.out_nonzero)
        by_rule = rule_batched[0]
        by_rule_of_tangents = [b for b, nz in zip(by_rule, self.out_nonzero) if nz]
        out_batched = [
            rule_b or d is not not_mapped
            for rule_b, d in zip([*by_rule, *by_rule_of_tangents], dims)
        ]
        assert len(flat) == len(out_batched) == n_out + len(by_rule_of_tangents)
        return [_front(x, d) for x, d in zip(flat, dims)], out_batched


# --------------------------------------------------------------------------------------------
# Reverse mode: unsupported, as in JAX


def _partial_eval(trace, args, params):
    """Linearising needs the primal outputs known while the tangents are not; a
    ``custom_vmap_call`` of a JVP computes both at once, under one rule, so it cannot be split
    (JAX refuses it the same way)."""
    raise ValueError(
        f"reverse-mode differentiation (grad, vjp, linearize) of a custom_vmap function "
        f"(vmap rule {rule_name(params['rule'])}) is not supported, as in JAX; to give it both a "
        f"batching rule and a reverse-mode rule, wrap it in custom_vjp (custom_vjp outside, "
        f"custom_vmap inside){errors.where()}"
    )


custom_vmap_call_p = rules.define_primitive(
    "custom_vmap_call",
    own_vma=True,  # typed by its jaxpr
    sharding=sharding_rules.from_jaxpr("call"),
    abstract_eval=_abstract_eval,
    jvp=_jvp,
    partial_eval=_partial_eval,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    eager=_eager,
    multiple_results=True,
)
