"""Jacobians and Hessians: ``jacfwd`` (vmap of jvp), ``jacrev`` (vmap of vjp), ``hessian``.

For inputs ``x`` (a pytree) and outputs ``y`` (a pytree), the Jacobian is a pytree shaped
like ``y`` whose leaves are pytrees shaped like ``x``; the leaf for output leaf ``y_j`` and
input leaf ``x_i`` has shape ``y_j.shape + x_i.shape``, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray, get_aval
from ember._src.primitives.shape import broadcast_to_shape, convert_element_type, reshape
from ember._src.transforms.arguments import check_output_dtype, leaf_aval, normalize_argnums
from ember._src.transforms.autodiff import jvp, vjp
from ember._src.transforms.vmap import vmap
from ember._src.tree.util import PyTreeDef, tree_flatten, tree_unflatten


def _diff_setup(fun, argnums, args, kwargs, what, holomorphic, allow_int=False):
    nums = normalize_argnums(argnums, len(args), "argnums")
    leaves, in_tree = tree_flatten(tuple(args[i] for i in nums))
    avals = [leaf_aval(x, f"{what} input leaf #{i}") for i, x in enumerate(leaves)]
    for aval in avals:
        if not (allow_int and (dtypes.is_integer(aval.dtype) or aval.dtype == dtypes.bool_)):
            _check_dtype(aval, what, holomorphic)

    def with_leaves(*diff_leaves: Any) -> Any:
        new_args = list(args)
        for i, value in zip(nums, tree_unflatten(in_tree, diff_leaves)):
            new_args[i] = value
        return fun(*new_args, **kwargs)

    return leaves, in_tree, avals, with_leaves


def _check_dtype(aval: ShapedArray, what: str, holomorphic: bool) -> None:
    if holomorphic and aval.dtype.kind != "c":
        raise errors.EmberTypeError(
            f"{what} with holomorphic=True needs complex inputs, got "
            f"{dtypes.short_name(aval.dtype)}{errors.where()}"
        )
    if not holomorphic and not dtypes.is_float(aval.dtype):
        raise errors.EmberTypeError(
            f"{what} requires real-valued floating-point inputs, got "
            f"{dtypes.short_name(aval.dtype)} (complex inputs need holomorphic=True)"
            f"{errors.where()}"
        )


def _basis(avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """Rows of an identity matrix, cut and reshaped per leaf: leaf i is (total, *shape_i)."""
    total = sum(a.size for a in avals)
    dtype = np.result_type(*[a.dtype for a in avals]) if avals else np.float32
    eye = np.eye(total, dtype=dtype)
    pieces, start = [], 0
    for a in avals:
        pieces.append(eye[:, start : start + a.size].reshape((total, *a.shape)).astype(a.dtype))
        start += a.size
    return pieces


def _nest(
    out_tree: PyTreeDef, in_tree: PyTreeDef, blocks: list[list[Any]], single_arg: bool
) -> Any:
    """Assemble ``blocks[j][i]`` (output leaf j, input leaf i) into JAX's nested pytree."""
    per_output = []
    for row in blocks:
        inner = tree_unflatten(in_tree, row)
        per_output.append(inner[0] if single_arg else inner)
    return tree_unflatten(out_tree, per_output)


