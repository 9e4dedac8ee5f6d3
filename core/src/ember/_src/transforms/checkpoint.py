"""``checkpoint`` (``remat``): trade compute for memory in reverse-mode differentiation.

A checkpointed function is one call of the ``remat`` primitive (``primitives/remat.py``), whose
partial-evaluation rule saves only what the *policy* calls saveable for the backward pass and
recomputes the rest there. The policy reaches into the ``scan``s and ``cond``s inside the
function, as JAX's does: it chooses among their bodies' equations, and a loop's saved values
are stacked across its iterations. ``checkpoint_name`` names a value for the policies that
select by name, inside loop bodies too.

The policies (``ember.checkpoint_policies``) are JAX's: ``everything_saveable``,
``nothing_saveable`` (the default), ``dots_saveable`` (alias ``checkpoint_dots``),
``dots_with_no_batch_dims_saveable`` (alias ``checkpoint_dots_with_no_batch_dims``),
``save_only_these_names``, ``save_any_names_but_these``, ``save_anything_except_these_names``,
``save_from_both_policies``, and the offloading ones, ``offload_dot_with_no_batch_dims`` and
``save_and_offload_only_these_names`` (ember has no memory spaces: an offloaded value is
saved where it is).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ember._src import errors
from ember._src.core import Primitive
from ember._src.primitives.control_flow.body_jaxprs import flatten_operands, trace_function
from ember._src.primitives.conv import conv_p
from ember._src.primitives.linalg import dot_general_p
from ember._src.primitives.remat import Offloadable, Recompute, Saveable, name_p, remat_p
from ember._src.transforms.arguments import normalize_argnums
from ember._src.tree.util import tree_map, tree_unflatten

# --------------------------------------------------------------------------------------------
# Naming a value


def checkpoint_name(x: Any, name: str) -> Any:
    """``x`` unchanged (each leaf of a pytree), named ``name`` for the checkpoint policies
    that select values by name (``save_only_these_names``, ...)."""
    if not isinstance(name, str):
        raise TypeError(
            f"checkpoint_name: the name must be a string, got {type(name).__name__}{errors.where()}"
        )
    return tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


# --------------------------------------------------------------------------------------------
# Policies: (primitive, *input avals, **params) -> may this equation's output be saved?


def everything_saveable(*_: Any, **__: Any) -> bool:
    """Save every value the backward pass needs, as without ``checkpoint``."""
    return True


def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Recompute everything from the function's inputs (``checkpoint``'s default)."""
    return False


