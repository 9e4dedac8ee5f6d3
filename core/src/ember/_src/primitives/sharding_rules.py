"""The building blocks of sharding rules: how a result is split over Explicit mesh axes.

A primitive's sharding rule (``define_primitive(..., sharding=...)``) runs only when an
operand's type is split over an Explicit axis. Most rules follow one pattern: every result
dimension corresponds to zero or more operand dimensions and takes their *consensus*
sharding: unsplit if they all are, the one split they agree on, or an error asking for an
explicit choice when they disagree. A result may not use one mesh axis twice. The rules of
each primitive sit beside it; the shapes of rule they share are here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import ShapedArray
from ember._src.runtime.mesh import get_abstract_mesh
from ember._src.runtime.sharding import typed_sharding

Entry = Any  # a spec entry: None, an axis name, or a tuple of axis names


def entries(aval: ShapedArray) -> tuple[Entry, ...]:
    """One spec entry per dimension of ``aval`` (None where it is not split)."""
    typed = aval.typed_sharding
    if typed is None:
        return (None,) * aval.ndim
    spec = tuple(typed.spec)
    return spec + (None,) * (aval.ndim - len(spec))


def _operands_text(avals: Iterable[ShapedArray]) -> str:
    return ", ".join(a.str_short() for a in avals)


def fail(what: str, avals: Sequence[ShapedArray], problem: str, fix: str) -> errors.EmberError:
    """The error of a rule: the operation, its operands' types, the problem and the fix."""
    return errors.ShardingTypeError(
        f"{what} of {_operands_text(avals)}: {problem}. {fix}{errors.where()}"
    )


AMBIGUOUS_FIX = (
    "Say how the result is split with out_sharding=P(...) where the operation takes it, "
    "reshard an operand first (ember.sharding.reshard), or let the partitioner decide "
    "(ember.sharding.auto_axes)"
)


def common_mesh(what: str, avals: Sequence[ShapedArray]) -> Any:
    """The one abstract mesh the operands' types are split over."""
    found = None
    for aval in avals:
        typed = aval.typed_sharding
        if typed is None:
            continue
        if found is None:
            found = typed.mesh
        elif typed.mesh != found:
            raise fail(
                what,
                avals,
                f"the operands are typed over two meshes ({found!r} and {typed.mesh!r})",
                "Arrays of one operation live on one mesh: move one with "
                "ember.device_put(x, NamedSharding(mesh, spec))",
            )
    if found is not None:
        in_scope = get_abstract_mesh()
        if (
            in_scope is not found
            and not in_scope.empty
            and in_scope.shape_tuple != found.shape_tuple
        ):
            raise fail(
                what,
                avals,
                f"the operands are typed over {found!r} but the mesh in scope is {in_scope!r}",
                "Compute under the mesh the arrays live on (ember.sharding.use_mesh(mesh)), or "
                "move them onto the mesh in scope with ember.device_put",
            )
    return found


def build(what: str, avals: Sequence[ShapedArray], mesh: Any, out: Sequence[Entry]) -> Any:
    """The typed sharding with entries ``out`` over ``mesh``, refusing an axis used twice."""
    used: set[str] = set()
    for entry in out:
        for axis in (entry,) if isinstance(entry, str) else entry or ():
            if axis in used:
                raise fail(
                    what,
                    avals,
                    f"the result would be split over mesh axis {axis!r} twice "
                    f"({_entries_text(out)})",
                    AMBIGUOUS_FIX,
                )
            used.add(axis)
    return None if mesh is None else typed_sharding(mesh, out)


def _entries_text(out: Sequence[Entry]) -> str:
    return "P(" + ", ".join(repr(e) for e in out) + ")"


def consensus(what: str, avals: Sequence[ShapedArray], dim_entries: Sequence[Entry]) -> Entry:
    """The one split the given operand dimensions agree on (None entries abstain)."""
    found = None
    for entry in dim_entries:
        if entry is None:
            continue
        if found is None:
            found = entry
        elif entry != found:
            raise fail(
                what,
                avals,
                f"corresponding dimensions are split differently ({found!r} and {entry!r})",
                AMBIGUOUS_FIX,
            )
    return found


