"""Argument handling shared by the transformations: argnums, static args, axis specs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray, Tracer
from ember._src.tree.util import PyTreeDef, tree_flatten


def normalize_argnums(argnums: int | Sequence[int], num_args: int, what: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    result = []
    for n in nums:
        if not isinstance(n, (int, np.integer)):
            raise TypeError(f"{what} must be ints, got {n!r}")
        if not -num_args <= n < num_args:
            raise ValueError(
                f"{what}={argnums} is out of range for a call with {num_args} positional "
                f"arguments{errors.where()}"
            )
        result.append(int(n) % num_args)
    return tuple(result)


def static_names_to_nums(fun: Callable[..., Any], names: Sequence[str]) -> dict[str, int]:
    """Map static argument names to positions, so passing them positionally works too."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return {}
    return {
        p.name: i
        for i, p in enumerate(parameters)
        if p.name in names and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


class HashableStatic:
    """Wraps a static argument so an unhashable one fails with a clear message."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: Any, label: str, fun_name: str):
        try:
            self._hash = hash(value)
        except TypeError as err:
            raise errors.EmberTypeError(
                f"static argument {label} of {fun_name} must be hashable (it keys jit's cache), "
                f"got a value of type {type(value).__name__}: {err}. Pass a tuple instead of a "
                f"list, or make the argument dynamic{errors.where()}"
            ) from None
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HashableStatic) and _equal(self.value, other.value)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"static({self.value!r})"


def _equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return a is b


def leaf_aval(leaf: Any, label: str) -> ShapedArray:
    try:
        return core.get_aval(leaf)
    except errors.EmberTypeError as err:
        if isinstance(leaf, (np.ndarray, np.generic)):  # NumPy data of a non-numeric dtype
            raise errors.EmberTypeError(f"{label}: {err}") from None
        raise errors.EmberTypeError(
            f"{label} is a {type(leaf).__name__}, which is not a valid ember type: arguments "
            f"must be arrays, scalars or pytrees of them (mark it static to pass other "
            f"values){errors.where()}"
        ) from None


def check_float_inputs(avals: Sequence[ShapedArray], what: str, allow_int: bool) -> None:
    for aval in avals:
        if dtypes.is_inexact(aval.dtype):
            continue
        if allow_int and (dtypes.is_integer(aval.dtype) or aval.dtype == dtypes.bool_):
            continue
        raise errors.EmberTypeError(
            f"{what} requires real- or complex-valued inputs (an inexact dtype), but got "
            f"{dtypes.short_name(aval.dtype)}. For integer or boolean inputs use vjp, or pass "
            f"allow_int=True{errors.where()}"
        )


def check_output_dtype(aval: ShapedArray, what: str, holomorphic: bool) -> None:
    """Reverse mode needs a real- or complex-valued output; complex ones need holomorphic."""
    if not dtypes.is_inexact(aval.dtype):
        raise errors.EmberTypeError(
            f"{what} requires a real- or complex-valued output, got "
            f"{dtypes.short_name(aval.dtype)}{errors.where()}"
        )
    if aval.dtype.kind == "c" and not holomorphic:
        raise errors.EmberTypeError(
            f"{what} of a complex-valued output needs holomorphic=True{errors.where()}"
        )


def flatten_axes(name: str, treedef: PyTreeDef, axis_tree: Any, tree_value: Any) -> list[Any]:
    """Broadcast an axis specification (a prefix of the tree) to one entry per leaf.

    ``None`` and ints are leaves of the specification (unlike in ordinary pytrees).
    """
    result: list[Any] = []
    _broadcast_prefix(name, axis_tree, tree_value, result)
    if len(result) != treedef.num_leaves:
        raise ValueError(
            f"{name} specification {axis_tree!r} does not match the argument structure "
            f"{treedef}{errors.where()}"
        )
    return result


def _broadcast_prefix(name: str, prefix: Any, tree: Any, out: list[Any]) -> None:
    if prefix is None or isinstance(prefix, (int, np.integer)):
        out.extend([prefix] * len(tree_flatten(tree)[0]))
        return
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(prefix) != len(tree):
            raise ValueError(
                f"{name} has {len(prefix)} entries but the value has {len(tree)}: {prefix!r}"
                f"{errors.where()}"
            )
        for p, t in zip(prefix, tree):
            _broadcast_prefix(name, p, t, out)
        return
    if isinstance(prefix, dict) and isinstance(tree, dict):
        if set(prefix) != set(tree):
            raise ValueError(
                f"{name} keys {sorted(prefix)} differ from the value's keys {sorted(tree)}"
                f"{errors.where()}"
            )
        for key in tree_flatten(tree)[1].aux:
            _broadcast_prefix(name, prefix[key], tree[key], out)
        return
    # Any other container (a namedtuple, a registered class): its axes may stop anywhere above
    # the value's leaves, each one then standing for the whole subtree below it.
    leaves_p, def_p = tree_flatten(prefix, is_leaf=lambda x: x is None)
    try:
        subtrees = def_p.flatten_up_to(tree)
    except ValueError as e:
        raise ValueError(
            f"{name} specification {prefix!r} is not a prefix of the value's structure "
            f"{tree_flatten(tree)[1]}: {e}{errors.where()}"
        ) from None
    for axis, subtree in zip(leaves_p, subtrees):
        out.extend([axis] * len(tree_flatten(subtree)[0]))


def is_tracer(x: Any) -> bool:
    return isinstance(x, Tracer)
