"""lax functions that are compositions rather than primitives."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval, raise_to_shaped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.lax import special as special_more
from ember._src.lax.slicing import slice_in_dim
from ember._src.numpy.advanced_indexing import take_along_axis
from ember._src.numpy.elementwise import logaddexp
from ember._src.numpy.sorting import argsort, cummax as _cummax, cummin as _cummin, top_k as _top_k
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.control_flow.body_jaxprs import trace_function
from ember._src.primitives.control_flow.loops import map as _map
from ember._src.primitives.conv import conv_general_dilated as _conv_general_dilated
from ember._src.primitives.linalg import dot_general as _dot_general
from ember._src.primitives.rng_bit_generator import (
    RandomAlgorithm,
    rng_bit_generator as _rng_bit_generator,
)
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim as _broadcast_in_dim,
    convert_element_type as _convert_element_type,
    iota as _iota,
    reduce_sum as _reduce_sum,
    reshape as _reshape,
    transpose,
)
from ember._src.primitives.sharding_constraint import laid_out as _laid_out
from ember._src.primitives.slicing import concatenate, slice_op
from ember._src.primitives.stop_gradient import stop_gradient_p
from ember._src.transforms import autodiff
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap
from ember._src.tree.util import tree_flatten, tree_map, tree_unflatten


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Add leading dimensions of the given sizes."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return _laid_out(_broadcast_in_dim(operand, sizes + aval.shape, dims), out_sharding)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` holds, else ``on_false`` (shapes must match)."""
    return select_n(pred, on_false, on_true)


def stop_gradient(x: Any) -> Any:
    """Identity on a pytree, with a zero derivative."""
    return tree_map(stop_gradient_p.bind, x)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``log(cumsum(exp(operand)))`` along ``axis``, computed stably."""
    aval = get_aval(operand)
    if not -aval.ndim <= axis < max(aval.ndim, 1):
        raise ValueError(f"cumlogsumexp: axis {axis} out of range for rank {aval.ndim}")
    if aval.dtype.kind not in "fc":
        raise TypeError(
            f"cumlogsumexp needs a floating-point operand, got {aval.str_short()}{errors.where()}"
        )
    return _cumlogsumexp(operand, axis % max(aval.ndim, 1), bool(reverse))


def _cumlogsumexp_impl(operand: Any, axis: int, reverse: bool) -> Any:
    return associative_scan(logaddexp, operand, reverse=reverse, axis=axis)


_cumlogsumexp = jit(_cumlogsumexp_impl, static_argnums=(1, 2))


# The special functions are long chains of elementwise operations: compiled as one program
# each, rather than dispatched one operation at a time.
_bessel_i0e = jit(special_more.bessel_i0e)
_bessel_i1e = jit(special_more.bessel_i1e)
_zeta = jit(special_more.zeta)
_betainc = jit(special_more.betainc)


def bessel_i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0."""
    return _bessel_i0e(x)


def bessel_i1e(x: Any) -> Any:
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1."""
    return _bessel_i1e(x)


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function ``sum_k (q + k) ** -x``."""
    return _zeta(x, q)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    return _betainc(a, b, x)


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


def _extreme_k(name: str, operand: Any, k: int, axis: int, descending: bool):
    aval = get_aval(operand)
    if not aval.ndim or not -aval.ndim <= axis < aval.ndim:
        raise ValueError(
            f"{name}: reduction_dimension {axis} is out of range for {aval.str_short()}"
            f"{errors.where()}"
        )
    axis %= aval.ndim
    if not 0 <= k <= aval.shape[axis]:
        raise ValueError(f"{name}: k={k} must lie in [0, {aval.shape[axis]}]{errors.where()}")
    order = argsort(operand, axis, descending=descending, dtype=np.int32)  # int32, as JAX
    limits = list(aval.shape)
    limits[axis] = k
    indices = slice_op(order, (0,) * aval.ndim, limits)
    return take_along_axis(operand, indices, axis), indices


def approx_max_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
) -> tuple[Any, Any]:
    """The ``k`` largest entries along ``reduction_dimension`` and their indices, largest
    first (computed exactly)."""
    return _extreme_k("approx_max_k", operand, int(k), reduction_dimension, True)