def require_unsplit(
    what: str, avals: Sequence[ShapedArray], aval: ShapedArray, dims: Iterable[int], why: str
) -> None:
    """Refuse an operand split over an Explicit axis along any of ``dims``."""
    spec = entries(aval)
    for d in dims:
        if spec[d] is not None:
            raise fail(
                what,
                avals,
                f"dimension {d} of {aval.str_short()} is split over {spec[d]!r}, but {why}",
                f"Make that dimension whole first: ember.sharding.reshard(x, P(...)) with None "
                f"at position {d}",
            )


# --------------------------------------------------------------------------------------------
# Rules shared by families of primitives


def same_as_operand(x: ShapedArray, *rest: ShapedArray, **params: Any) -> Any:
    """Unary elementwise primitives (and anything that keeps its operand's layout)."""
    return x.typed_sharding


def elementwise(primitive: Any) -> Callable[..., Any]:
    """n-ary elementwise primitives: same-shaped operands (rank-0 ones broadcast) agree
    dimension by dimension; the result takes their consensus."""
    what = primitive.name

    def rule(*avals: ShapedArray, **params: Any) -> Any:
        # The common case: the typed operands share one type (the others are whole).
        shared = None
        for a in avals:
            typed = a.typed_sharding
            if typed is not None:
                if shared is None:
                    shared = typed
                elif typed is not shared:
                    break
        else:
            common_mesh(what, avals)
            return shared
        mesh = common_mesh(what, avals)
        shaped = [entries(a) for a in avals if a.ndim]
        if not shaped:
            return None
        out = [consensus(what, avals, column) for column in zip(*shaped)]
        return build(what, avals, mesh, out)

    return rule


def reduction(x: ShapedArray, *rest: ShapedArray, axes: Sequence[int], **params: Any) -> Any:
    """Reductions over ``axes``: the reduced dimensions' splits go (the partitioner sums
    across them); the kept ones stay as they were."""
    spec = entries(x)
    reduced = {a % max(x.ndim, 1) for a in axes}
    kept = [e for d, e in enumerate(spec) if d not in reduced]
    return typed_sharding(x.typed_sharding.mesh, kept) if x.typed_sharding else None


def from_jaxpr(param: str) -> Callable[..., Any]:
    """Call-like primitives: the results are typed as the inner jaxpr's outputs."""

    def rule(*avals: ShapedArray, **params: Any) -> list[Any]:
        return [a.typed_sharding for a in params[param].out_avals]

    return rule


def with_unsplit(what: str, dims_of: Callable[..., Iterable[int]], why: str) -> Callable:
    """Primitives that keep their first operand's layout except along some dimensions,
    which must be whole (``dims_of(*avals, **params)`` names them)."""

    def rule(x: ShapedArray, *rest: ShapedArray, **params: Any) -> Any:
        common_mesh(what, (x, *rest))
        require_unsplit(what, (x, *rest), x, dims_of(x, *rest, **params), why)
        for other in rest:
            if other.ndim == x.ndim and entries(other) != entries(x) and other.typed_sharding:
                raise fail(what, (x, *rest), "the operands are split differently", AMBIGUOUS_FIX)
        return x.typed_sharding

    return rule


def unsplit(*avals: ShapedArray, **params: Any) -> None:
    """Primitives that make arrays from nothing (iota): their results are whole; an
    ``out_sharding=`` (applied by ``reshard``) splits them."""
    return None


def carried(what: str, carry: Sequence[ShapedArray], out: Sequence[ShapedArray]) -> list[Any]:
    """Loops: each carry leaves the body typed as it entered it."""
    typed = []
    for i, (before, after) in enumerate(zip(carry, out)):
        if before.typed_sharding != after.typed_sharding:
            raise errors.ShardingTypeError(
                f"{what}: the body changes the sharding of carry #{i} (from "
                f"{before.str_short()} to {after.str_short()}); a carry keeps its type. "
                f"Reshard it at the end of the body (ember.sharding.reshard) or before the "
                f"loop{errors.where()}"
            )
        typed.append(after.typed_sharding)
    return typed
