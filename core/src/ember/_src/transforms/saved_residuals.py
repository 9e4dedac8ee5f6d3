"""``saved_residuals`` / ``print_saved_residuals``: which values reverse-mode differentiation
of a function keeps from its forward pass for its backward pass, and where each comes from.

The forward pass of ``vjp(f)`` is traced into a jaxpr whose outputs are the residuals (the
values the linear backward jaxpr captures); each is then found among that jaxpr's arguments
(``from the argument W1``), its constants, or the equations that made it (``output of sin
from file.py:3:9 (g)``, ``named 'a' from ...`` for a ``checkpoint_name``), in that order, as
JAX prints them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

from ember._src.core import ShapedArray
from ember._src.interpreters import ad
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import Jaxpr, Literal
from ember._src.primitives.call import jit_p
from ember._src.primitives.remat import name_p
from ember._src.transforms.arguments import leaf_aval
from ember._src.tree.keys import keystr
from ember._src.tree.util import flatten_fun, tree_flatten, tree_flatten_with_path

# The names transformations give the calls they make of a jitted function: ``known(jvp(f))``.
_TRANSFORMED_CALL = re.compile(r"^(?:known|unknown|jvp|transpose|vmap)\((.*)\)$")


def saved_residuals(f: Callable[..., Any], *args: Any, **kwargs: Any) -> list[tuple[Any, str]]:
    """``(type, where it comes from)`` for each value ``vjp(f, *args, **kwargs)`` saves."""
    leaves, in_tree = tree_flatten((args, kwargs))
    avals = [leaf_aval(x, f"argument leaf #{i}") for i, x in enumerate(leaves)]
    flat_f = flatten_fun(lambda a, kw: f(*a, **kw), in_tree)

    def forward(*primals: Any) -> list[Any]:
        _, linear = ad.linearize_flat(flat_f, primals)
        return list(linear.jaxpr.consts)

    closed = trace_to_jaxpr(forward, avals, name="saved_residuals")
    return _describe(closed.jaxpr, argument_names(f, args, kwargs))


def print_saved_residuals(f: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Print a line per value ``vjp(f, *args, **kwargs)`` saves for the backward pass:
    ``f32[5] output of cos from file.py:3:9 (g)``."""
    for aval, source in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short(short_dtypes=True)} {source}")


def _describe(jaxpr: Jaxpr, names: Sequence[str]) -> list[tuple[ShapedArray, str]]:
    residual_ids = {id(v) for v in jaxpr.outvars if not isinstance(v, Literal)}
    results = [(v.aval, "from a literal") for v in jaxpr.outvars if isinstance(v, Literal)]
    results += [(v.aval, "from a constant") for v in jaxpr.constvars if id(v) in residual_ids]
    for i, v in enumerate(jaxpr.invars):
        if id(v) in residual_ids:
            name = names[i] if i < len(names) else ""
            source = f"from the argument {name}" if name else f"from the argument at {i}"
            results.append((v.aval, source))
    for eqn in jaxpr.eqns:
        where = eqn.source_info.summary() if eqn.source_info is not None else ""
        for v in eqn.outvars:
            if id(v) not in residual_ids:
                continue
            if eqn.primitive is name_p:
                source = f"named '{eqn.params['name']}' from {where}"
            elif eqn.primitive is jit_p:
                name = _function_name(eqn.params["name"])
                source = f"output of jitted function '{name}' from {where}"
            else:
                source = f"output of {eqn.primitive.name} from {where}"
            results.append((v.aval, source))
    return results


def _function_name(call_name: str) -> str:
    while match := _TRANSFORMED_CALL.match(call_name):
        call_name = match.group(1)
    return call_name


def argument_names(f: Callable[..., Any], args: Sequence[Any], kwargs: dict) -> list[str]:
    """A name per leaf of ``(args, kwargs)``, as JAX names arguments in its messages: the
    parameter's name and the leaf's key path (``params[0]``, ``batch['x']``), or
    ``args[i]...`` when ``f`` has no signature the arguments bind to."""
    named: list[tuple[str, Any]] | None = None
    try:
        signature = inspect.signature(f)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        pass
    else:
        var_keyword = next(
            (p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None
        )
        named = [
            (name, value)
            for name, value in bound.arguments.items()
            if name not in kwargs and name != var_keyword
        ]
        named += [
            (name if name in bound.arguments else f"{var_keyword}['{name}']", value)
            for name, value in sorted(kwargs.items())
        ]
    if named is None:
        named = [("args", tuple(args))]
        named += [(f"kwargs['{k}']", v) for k, v in sorted(kwargs.items())]
    return [
        f"{name}{keystr(path)}"
        for name, value in named
        for path, _ in tree_flatten_with_path(value)[0]
    ]
