"""``custom_vmap`` and ``sequential_vmap``: functions that bring their own batching rule.

As JAX's ``jax.custom_batching``: a ``custom_vmap`` function behaves as the function it wraps,
except under ``vmap``, where its rule ``rule(axis_size, in_batched, *args) -> (out,
out_batched)`` runs instead. ``in_batched`` is a list with one pytree of bools per argument;
batched arguments carry the batch axis first. ``out_batched`` is a pytree of bools with the
output's structure. Each call is traced to a jaxpr and bound as one ``custom_vmap_call``
(``primitives/custom_batching.py``), which carries the rule through ``jit``, nested ``vmap``
and ``jvp``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import EvalTrace, current_trace, get_aval
from ember._src.primitives.control_flow.loops import sequential_map
from ember._src.primitives.custom_batching import custom_vmap_call_p, rule_name
from ember._src.primitives.jaxpr_transforms import trace_const_free
from ember._src.tree.util import (
    PyTreeDef,
    flatten_fun,
    tree_flatten,
    tree_map,
    tree_unflatten,
)


class custom_vmap:  # noqa: N801 - JAX's name
    """A function with a custom batching rule (``def_vmap``)."""

    def __init__(self, fun: Callable[..., Any]):
        if not callable(fun):
            raise TypeError(f"custom_vmap expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable[..., tuple[Any, Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        # As JAX's: the ``def...`` methods of a custom function inside (custom_jvp under
        # custom_vmap) are reachable through this one.
        if name.startswith("def"):
            return getattr(self.fun, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
        """Set the rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``;
        returns it unchanged, so that it can be used as a decorator."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "<unnamed function>")
        args = _positional(self.fun, name, args, kwargs)
        if self.vmap_rule is None:
            raise AttributeError(
                f"No batching rule defined for custom_vmap function {name} using def_vmap."
            )
        leaves, in_tree = tree_flatten(args)
        if isinstance(current_trace(), EvalTrace):
            # No transformation is applied: the function is all there is to run.
            return self.fun(*args)
        flat = flatten_fun(self.fun, in_tree)
        consts, call = trace_const_free(flat, [get_aval(x) for x in leaves], name)
        out_tree = flat.out_tree
        outs = custom_vmap_call_p.bind(
            *consts,
            *leaves,
            call=call,
            rule=UserRule(self.vmap_rule, in_tree, out_tree),
            num_consts=len(consts),
        )
        return tree_unflatten(out_tree, outs)


def _positional(fun: Callable[..., Any], name: str, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return args
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"The input arguments to the custom_vmap-decorated function {name} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{e}"
        ) from e
    bound.apply_defaults()
    return bound.args


class UserRule:
    """The user's pytree rule as the flat rule ``custom_vmap_call`` carries."""

    def __init__(self, rule: Callable[..., Any], in_tree: PyTreeDef, out_tree: PyTreeDef):
        functools.update_wrapper(self, rule)
        self.rule = rule
        self.in_tree = in_tree
        self.out_tree = out_tree

    def __call__(self, size: int, in_batched: Sequence[bool], args: Sequence[Any]):
        arg_trees = tree_unflatten(self.in_tree, list(args))
        batched_trees = tree_unflatten(self.in_tree, list(in_batched))
        result = self.rule(size, list(batched_trees), *arg_trees)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise ValueError(
                f"custom vmap rule ({rule_name(self.rule)}) must return a pair "
                f"(out, out_batched){errors.where()}"
            )
        out, out_batched = result
        outs, tree = tree_flatten(out)
        flat_batched, batched_tree = tree_flatten(out_batched)
        if tree != batched_tree:
            raise ValueError(
                f"structure of output value and output batching specification returned by "
                f"custom vmap rule ({rule_name(self.rule)}) do not match.\n"
                f"Output values: {tree}\nBatching spec: {batched_tree}{errors.where()}"
            )
        if tree != self.out_tree:
            raise ValueError(
                f"structure of output returned by custom vmap rule ({rule_name(self.rule)}) "
                f"does not match that of original custom-vmapped function.\n"
                f"Original output: {self.out_tree}\nRule output: {tree}{errors.where()}"
            )
        return outs, [bool(b) for b in flat_batched]

    def __str__(self) -> str:
        return str(self.rule)


def sequential_vmap(f: Callable[..., Any]) -> custom_vmap:
    """A ``custom_vmap`` function whose batching rule runs it once per batch element, in a
    loop (a ``scan``): for functions that do not support batch axes themselves."""
    function = custom_vmap(f)

    @function.def_vmap
    def rule(axis_size, in_batched, *args):
        if not any(tree_flatten(in_batched)[0]):
            # The jvp's rule asks this when vmap batches an argument's primal but not its
            # tangent, or the reverse (jacfwd does): the loop has nothing to run over, and
            # running the function batched would defeat the loop. JAX fails here too.
            raise NotImplementedError(
                f"sequential_vmap function {getattr(f, '__name__', '')}: the jvp of a vmap "
                f"that batches an argument's primal but not its tangent (or the reverse, as "
                f"jacfwd does) is not supported, as in JAX; batch both alike{errors.where()}"
            )
        mapped, fixed = _split(in_batched, list(args))

        def one(mapped_slice):
            return function(*_merge(in_batched, mapped_slice, fixed))

        out = sequential_map(one, mapped)
        return out, tree_map(lambda _: True, out)

    return function


def _split(mask: Any, tree: Any) -> tuple[Any, Any]:
    """``tree``'s leaves where ``mask`` is True (else None), and those where it is False."""
    mapped = tree_map(lambda m, x: x if m else None, mask, tree)
    fixed = tree_map(lambda m, x: None if m else x, mask, tree)
    return mapped, fixed


def _merge(mask: Any, mapped: Any, fixed: Any) -> list[Any]:
    return tree_map(lambda m, a, b: a if m else b, mask, mapped, fixed)
