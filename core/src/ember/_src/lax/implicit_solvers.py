"""``lax.custom_linear_solve`` and ``lax.custom_root``: solvers differentiated implicitly."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval, raise_to_shaped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.lax.operators import stop_gradient
from ember._src.primitives.control_flow.body_jaxprs import trace_function
from ember._src.transforms import autodiff
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.tree.util import tree_flatten, tree_map, tree_unflatten

# --------------------------------------------------------------------------------------------
# Implicitly differentiated solvers. The user's function (matvec, or f) is traced once so
# that the values it closes over become explicit arguments: their tangents drive the
# derivative of the solution, through the implicit function theorem.


def _closure_convert(fun: Callable[[Any], Any], example: Any, name: str):
    """``(consts, call)`` with ``call(consts, x) == fun(x)`` for ``x`` shaped like
    ``example``."""
    leaves, args_tree = tree_flatten((example,))
    avals = [raise_to_shaped(get_aval(leaf)) for leaf in leaves]
    consts, closed, out_tree = trace_function(fun, args_tree, avals, name)

    def call(consts: Sequence[Any], x: Any) -> Any:
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *consts, *tree_flatten(x)[0])
        return tree_unflatten(out_tree, outs)

    return list(consts), call


def _zero_tangent(x: Any) -> Any:
    aval = get_aval(x)
    if dtypes.is_inexact(aval.dtype):
        return np.zeros(aval.shape, aval.dtype)
    return np.zeros(aval.shape, dtypes.float0)


def _check_same_structure(name: str, what: Any, like: Any) -> None:
    if tree_flatten(what)[1] != tree_flatten(like)[1]:
        raise TypeError(
            f"{name} must return a value with the structure of its input, got "
            f"{tree_flatten(what)[1]} for {tree_flatten(like)[1]}{errors.where()}"
        )


def _implicit_solve(what: str, fun: Callable[[Any], Any], start: Any, solve: Callable,
                    has_aux: bool, tangent: Callable) -> Callable[[Any], Any]:  # fmt: skip
    """``start -> solve(fun, start)`` as a ``custom_jvp`` function of ``start`` and of the
    values ``fun`` closes over. Its tangent is ``tangent(apply, run, consts, tangents, x)``
    at the solution ``x``, where ``apply(consts, y)`` is ``fun(y)`` and ``run(consts, s)``
    solves again; an auxiliary output gets a zero tangent."""
    consts, apply = _closure_convert(fun, start, what)

    def run(consts: list[Any], start: Any) -> Any:
        return solve(lambda x: apply(consts, x), start)

    solver = custom_jvp(run)

    @solver.defjvp
    def solver_jvp(primals, tangents):
        out = solver(*primals)
        x = out[0] if has_aux else out
        x_dot = tangent(apply, run, primals[0], tangents, x)
        if has_aux:
            return out, (x_dot, tree_map(_zero_tangent, out[1]))
        return out, x_dot

    return lambda start: solver(consts, start)


def custom_linear_solve(
    matvec: Callable[[Any], Any],
    b: Any,
    solve: Callable[[Callable[[Any], Any], Any], Any],
    transpose_solve: Callable[[Callable[[Any], Any], Any], Any] | None = None,
    symmetric: bool = False,
    has_aux: bool = False,
) -> Any:
    """``solve(matvec, b)``, differentiated implicitly: with ``A x = b``, the tangent is
    ``solve(matvec, b' - A' x)`` for the tangents of ``b`` and of the values ``matvec``
    closes over (the solver's own iterations are never differentiated).

    Reverse mode transposes that tangent computation, so ``solve`` must be made of
    transposable operations there; ``transpose_solve`` and ``symmetric`` are accepted for
    JAX compatibility but not needed.
    """

    def tangent(apply, run, consts, tangents, x):
        consts_dot, b_dot = tangents
        _, a_dot_x = autodiff.jvp(lambda c: apply(c, x), (consts,), (consts_dot,))
        x_dot = run(consts, tree_map(lambda u, v: u - v, b_dot, a_dot_x))
        return x_dot[0] if has_aux else x_dot

    solver = _implicit_solve("custom_linear_solve matvec", matvec, b, solve, has_aux, tangent)
    out = solver(b)
    _check_same_structure("custom_linear_solve's solve", out[0] if has_aux else out, b)
    return out


def custom_root(
    f: Callable[[Any], Any],
    initial_guess: Any,
    solve: Callable[[Callable[[Any], Any], Any], Any],
    tangent_solve: Callable[[Callable[[Any], Any], Any], Any],
    has_aux: bool = False,
) -> Any:
    """``solve(f, initial_guess)``, a root of ``f``, differentiated implicitly: with
    ``f(x; c) = 0``, the tangent is ``-tangent_solve(df/dx, df/dc c')`` for the values
    ``c`` that ``f`` closes over (the initial guess gets no derivative)."""

    def tangent(apply, run, consts, tangents, x):
        consts_dot, _ = tangents
        _, f_dot = autodiff.jvp(lambda c: apply(c, x), (consts,), (consts_dot,))
        _, linear = autodiff.linearize(lambda y: apply(consts, y), x)
        return tree_map(lambda t: -t, tangent_solve(linear, f_dot))

    solver = _implicit_solve("custom_root f", f, initial_guess, solve, has_aux, tangent)
    out = solver(stop_gradient(initial_guess))
    _check_same_structure("custom_root's solve", out[0] if has_aux else out, initial_guess)
    return out
