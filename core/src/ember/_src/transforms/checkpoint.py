"""``checkpoint`` (``remat``): trade compute for memory in reverse-mode differentiation.

A checkpointed function is one call of the ``remat`` primitive (``primitives/remat.py``), whose
partial-evaluation rule saves only what the *policy* calls saveable for the backward pass and
recomputes the rest there.

Policies (``ember.checkpoint_policies``) decide per equation, as in JAX:
``nothing_saveable`` (the default), ``everything_saveable``, ``dots_saveable`` and
``dots_with_no_batch_dims_saveable``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import Primitive
from ember._src.primitives.control_flow.body_jaxprs import flatten_operands, trace_function
from ember._src.primitives.linalg import dot_general_p
from ember._src.primitives.remat import remat_p
from ember._src.transforms.arguments import normalize_argnums
from ember._src.tree.util import tree_unflatten

# --------------------------------------------------------------------------------------------
# Policies: (primitive, *input avals, **params) -> may this equation's output be saved?


def everything_saveable(primitive: Primitive, *avals: Any, **params: Any) -> bool:
    return True


def nothing_saveable(primitive: Primitive, *avals: Any, **params: Any) -> bool:
    return False


def dots_saveable(primitive: Primitive, *avals: Any, **params: Any) -> bool:
    return primitive is dot_general_p


def dots_with_no_batch_dims_saveable(primitive: Primitive, *avals: Any, **params: Any) -> bool:
    if primitive is not dot_general_p:
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


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
