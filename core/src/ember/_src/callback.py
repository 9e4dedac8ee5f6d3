"""Calling Python from ember programs: ``pure_callback``, ``io_callback``, ``debug.callback``
and ``debug.print``, with JAX's signatures.

Each flattens the user's arguments, binds one of the callback primitives (see
``primitives/callbacks``) with a ``HostCallable`` that rebuilds them, and unflattens the
results. The callback sees ember Arrays (as JAX's see jax Arrays), except ``debug.print``,
which formats the NumPy values directly.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray, Tracer, is_arraylike
from ember._src.execution import placement
from ember._src.execution.compiled import effects_barrier as effects_barrier
from ember._src.primitives.callbacks import (
    HostCallable,
    debug_callback_p,
    io_callback_p,
    pure_callback_p,
)
from ember._src.tree.util import tree_flatten, tree_unflatten


def _result_avals(result_shape_dtypes: Any, what: str) -> tuple[Any, tuple[ShapedArray, ...]]:
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise errors.EmberTypeError(
                f"{what}: result_shape_dtypes must be a pytree of objects with .shape and "
                f".dtype (ember.ShapeDtypeStruct, arrays), got {type(leaf).__name__}"
                f"{errors.where()}"
            )
        avals.append(ShapedArray(tuple(leaf.shape), dtypes.canonicalize(leaf.dtype)))
    return tree, tuple(avals)


def _as_arrays(values: tuple[Any, ...]) -> list[Any]:
    return [placement.device_put_numpy(np.array(v)) for v in values]


def _flat_callback(
    callback: Callable[..., Any], in_tree: Any, out_tree: Any | None, what: str
) -> HostCallable:
    name = getattr(callback, "__name__", type(callback).__name__)

    def flat(*values: Any) -> list[Any]:
        args, kwargs = tree_unflatten(in_tree, _as_arrays(values))
        result = callback(*args, **kwargs)
        if out_tree is None:
            return []
        leaves, tree = tree_flatten(result)
        if tree != out_tree:
            raise errors.CallbackError(
                f"the {what} {name}{host.where} returned a value of structure {tree}, but "
                f"result_shape_dtypes declares {out_tree}"
            )
        return leaves

    host = HostCallable(flat, name, errors.where())
    return host


def _flatten_args(args: tuple, kwargs: dict, what: str) -> tuple[list[Any], Any]:
    leaves, tree = tree_flatten((args, kwargs))
    for leaf in leaves:
        if not is_arraylike(leaf):
            raise errors.EmberTypeError(
                f"{what}: its arguments must be arrays (or pytrees of them), got a "
                f"{type(leaf).__name__}{errors.where()}"
            )
    return leaves, tree


def pure_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    vmap_method: str | None = None,
    **kwargs: Any,
) -> Any:
    """Call the pure Python function ``callback(*args, **kwargs)`` from inside a program.

    As ``jax.pure_callback``: ``result_shape_dtypes`` is a pytree of ``ShapeDtypeStruct``s
    that the results must match; the program may drop the call when its results are unused,
    or call it again. ``vmap_method`` says how it is vectorised: ``"sequential"`` (a loop),
    ``"expand_dims"`` (the callback gets the batch as a leading axis, unbatched arguments a
    leading axis of 1) or ``"broadcast_all"`` (every argument with the batch axis).
    """
    leaves, in_tree = _flatten_args(args, kwargs, "pure_callback")
    out_tree, avals = _result_avals(result_shape_dtypes, "pure_callback")
    host = _flat_callback(callback, in_tree, out_tree, "pure_callback")
    outs = pure_callback_p.bind(*leaves, callback=host, result_avals=avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def io_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    ordered: bool = False,
    **kwargs: Any,
) -> Any:
    """Call ``callback(*args, **kwargs)``, which has side effects, from inside a program.

    As ``jax.experimental.io_callback``: never dropped; with ``ordered=True`` its calls happen
    in program order, also across calls of compiled programs. Not differentiable.
    """
    leaves, in_tree = _flatten_args(args, kwargs, "io_callback")
    out_tree, avals = _result_avals(result_shape_dtypes, "io_callback")
    host = _flat_callback(callback, in_tree, out_tree, "io_callback")
    outs = io_callback_p.bind(*leaves, callback=host, result_avals=avals, ordered=bool(ordered))
    return tree_unflatten(out_tree, outs)


def debug_callback(
    callback: Callable[..., Any],
    *args: Any,
    ordered: bool = False,
    partitioned: bool = False,
    **kwargs: Any,
) -> None:
    """Call ``callback(*args, **kwargs)`` for its side effects (``jax.debug.callback``).

    Under ``grad`` it sees the primal values; under ``vmap`` it is called once per element;
    with ``ordered=True`` the calls happen in program order.
    """
    leaves, in_tree = _flatten_args(args, kwargs, "debug.callback")
    host = _flat_callback(callback, in_tree, None, "debug.callback")
    debug_callback_p.bind(*leaves, callback=host, result_avals=(), ordered=bool(ordered))


def debug_print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the arguments' values, from inside any
    transformation (``jax.debug.print``). Arguments that are not arrays are formatted as
    they are."""
    if not isinstance(fmt, str):
        raise errors.EmberTypeError(
            f"debug.print: the format must be a str, got {type(fmt).__name__}{errors.where()}"
        )
    _check_format(fmt, args, kwargs)
    leaves, tree = tree_flatten((args, kwargs))
    dynamic = [isinstance(x, Tracer) or is_arraylike(x) for x in leaves]
    arrays = [x for x, d in zip(leaves, dynamic) if d]
    static = [x for x, d in zip(leaves, dynamic) if not d]

    def show(*values: Any) -> list[Any]:
        it_v, it_s = iter(values), iter(static)
        merged = [next(it_v) if d else next(it_s) for d in dynamic]
        call_args, call_kwargs = tree_unflatten(tree, merged)
        # One write per line: the devices of a shard_map print from several threads.
        sys.stdout.write(fmt.format(*call_args, **call_kwargs) + "\n")
        return []

    printed = _printed_pieces(fmt, args, dynamic)
    host = HostCallable(show, "debug.print", errors.where(), printed)
    debug_callback_p.bind(*arrays, callback=host, result_avals=(), ordered=bool(ordered))


