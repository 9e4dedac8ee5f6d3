"""``lax.with_sharding_constraint``: pin an intermediate value's layout inside a jitted program.

The partitioner chooses layouts for every value it is not told about; a constraint tells it
one (lowered to Shardy's ``sdy.sharding_constraint``). Outside any trace the constraint is a
``device_put``. Differentiation constrains the tangent and the cotangent alike; under vmap the
batch dimension is left unsplit.
"""

from __future__ import annotations

from typing import Any

from ember._src import core, rules
from ember._src.core import Primitive, Zero
from ember._src.execution import spmd
from ember._src.interpreters.batching import not_mapped
from ember._src.sharding.shardings import NamedSharding, PartitionSpec
from ember._src.tree.util import tree_flatten, tree_unflatten


class _ConstraintPrimitive(Primitive):
    """Bound outside any trace (an eager call, or the known half of a linearisation), the
    constraint is simply a device_put to its sharding."""

    def bind(self, *args: Any, **params: Any) -> Any:
        if core.eval_trace_is_current():
            return spmd.put(args[0], params["sharding"], "with_sharding_constraint")
        return super().bind(*args, **params)


sharding_constraint_p = _ConstraintPrimitive("sharding_constraint")


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``x`` (a pytree), each leaf laid out as ``shardings`` (a Sharding, a PartitionSpec
    inside ``with mesh:``, or a pytree prefix of them) says."""
    leaves, treedef = tree_flatten(x)
    index_tree = tree_unflatten(treedef, range(len(leaves)))
    prefix = tuple(shardings) if isinstance(shardings, list) else shardings
    targets = spmd.broadcast_prefix(
        prefix, index_tree, len(leaves), "with_sharding_constraint shardings"
    )
    out = []
    for leaf, target in zip(leaves, targets):
        if target is None:
            out.append(leaf)
        elif not isinstance(target, NamedSharding):
            raise TypeError(
                f"with_sharding_constraint needs NamedShardings (or PartitionSpecs inside "
                f"`with mesh:`), got {target!r}"
            )
        else:
            out.append(sharding_constraint_p.bind(leaf, sharding=target))
    return tree_unflatten(treedef, out)


def laid_out(result: Any, out_sharding: Any) -> Any:
    """``result`` laid out by JAX's ``out_sharding=`` keyword (a NamedSharding, or a
    PartitionSpec under ``with mesh:``), as a sharding constraint; None leaves it as it is."""
    return result if out_sharding is None else with_sharding_constraint(result, out_sharding)


@rules.def_abstract_eval(sharding_constraint_p)
def _abstract_eval(x, *, sharding):
    sharding.shard_shape(x.shape)  # an indivisible dimension fails here, naming the sizes
    return x


@rules.def_reference(sharding_constraint_p)
def _reference(x, *, sharding):
    return x  # a layout, not a value: nothing to compute without a partitioner


@rules.def_lowering(sharding_constraint_p)
def _lowering(ctx, x, *, sharding):
    ctx.module.require_mesh(sharding.mesh, "with_sharding_constraint")
    aval = ctx.avals_in[0]
    attrs = {"sharding": sharding.sdy_sharding(aval.ndim)}
    return ctx.op("sdy.sharding_constraint", [x], ctx.avals_out[0], attrs)


@rules.def_jvp(sharding_constraint_p)
def _jvp(primals, tangents, *, sharding):
    (x,), (t,) = primals, tangents
    out = sharding_constraint_p.bind(x, sharding=sharding)
    return out, t if type(t) is Zero else sharding_constraint_p.bind(t, sharding=sharding)


@rules.def_transpose(sharding_constraint_p)
def _transpose(ct, x, *, sharding):
    return [ct if type(ct) is Zero else sharding_constraint_p.bind(ct, sharding=sharding)]


@rules.def_batch(sharding_constraint_p)
def _batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is not_mapped:
        return sharding_constraint_p.bind(x, sharding=sharding), d
    entries = list(sharding.spec) + [None] * (core.get_aval(x).ndim - 1 - len(sharding.spec))
    entries.insert(d, None)  # the batch dimension stays whole on every device
    batched = NamedSharding(sharding.mesh, PartitionSpec(*entries))
    return sharding_constraint_p.bind(x, sharding=batched), d
