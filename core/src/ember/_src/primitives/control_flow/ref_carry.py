"""Discharging a loop over Refs: a Ref the body closes over (one of its consts) becomes part
of the carry, so the loop's body becomes a function of the Ref's value.

A Ref the body only reads stays a constant of the loop: carrying it would copy it through every
iteration for nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ember._src.interpreters.discharge import discharge_state, unchanged_refs
from ember._src.ir import ClosedJaxpr
from ember._src.primitives.control_flow.body_jaxprs import permute_jaxpr
from ember._src.primitives.jaxpr_transforms import hoist_consts


class RefCarry(NamedTuple):
    """A loop body discharged: ``body`` takes ``new_consts``, the consts that stay (positions
    ``stay``), the values of the Refs it writes (positions ``carried``), then the body's other
    inputs; it returns the written Refs' final values, then the body's outputs."""

    new_consts: list[Any]
    stay: list[int]
    carried: list[int]
    body: ClosedJaxpr

    def consts_then_carried(self, consts: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """The loop's consts (new ones first) and the initial values of the carried Refs."""
        return (
            [*self.new_consts, *(consts[i] for i in self.stay)],
            [consts[i] for i in self.carried],
        )


def carry_refs(body: ClosedJaxpr, const_marks: Sequence[bool]) -> RefCarry:
    """``body`` (const-free, its first ``len(const_marks)`` inputs the loop's consts)
    discharged of the Refs ``const_marks`` marks among its consts."""
    num_consts, n_in = len(const_marks), len(body.in_avals)
    marks = [*const_marks, *[False] * (n_in - num_consts)]
    discharged = discharge_state(body, marks)
    read_only = iter(unchanged_refs(discharged, marks))
    written = [m and not next(read_only) for m in const_marks]
    new_consts, flat = hoist_consts(discharged)
    n_new, n_out = len(new_consts), len(body.out_avals)
    stay = [i for i, w in enumerate(written) if not w]
    carried = [i for i, w in enumerate(written) if w]
    # The discharged body returns every discharged Ref's final value after its outputs.
    ref_inputs = [i for i, m in enumerate(const_marks) if m]
    finals = [n_out + k for k, i in enumerate(ref_inputs) if written[i]]
    in_order = [*range(n_new), *(n_new + i for i in stay), *(n_new + i for i in carried)]
    in_order += range(n_new + num_consts, n_new + n_in)
    return RefCarry(
        new_consts, stay, carried, permute_jaxpr(flat, in_order, [*finals, *range(n_out)])
    )