def _printed_pieces(fmt: str, args: tuple, dynamic: list[bool]) -> tuple[Any, ...]:
    """``fmt`` as ``HostCallable.printed`` describes it: literal text (static arguments
    formatted in) and ``(operand, spec)`` where an array operand goes."""
    # Where each positional argument's leaves start among all leaves (kwargs come after).
    starts, count = [], 0
    for arg in args:
        starts.append(count)
        count += len(tree_flatten(arg)[0])
    pieces: list[Any] = []
    auto = 0

    def text(literal: str) -> None:  # adjacent literal text is one piece
        if pieces and isinstance(pieces[-1], str):
            pieces[-1] += literal
        elif literal:
            pieces.append(literal)

    for literal, field, spec, conversion in string.Formatter().parse(fmt):
        text(literal)
        if field is None:
            continue
        key = field.split(".")[0].split("[")[0]
        plain = key == field and not conversion
        if key == "":
            key, auto = str(auto), auto + 1
        leaves = tree_flatten(args[int(key)])[0] if key.isdigit() else None
        if leaves is None or not plain:
            pieces.append((None, field))  # a keyword, attribute, item or !r: host only
        elif len(leaves) == 1 and dynamic[starts[int(key)]]:
            pieces.append((sum(dynamic[: starts[int(key)]]), spec or ""))
        elif not any(dynamic[starts[int(key)] : starts[int(key)] + len(leaves)]):
            text(format(args[int(key)], spec or ""))
        else:
            pieces.append((None, field))  # a pytree holding arrays
    return tuple(pieces)


def _check_format(fmt: str, args: tuple, kwargs: dict) -> None:
    """Refuse a format that names arguments it is not given, now rather than mid-run."""
    auto = 0
    for _, field, _, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        key = field.split(".")[0].split("[")[0]
        if key == "":
            key, auto = str(auto), auto + 1
        if key.isdigit():
            if int(key) >= len(args):
                raise ValueError(
                    f"debug.print: the format {fmt!r} uses positional argument {key}, but "
                    f"{len(args)} were given{errors.where()}"
                )
        elif key not in kwargs:
            raise ValueError(
                f"debug.print: the format {fmt!r} uses {key!r}, which is not among the "
                f"keyword arguments{errors.where()}"
            )
