"""Differentiation users call: grad, value_and_grad, jvp, vjp, linearize.

Each one flattens its pytree arguments, runs the flat transformation from
``ember._src.interpreters.ad`` and rebuilds pytrees for the result.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.execution import placement
from ember._src.interpreters import ad
from ember._src.interpreters.ad_util import zeros
from ember._src.primitives.shape import broadcast_in_dim
from ember._src.primitives.sharding_constraint import retype
from ember._src.runtime.array import Array
from ember._src.runtime.sharding import SingleDeviceSharding
from ember._src.transforms.arguments import (
    check_float_inputs,
    check_output_dtype,
    leaf_aval,
    normalize_argnums,
)
from ember._src.tree.ops import Partial
from ember._src.tree.util import flatten_fun, tree_flatten, tree_map, tree_unflatten


def _ones_like(aval: ShapedArray, like: Any = None) -> Any:
    ones = broadcast_in_dim(np.ones((), aval.dtype), aval.shape, ())
    # An output committed to one device gets its seed cotangent there too: eager grad of
    # arrays on a non-default device would otherwise mix devices in the backward pass.
    if type(like) is Array and type(like._sharding) is SingleDeviceSharding:
        return placement.to_device(ones, like._sharding.device)
    return ones


def _materialize(value: Any, aval: ShapedArray, like: Any = None) -> Any:
    """A user-facing value for a (possibly symbolic-zero) tangent or cotangent; a zero is put
    on the device of ``like`` (the primal it belongs to) when that is a committed Array.
    Under Explicit mesh axes it is typed as its primal (``aval``) is."""
    if type(value) is Zero:
        if value.aval.dtype == dtypes.float0:
            return np.zeros(value.aval.shape, dtypes.float0)
        if type(like) is Array and type(like._sharding) is SingleDeviceSharding:
            return placement.to_device(zeros(value.aval), like._sharding.device)
        value = zeros(value.aval)
    return _as_user_value(retype(value, aval.typed_sharding, like), like)


def _as_user_value(value: Any, like: Any) -> Any:
    """Derivatives are ember arrays (a seed passed straight through, as by the identity's
    grad, is still host data), weakly typed where their primal ``like`` is, as in JAX: the
    derivative at ``2.0`` promotes like ``2.0``."""
    weak = like is not None and get_aval(like).weak_type
    if isinstance(value, np.ndarray):
        device = None
        if type(like) is Array and type(like._sharding) is SingleDeviceSharding:
            device = like._sharding.device
        return placement.device_put_numpy(value, device, weak_type=weak)
    if weak and type(value) is Array and not value.aval.weak_type:
        # the same buffer under the weak type: no computation (buffers are immutable)
        return Array(value.aval.update(weak_type=True), value._buffer, value._sharding)
    return value


def value_and_grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """A function returning ``(fun(*args), gradient of fun w.r.t. args[argnums])``."""

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args), "argnums")
        diff_args = tuple(args[i] for i in nums)
        leaves, in_tree = tree_flatten(diff_args)
        avals = [leaf_aval(x, f"differentiated argument leaf #{i}") for i, x in enumerate(leaves)]
        check_float_inputs(avals, "grad", allow_int)
        aux_store: list[Any] = []

        def call(*diff_args: Any) -> Any:
            new_args = list(args)
            for i, value in zip(nums, diff_args):
                new_args[i] = value
            out = fun(*new_args, **kwargs)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise errors.EmberTypeError(
                        f"with has_aux=True, {_name(fun)} must return a pair (output, aux), got "
                        f"{type(out).__name__}{errors.where()}"
                    )
                out, aux = out
                aux_store.append(aux)
            _check_scalar_output(out, fun, holomorphic)
            return out

        (out,), linear = ad.linearize_flat(flatten_fun(call, in_tree), leaves)
        out_aval = get_aval(out)
        cts = linear.transpose([_ones_like(tangent_aval(out_aval), out)])
        grads = [_materialize(ct, tangent_aval(a), x) for ct, a, x in zip(cts, avals, leaves)]
        grads_tree = tree_unflatten(in_tree, grads)
        grad_result = grads_tree[0] if isinstance(argnums, int) else grads_tree
        if has_aux:
            aux = _strip_jvp(aux_store[0], linear)
            return (out, aux), grad_result
        return out, grad_result

    return value_and_grad_fun


def _strip_jvp(tree: Any, linear: Any) -> Any:
    """Auxiliary outputs leave linearisation as plain (primal) values."""
    return tree_map(lambda x: x.primal if isinstance(x, ad.JVPTracer) else x, tree)


def _check_scalar_output(out: Any, fun: Callable[..., Any], holomorphic: bool) -> None:
    try:
        aval = get_aval(out)
    except errors.EmberTypeError:
        raise errors.EmberTypeError(
            f"grad requires {_name(fun)} to return a scalar array, got {type(out).__name__}"
            f"{errors.where()}"
        ) from None
    if aval.shape != ():
        raise errors.EmberTypeError(
            f"grad is only defined for scalar-output functions; {_name(fun)} returned shape "
            f"{aval.shape}. Use vjp or jacrev for non-scalar outputs{errors.where()}"
        )
    check_output_dtype(aval, "grad", holomorphic)


def grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """The gradient of a scalar-valued ``fun`` with respect to ``args[argnums]``."""
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        value, g = value_and_grad_fun(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return grad_fun


def jvp(
    fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Any, Any]:
    """Forward mode: ``(fun(*primals), the directional derivative along tangents)``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp expects primals and tangents as tuples or lists of arguments")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    primal_leaves, tree = tree_flatten(tuple(primals))
    tangent_leaves, tangent_tree = tree_flatten(tuple(tangents))
    if tree != tangent_tree:
        raise TypeError(
            f"jvp: primal structure {tree} differs from tangent structure {tangent_tree}"
        )
    for i, (p, t) in enumerate(zip(primal_leaves, tangent_leaves)):
        expected = tangent_aval(leaf_aval(p, f"primal leaf #{i}"))
        got = get_aval(t)
        if expected.shape != got.shape or (
            expected.dtype != got.dtype and got.dtype != dtypes.float0
        ):
            raise errors.EmberTypeError(
                f"jvp: tangent leaf #{i} has type {got.str_short()} but the primal needs "
                f"{expected.str_short()}{errors.where()}"
            )
    flat_fun = flatten_fun(fun, tree)
    tangents_in = [
        Zero(tangent_aval(get_aval(p))) if get_aval(t).dtype == dtypes.float0 else t
        for p, t in zip(primal_leaves, tangent_leaves)
    ]
    outs, out_tangents = ad.jvp_flat(flat_fun, primal_leaves, tangents_in)
    out_tangents = [
        _materialize(t, tangent_aval(get_aval(p)), p) for t, p in zip(out_tangents, outs)
    ]
    out_tree = flat_fun.out_tree
    return tree_unflatten(out_tree, outs), tree_unflatten(out_tree, out_tangents)


