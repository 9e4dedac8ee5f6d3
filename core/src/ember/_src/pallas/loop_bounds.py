"""Which grid axes decide how many times a kernel's loops run.

A ``lax.fori_loop`` whose bounds come from ``program_id`` (a causal attention kernel that
stops at the diagonal: ``fori_loop(0, program_id(2) + 1, ...)``) is a ``while`` loop whose
trip count differs from program to program. Run for every point of a grid axis at once
(``parallel_grid.py``), such a loop turns into one that runs until the last program is done,
with every finished program's carry kept by a select, and with its block slices and updates
at per-program offsets (gathers and scatters): it does the work of the longest program for
all of them. Looping over that axis instead, and batching only the axes the trip count does
not depend on, keeps each step's loop as long as its programs need.

``trip_count_axes`` follows the data flow from each ``program_id`` through the kernel's
equations (into the jaxprs of loops and conditionals too) to the predicate of every ``while``.
The blocks themselves count as depending on no axis: a loop that runs until some value in a
block converges stays batched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src.ir import Jaxpr, Literal, jaxprs_in
from ember._src.pallas.primitives import program_id_p
from ember._src.primitives.control_flow.loops import while_p

_Axes = frozenset[int]
_NONE: _Axes = frozenset()


def trip_count_axes(kernel: Jaxpr) -> set[int]:
    """The grid axes whose ``program_id`` the trip count of some ``while`` loop of ``kernel``
    (a discharged kernel, blocks in) depends on."""
    control: set[int] = set()
    _propagate(kernel, [_NONE] * len(kernel.invars), control)
    return control


def _propagate(jaxpr: Jaxpr, in_axes: Sequence[_Axes], control: set[int]) -> list[_Axes]:
    """The grid axes each output of ``jaxpr`` depends on, given its inputs'; adds to
    ``control`` the axes that loop predicates inside it depend on."""
    axes: dict[Any, _Axes] = dict(zip(jaxpr.invars, in_axes))

    def of(atom: Any) -> _Axes:
        return _NONE if type(atom) is Literal else axes.get(atom, _NONE)

    for eqn in jaxpr.eqns:
        ins = [of(v) for v in eqn.invars]
        if eqn.primitive is program_id_p:
            outs = [frozenset({eqn.params["axis"]})]
        elif eqn.primitive is while_p:
            outs = _while(eqn.params, ins, control)
        else:
            used = _NONE.union(*ins)
            for inner in jaxprs_in(eqn.params.values()):
                _propagate(inner, [used] * len(inner.invars), control)
            outs = [used] * len(eqn.outvars)
        axes.update(zip(eqn.outvars, outs))
    return [of(v) for v in jaxpr.outvars]


def _while(params: dict, ins: list[_Axes], control: set[int]) -> list[_Axes]:
    """The axes of a ``while``'s results; its predicate's axes go into ``control``."""
    cond, body = params["cond_jaxpr"].jaxpr, params["body_jaxpr"].jaxpr
    n_cond, n_body = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts = ins[:n_cond], ins[n_cond : n_cond + n_body]
    carry = ins[n_cond + n_body :]
    # A carried value depends on what it started from and on what each step adds to it.
    while True:
        stepped = _propagate(body, [*body_consts, *carry], control)
        widened = [a | b for a, b in zip(carry, stepped)]
        if widened == carry:
            break
        carry = widened
    control.update(*_propagate(cond, [*cond_consts, *carry], control))
    return carry