@dataclass(frozen=True)
class _DotsSaveable:
    only_without_batch_dims: bool

    def __call__(self, primitive: Primitive, *avals: Any, **params: Any) -> bool:
        if primitive is dot_general_p:
            (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
            return not self.only_without_batch_dims or (not lhs_batch and not rhs_batch)
        return primitive is conv_p and not self.only_without_batch_dims


dots_saveable = checkpoint_dots = _DotsSaveable(False)
dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = _DotsSaveable(True)


@dataclass(frozen=True)
class _SaveOnlyTheseNames:
    names: frozenset[str]

    def __call__(self, primitive: Primitive, *avals: Any, **params: Any) -> bool:
        return primitive is name_p and params["name"] in self.names


@dataclass(frozen=True)
class _SaveAnyNamesButThese:
    names: frozenset[str]

    def __call__(self, primitive: Primitive, *avals: Any, **params: Any) -> bool:
        return primitive is name_p and params["name"] not in self.names


@dataclass(frozen=True)
class _SaveAnythingExceptTheseNames:
    # read by the remat rule: an array with one of these names is not saved under any name
    excluded_names: frozenset[str]

    def __call__(self, primitive: Primitive, *avals: Any, **params: Any) -> bool:
        return primitive is not name_p or params["name"] not in self.excluded_names


def save_only_these_names(*names: str) -> Callable[..., bool]:
    """Save only values named (``checkpoint_name``) with one of ``names``."""
    return _SaveOnlyTheseNames(_names("save_only_these_names", names))


def save_any_names_but_these(*names: str) -> Callable[..., bool]:
    """Save only named values, except those named with one of ``names``."""
    return _SaveAnyNamesButThese(_names("save_any_names_but_these", names))


def save_anything_except_these_names(*names: str) -> Callable[..., bool]:
    """Save any value, named or not, except those named with one of ``names``."""
    return _SaveAnythingExceptTheseNames(_names("save_anything_except_these_names", names))


def save_from_both_policies(policy_1: Callable[..., Any], policy_2: Callable[..., Any]):
    """Saveable where either policy says so (both must answer True or False)."""

    def policy(primitive: Primitive, *avals: Any, **params: Any) -> bool:
        answers = policy_1(primitive, *avals, **params), policy_2(primitive, *avals, **params)
        if not all(isinstance(a, bool) for a in answers):
            raise ValueError(
                f"save_from_both_policies: both policies must answer True or False, got "
                f"{answers[0]!r} and {answers[1]!r}; write the combined policy directly"
            )
        return answers[0] or answers[1]

    return policy


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable[..., Any]:
    """As ``dots_with_no_batch_dims_saveable``, offloading those values from memory
    ``offload_src`` to ``offload_dst`` (on ember: saved where they are)."""
    offloaded = Offloadable(
        _memory_kind("offload_dot_with_no_batch_dims", offload_src),
        _memory_kind("offload_dot_with_no_batch_dims", offload_dst),
    )

    def policy(primitive: Primitive, *avals: Any, **params: Any) -> Any:
        if dots_with_no_batch_dims_saveable(primitive, *avals, **params):
            return offloaded
        return Recompute

    return policy


def save_and_offload_only_these_names(
    *,
    names_which_can_be_saved: Iterable[str],
    names_which_can_be_offloaded: Iterable[str],
    offload_src: str,
    offload_dst: str,
) -> Callable[..., Any]:
    """Save the values named with ``names_which_can_be_saved``, offload those named with
    ``names_which_can_be_offloaded`` (on ember: saved where they are), recompute the rest."""
    what = "save_and_offload_only_these_names"
    saved = _names(what, tuple(names_which_can_be_saved))
    offloaded_names = _names(what, tuple(names_which_can_be_offloaded))
    if saved & offloaded_names:
        raise ValueError(
            f"{what}: names_which_can_be_saved and names_which_can_be_offloaded must not "
            f"share names, both have {sorted(saved & offloaded_names)}{errors.where()}"
        )
    offloaded = Offloadable(_memory_kind(what, offload_src), _memory_kind(what, offload_dst))

    def policy(primitive: Primitive, *avals: Any, **params: Any) -> Any:
        if primitive is name_p and params["name"] in saved:
            return Saveable
        if primitive is name_p and params["name"] in offloaded_names:
            return offloaded
        return Recompute

    return policy


def _names(what: str, names: Sequence[Any]) -> frozenset[str]:
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"{what}: names must be strings, got {type(name).__name__} {name!r}{errors.where()}"
            )
    return frozenset(names)


_MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")


def _memory_kind(what: str, kind: Any) -> str:
    if kind not in _MEMORY_KINDS:
        raise ValueError(
            f"{what}: memory kind {kind!r} is not one of {', '.join(_MEMORY_KINDS)}{errors.where()}"
        )
    return kind


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=checkpoint_dots,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=checkpoint_dots_with_no_batch_dims,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
)


# --------------------------------------------------------------------------------------------
# The user-facing decorator


def checkpoint(
    fun: Callable[..., Any],
    *,
    prevent_cse: bool = True,
    policy: Callable[..., bool] | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable[..., Any]:
    """``fun``, recomputed in the backward pass instead of storing its intermediates."""
    policy = policy or nothing_saveable
    if not callable(policy):
        raise errors.EmberTypeError(
            f"checkpoint: policy must be callable, got {policy!r}{errors.where()}"
        )

    @functools.wraps(fun)
    def remat_fun(*args: Any, **kwargs: Any) -> Any:
        static = set(normalize_argnums(static_argnums, len(args), "static_argnums"))
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree, avals = flatten_operands((dynamic, kwargs), "checkpoint")

        def call(dyn: tuple, kw: dict) -> Any:
            it = iter(dyn)
            return fun(*[args[i] if i in static else next(it) for i in range(len(args))], **kw)

        consts, jaxpr, out_tree = trace_function(call, in_tree, avals, _name(fun))
        outs = remat_p.bind(
            *consts, *leaves, jaxpr=jaxpr, policy=policy, prevent_cse=bool(prevent_cse)
        )
        return tree_unflatten(out_tree, outs)

    return remat_fun


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", "checkpointed")


remat = checkpoint