def linearize(fun: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the JVP cheaply."""
    leaves, tree = tree_flatten(primals)
    flat_fun = flatten_fun(fun, tree)
    outs, linear = ad.linearize_flat(flat_fun, leaves)
    out_tree = flat_fun.out_tree

    def f_jvp(*tangents: Any) -> Any:
        tangent_leaves, tangent_tree = tree_flatten(tangents)
        if tangent_tree != tree:
            raise TypeError(f"linearized function expects tangents shaped like {tree}")
        result = linear(*tangent_leaves)
        materialized = [_materialize(t, a) for t, a in zip(result, linear.out_avals)]
        return tree_unflatten(out_tree, materialized)

    return tree_unflatten(out_tree, outs), f_jvp


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(fun(*primals), vjp_fun)`` where ``vjp_fun(cotangent)`` pulls it back to the inputs."""
    leaves, tree = tree_flatten(primals)
    aux_store: list[Any] = []

    def call(*args: Any) -> Any:
        out = fun(*args)
        if has_aux:
            out, aux = out
            aux_store.append(aux)
        return out

    flat_fun = flatten_fun(call, tree)
    outs, linear = ad.linearize_flat(flat_fun, leaves)
    out_tree = flat_fun.out_tree
    in_avals = [tangent_aval(get_aval(x)) for x in leaves]

    def pullback(*residuals_and_cotangent: Any) -> tuple[Any, ...]:
        *residuals, cotangent = residuals_and_cotangent
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise TypeError(
                f"vjp function expects a cotangent with the output's structure {out_tree}, got "
                f"{ct_tree}"
            )
        for i, (ct, out) in enumerate(zip(ct_leaves, outs)):
            if get_aval(ct).shape != get_aval(out).shape:
                raise errors.EmberTypeError(
                    f"vjp: cotangent leaf #{i} has shape {get_aval(ct).shape}, the output has "
                    f"{get_aval(out).shape}{errors.where()}"
                )
        cts = linear.transpose(ct_leaves, residuals)
        cts = [_materialize(ct, a, x) for ct, a, x in zip(cts, in_avals, leaves)]
        return tree_unflatten(tree, cts)

    # As JAX's, the vjp function is a pytree whose leaves are the residuals: it can be passed
    # through jit, and its residuals inspected.
    vjp_fun = Partial(pullback, *linear.jaxpr.consts)
    result = tree_unflatten(out_tree, outs)
    if has_aux:
        return result, vjp_fun, _strip_jvp(aux_store[0], linear)
    return result, vjp_fun


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)