def approx_min_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
) -> tuple[Any, Any]:
    """The ``k`` smallest entries along ``reduction_dimension`` and their indices, smallest
    first (computed exactly)."""
    return _extreme_k("approx_min_k", operand, int(k), reduction_dimension, False)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast ``operand`` to ``new_dtype`` (a strongly typed result)."""
    return _convert_element_type(operand, new_dtype)


def iota(dtype: Any, size: int) -> Any:
    """The 1-D array ``[0, 1, ..., size - 1]`` of ``dtype`` (see broadcasted_iota for n-D)."""
    return _iota(dtype, (operator.index(size),), 0)


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maximum along ``axis`` (from the end when ``reverse``)."""
    return _cummax(operand, axis, reverse)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minimum along ``axis`` (from the end when ``reverse``)."""
    return _cummin(operand, axis, reverse)


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The ``k`` largest entries along ``axis`` and their indices, largest first."""
    ndim = get_aval(operand).ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"top_k: axis={axis} is out of range for rank {ndim}{errors.where()}")
    axis %= ndim
    if axis == ndim - 1:
        return _top_k(operand, k)
    to_last = [d for d in range(ndim) if d != axis] + [axis]
    back = list(np.argsort(to_last))
    values, indices = _top_k(transpose(operand, to_last), k)
    return transpose(values, back), transpose(indices, back)


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:
    """``f`` over the leading axis of ``xs``, sequentially; with ``batch_size``, ``f`` is
    vmapped over chunks of that many slices (the remainder is one last, smaller chunk)."""
    if batch_size is None:
        return _map(f, xs)
    batch_size = operator.index(batch_size)
    if batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be positive, got {batch_size}{errors.where()}")
    leaves = tree_flatten(xs)[0]
    if not leaves:
        return _map(f, xs)
    length = get_aval(leaves[0]).shape[0]
    full = (length // batch_size) * batch_size
    batched_f = vmap(f)
    pieces = []
    if full:
        chunks = tree_map(lambda x: _chunked(slice_in_dim(x, 0, full), batch_size), xs)
        ys = _map(batched_f, chunks)
        pieces.append(tree_map(lambda y: _unchunked(y, full), ys))
    if full < length:
        pieces.append(batched_f(tree_map(lambda x: slice_in_dim(x, full, length), xs)))
    if len(pieces) == 1:
        return pieces[0]
    return tree_map(lambda a, b: concatenate([a, b], 0), *pieces)


def _chunked(x: Any, batch_size: int) -> Any:
    """(n * batch_size, ...) -> (n, batch_size, ...)."""
    shape = get_aval(x).shape
    return _reshape(x, (shape[0] // batch_size, batch_size, *shape[1:]))


def _unchunked(y: Any, length: int) -> Any:
    """(n, batch_size, ...) -> (n * batch_size, ...)."""
    return _reshape(y, (length, *get_aval(y).shape[2:]))


def broadcast_in_dim(
    operand: Any,
    shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` broadcast to ``shape``; its axis i becomes ``broadcast_dimensions[i]``."""
    return _laid_out(_broadcast_in_dim(operand, shape, broadcast_dimensions), out_sharding)


def reshape(
    operand: Any,
    new_sizes: Sequence[int],
    dimensions: Sequence[int] | None = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` reshaped to ``new_sizes`` (transposed by ``dimensions`` first, if given)."""
    return _laid_out(_reshape(operand, new_sizes, dimensions), out_sharding)


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """The sum of ``operand`` over ``axes``."""
    return _laid_out(_reduce_sum(operand, axes), out_sharding)


def dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """General dot product: contract and batch the axes ``dimension_numbers`` name."""
    out = _dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    return _laid_out(out, out_sharding)


def conv_general_dilated(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """General dilated convolution (XLA's ConvGeneralDilated)."""
    out = _conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        feature_group_count, batch_group_count, precision, preferred_element_type,
    )  # fmt: skip
    return _laid_out(out, out_sharding)


def rng_bit_generator(
    key: Any,
    shape: Sequence[int],
    dtype: Any = np.uint32,
    algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT,
    *,
    out_sharding: Any = None,
) -> tuple[Any, Any]:
    """(new key, random bits of ``shape`` and ``dtype``); ``out_sharding`` lays out the bits."""
    new_key, bits = _rng_bit_generator(key, shape, dtype, algorithm)
    return new_key, _laid_out(bits, out_sharding)
