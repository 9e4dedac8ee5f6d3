"""The jaxprs of control-flow bodies and branches: tracing user functions into them,
checking their types, and reading the user's structures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import ShapedArray, get_aval, ordered_axes
from ember._src.ir import ClosedJaxpr, Jaxpr, Var
from ember._src.primitives.jaxpr_transforms import trace_const_free
from ember._src.tree.util import PyTreeDef, flatten_fun, tree_flatten

ControlFlowTypeError = errors.ControlFlowTypeError  # defined with the other public errors


def trace_function(
    fun: Callable[..., Any],
    in_tree: PyTreeDef,
    in_avals: Sequence[ShapedArray],
    name: str,
) -> tuple[list[Any], ClosedJaxpr, PyTreeDef]:
    """Trace ``fun`` (taking the pytree ``in_tree``) to a const-free jaxpr.

    Returns (captured values, jaxpr taking them first, the output's tree structure).
    """
    flat = flatten_fun(fun, in_tree)
    consts, closed = trace_const_free(flat, in_avals, name)
    return consts, closed, flat.out_tree


def flatten_operands(operands: Any, what: str) -> tuple[list[Any], PyTreeDef, list[ShapedArray]]:
    leaves, tree = tree_flatten(operands)
    avals = []
    for i, leaf in enumerate(leaves):
        try:
            avals.append(get_aval(leaf))
        except errors.EmberTypeError:
            raise errors.EmberTypeError(
                f"{what}: leaf #{i} of the operands is a {type(leaf).__name__}, not an array"
                f"{errors.where()}"
            ) from None
    return leaves, tree, avals


def with_leading_inputs(closed: ClosedJaxpr, avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """``closed`` taking extra, unused leading inputs of ``avals`` (to line up signatures)."""
    if not avals:
        return closed
    jaxpr = closed.jaxpr
    unused = [Var(a) for a in avals]
    return ClosedJaxpr(
        Jaxpr([], [*unused, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info),
        list(closed.consts),
    )


def with_inputs_at(closed: ClosedJaxpr, position: int, avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """``closed`` with extra unused inputs of ``avals`` inserted before input ``position``."""
    if not avals:
        return closed
    jaxpr = closed.jaxpr
    unused = [Var(a) for a in avals]
    invars = [*jaxpr.invars[:position], *unused, *jaxpr.invars[position:]]
    return ClosedJaxpr(
        Jaxpr([], invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info), list(closed.consts)
    )


def describe_avals(avals: Sequence[ShapedArray]) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def same_types(a: Sequence[ShapedArray], b: Sequence[ShapedArray]) -> bool:
    """Equal shapes and dtypes; weak typing may differ (it is joined, as in JAX)."""
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(a, b))


def join_weak_types(*aval_lists: Sequence[ShapedArray]) -> list[ShapedArray]:
    """Per position: weakly typed only if weakly typed in every list."""
    return [
        avals[0].update(weak_type=all(a.weak_type for a in avals)) for avals in zip(*aval_lists)
    ]


def permute_jaxpr(
    closed: ClosedJaxpr, in_order: Sequence[int], out_order: Sequence[int]
) -> ClosedJaxpr:
    """``closed`` with its inputs and outputs reordered: new input k is old ``in_order[k]``."""
    jaxpr = closed.jaxpr
    invars = [jaxpr.invars[i] for i in in_order]
    outvars = [jaxpr.outvars[i] for i in out_order]
    return ClosedJaxpr(
        Jaxpr(jaxpr.constvars, invars, outvars, jaxpr.eqns, jaxpr.debug_info), list(closed.consts)
    )


def split_list(values: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    """``values`` cut into consecutive pieces of ``sizes`` (the rest is the last piece)."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(list(values[start : start + size]))
        start += size
    pieces.append(list(values[start:]))
    return pieces


# --------------------------------------------------------------------------------------------
# Varying manual axes (inside a shard_map body typed by them): a carry keeps its type, and the
# branches of a cond agree. The messages follow JAX's wording.


def _full(aval: ShapedArray) -> str:
    return aval.str_short(short_dtypes=False)


def _listed(items: list[str], end: str) -> str:
    if len(items) == 1:
        return items[0][0].upper() + items[0][1:] + end
    return "\n".join(f"  * {item};" for item in items[:-1]) + f"\n  * {items[-1]}{end}"


def _pcast_hint(fixes: list[str]) -> str:
    if not fixes:
        return ""
    if len(fixes) == 1:
        return f"This might be fixed by {fixes[0]}.\n\n"
    return "This might be fixed by:\n" + _listed(fixes, ".") + "\n\n"


def _pcast(axes: frozenset) -> str:
    return f"applying `ember.lax.pcast(..., {ordered_axes(axes)!r}, to='varying')`"


def check_carry_vma(
    carry_in: Sequence[ShapedArray], carry_out: Sequence[ShapedArray], what: str
) -> None:
    """A loop body (``what``: scan, while_loop) must give back its carry varying over the
    same manual axes it received it varying over."""
    wrong = [(i, a, b) for i, (a, b) in enumerate(zip(carry_in, carry_out)) if a.vma != b.vma]
    if not wrong:
        return
    differences = [
        f"the input carry component #{i} has type {_full(a)} but the corresponding output "
        f"carry component has type {_full(b)}, so the manual axis types do not match"
        for i, a, b in wrong
    ]
    fixes = [
        f"{_pcast(b.vma - a.vma)} to the initial carry value corresponding to the input "
        f"carry component #{i}"
        for i, a, b in wrong
        if b.vma - a.vma
    ]
    raise ControlFlowTypeError(
        f"{what} body function carry input and carry output must have equal types, but they "
        f"differ:\n\n{_listed(differences, '.')}\n\n{_pcast_hint(fixes)}Revise the function "
        f"so that all output types match the corresponding input types{errors.where()}"
    )


def check_branch_vma(
    first: Sequence[ShapedArray], other: Sequence[ShapedArray], what: str, names: tuple
) -> None:
    """The branches of ``what`` (cond, switch) must give outputs varying over the same manual
    axes: ``first`` from branch ``names[0]``, ``other`` from ``names[1]``."""
    wrong = [(k, a, b) for k, (a, b) in enumerate(zip(first, other)) if a.vma != b.vma]
    if not wrong:
        return
    n0, n1 = names
    differences = [
        f"the output #{k} of {n0} has type {_full(a)} but the corresponding output of {n1} "
        f"has type {_full(b)}, so the manual axis types do not match"
        for k, a, b in wrong
    ]
    fixes = [
        f"{_pcast(mine - theirs)} to the output #{k} of {name}"
        for k, a, b in wrong
        for name, mine, theirs in ((n1, a.vma, b.vma), (n0, b.vma, a.vma))
        if mine - theirs
    ]
    raise ControlFlowTypeError(
        f"{what} branches must have equal output types but they differ.\n\n"
        f"{_listed(differences, '.')}\n\n{_pcast_hint(fixes)}Revise {n0} and/or {n1} so that "
        f"all output types match{errors.where()}"
    )
