"""Evaluating a discharged kernel (or an index map) on the current trace at given grid
indices, and the block starts an index map gives: shared by the sequential loop
(``interpret.py``) and the batched parallel step (``parallel_grid.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src.ir import ClosedJaxpr, Literal, Var
from ember._src.pallas.core import BlockMapping
from ember._src.pallas.primitives import num_programs_p, program_id_p


def evaluate_kernel(
    kernel: ClosedJaxpr, grid: tuple[int, ...], grid_indices: Sequence[Any], values: list[Any]
) -> list[Any]:
    """Evaluate the discharged kernel on the current trace, with ``program_id`` replaced by
    the step's grid indices (the kernel binds it only at its top level)."""
    jaxpr = kernel.jaxpr
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, kernel.consts))
    env.update(zip(jaxpr.invars, values))

    def read(atom: Any) -> Any:
        return atom.val if type(atom) is Literal else env[atom]

    for eqn in jaxpr.eqns:
        if eqn.primitive is program_id_p:
            outs = [grid_indices[eqn.params["axis"]]]
        elif eqn.primitive is num_programs_p:
            outs = [np.int32(grid[eqn.params["axis"]])]
        else:
            result = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
            outs = result if eqn.primitive.multiple_results else [result]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def block_starts(mapping: BlockMapping, grid_indices: Sequence[Any]) -> list[Any]:
    """Where ``mapping``'s block starts at ``grid_indices`` (element offsets per dimension)."""
    block_indices = evaluate_kernel(mapping.index_map, (), grid_indices, list(grid_indices))
    return [
        index if size is None else index * np.int32(size)
        for index, size in zip(block_indices, mapping.block_shape)
    ]