def jacfwd(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable[..., Any]:
    """The Jacobian of ``fun`` by forward mode: one jvp per input element, vectorised."""

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree, avals, f = _diff_setup(fun, argnums, args, kwargs, "jacfwd", holomorphic)

        aux_parts: list[Any] = []

        def with_aux(*xs: Any) -> Any:
            out, aux = _pair(f(*xs))
            aux_parts.append(_AuxParts(aux))
            return out, aux_parts[-1].arrays

        def push(*tangents: Any) -> Any:
            if not has_aux:
                out, tangent = jvp(f, tuple(leaves), tangents)
                return out, _int_zeros(out, tangent)
            # aux's arrays go through jvp as outputs (so they come back plain values); their
            # tangents are dropped.
            (out, aux), (tangent, _) = jvp(with_aux, tuple(leaves), tangents)
            return out, _int_zeros(out, tangent), aux

        # One vmapped jvp gives the output (unbatched) and its columns (each output leaf:
        # (*out_shape, total)); ``fun`` runs once, on arrays, as in JAX.
        basis = _basis(avals)
        results = vmap(push, out_axes=(None, -1, None) if has_aux else (None, -1))(*basis)
        out, columns = results[0], results[1]
        if has_aux:
            aux = aux_parts[0].rebuild(results[2])
        out_leaves, out_tree = tree_flatten(out)
        blocks = []
        for y, col in zip(out_leaves, tree_flatten(columns)[0]):
            y_shape = get_aval(y).shape
            row, start = [], 0
            for a in avals:
                piece = col[..., start : start + a.size]
                row.append(reshape(piece, (*y_shape, *a.shape)))
                start += a.size
            blocks.append(row)
        jac = _nest(out_tree, in_tree, blocks, isinstance(argnums, int))
        return (jac, aux) if has_aux else jac

    return jacfun


def _int_zeros(out: Any, tangent: Any) -> Any:
    """Tangents with float0 leaves (of integer outputs) as zeros of the output's dtype, as
    JAX's Jacobians have them."""
    out_leaves, tree = tree_flatten(out)
    t_leaves = tree_flatten(tangent)[0]
    fixed = [
        np.zeros(get_aval(y).shape, get_aval(y).dtype) if get_aval(t).dtype == dtypes.float0 else t
        for y, t in zip(out_leaves, t_leaves)
    ]
    return tree_unflatten(tree, fixed)


class _AuxParts:
    """An aux output split into its array leaves (which may be traced) and the rest."""

    def __init__(self, aux: Any):
        aux_leaves, self.tree = tree_flatten(aux)
        self.is_array = [_is_array(x) for x in aux_leaves]
        self.arrays = [x for x, a in zip(aux_leaves, self.is_array) if a]
        self.others = [x for x, a in zip(aux_leaves, self.is_array) if not a]

    def rebuild(self, arrays: Sequence[Any]) -> Any:
        arrays, others = iter(arrays), iter(self.others)
        return tree_unflatten(
            self.tree, [next(arrays) if a else next(others) for a in self.is_array]
        )


def _is_array(x: Any) -> bool:
    try:
        get_aval(x)
    except errors.EmberTypeError:
        return False
    return True


def _pair(out: Any) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"a function differentiated with has_aux=True must return a pair (output, aux), "
            f"got {type(out).__name__}{errors.where()}"
        )
    return tuple(out)


def jacrev(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """The Jacobian of ``fun`` by reverse mode: one vjp per output element, vectorised."""

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree, avals, f = _diff_setup(
            fun, argnums, args, kwargs, "jacrev", holomorphic, allow_int
        )
        if has_aux:
            out, pullback, aux = vjp(f, *leaves, has_aux=True)
        else:
            out, pullback = vjp(f, *leaves)
        out_leaves, out_tree = tree_flatten(out)
        out_avals = [get_aval(y) for y in out_leaves]
        for aval in out_avals:
            check_output_dtype(aval, "jacrev", holomorphic)
        basis = tree_unflatten(out_tree, _basis(out_avals))
        rows = vmap(pullback)(basis)  # per input leaf: (total_out, *in_shape)
        row_leaves = list(rows)
        blocks, start = [], 0
        for y_aval in out_avals:
            block = []
            for x_aval, r in zip(avals, row_leaves):
                shape = (*y_aval.shape, *x_aval.shape)
                if get_aval(r).dtype == dtypes.float0:  # an integer input (allow_int): zeros
                    block.append(_zeros(shape, x_aval))
                    continue
                piece = r[start : start + y_aval.size]
                block.append(reshape(piece, shape))
            blocks.append(block)
            start += y_aval.size
        jac = _nest(out_tree, in_tree, blocks, isinstance(argnums, int))
        return (jac, aux) if has_aux else jac

    return jacfun


def _zeros(shape: tuple, aval: ShapedArray) -> Any:
    """Zeros of ``aval``'s dtype (weakness kept), as JAX's Jacobians of integer inputs."""
    return broadcast_to_shape(
        convert_element_type(np.zeros((), aval.dtype), aval.dtype, weak_type=aval.weak_type), shape
    )


def hessian(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable[..., Any]:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(
        jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
        argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
    )
