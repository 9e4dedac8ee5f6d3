"""Checkify rule of ``shard_map`` (and so of ``pmap``, a ``jit`` of one): each device's body
is checked, and the first device that failed, in the mesh's device order, gives the error.

The error state goes in replicated (every device starts from the state so far) and comes out
stacked: each device returns its own state with a leading axis of one, put together over all
the shard_map's manual axes (every mesh axis unless partial-manual), so the result's leading
axis runs over the devices in the mesh's order. That
stack is merged into the state as a batched error is, which keeps the first failing device's
failure (JAX keeps one device's error the same way).
"""

from __future__ import annotations

from typing import Any

from ember._src.checkify.interpreter import CheckedBody, jaxpr_body, register_check_rule
from ember._src.checkify.state import ErrorState
from ember._src.primitives.jaxpr_transforms import trace_const_free
from ember._src.primitives.shape import expand_dims
from ember._src.primitives.shard_map import mesh_axes, shard_map_p
from ember._src.primitives.sharding_constraint import with_sharding_constraint
from ember._src.runtime.sharding import NamedSharding, PartitionSpec


def _shard_map_rule(state, enabled, eqn, *invals):
    p = eqn.params
    jaxpr, mesh = p["jaxpr"], p["mesh"]
    checked = CheckedBody(jaxpr_body(jaxpr, enabled), state.keys(), state.sites)

    def per_device(*args: Any) -> list[Any]:
        outs = checked(*args)
        n_state = checked.n_out_state
        return [expand_dims(x, (0,)) for x in outs[:n_state]] + outs[n_state:]

    in_state = state.leaves()
    with mesh_axes(
        mesh, p["check_vma"], p["manual_axes"]
    ):  # the body's collectives name the mesh's axes
        consts, body = trace_const_free(
            per_device, [*state.avals(), *jaxpr.in_avals], "checkify(shard_map)"
        )
    n_state = checked.n_out_state
    over_every_device = PartitionSpec(tuple(p["manual_axes"]))
    outs = shard_map_p.bind(
        *consts,
        *in_state,
        *invals,
        jaxpr=body,
        mesh=mesh,
        in_specs=(PartitionSpec(),) * (len(consts) + len(in_state)) + tuple(p["in_specs"]),
        out_specs=(over_every_device,) * n_state + tuple(p["out_specs"]),
        check_vma=p["check_vma"],
        manual_axes=p["manual_axes"],
    )
    # Gathered (the state is small) and typed replicated, so that picking the failing device
    # out of it slices no split dimension under Explicit axes.
    everywhere = NamedSharding(mesh, PartitionSpec())
    stacked = [with_sharding_constraint(x, everywhere) for x in outs[:n_state]]
    per_device_states = ErrorState.from_leaves(checked.out_keys, stacked, state.sites)
    state.merge(per_device_states.to_error())
    return outs[n_state:]


register_check_rule(shard_map_p, _shard_map_rule)
