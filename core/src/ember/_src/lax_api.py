"""lax functions that are compositions rather than primitives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import errors
from ember._src.core import get_aval
from ember._src.jit import jit
from ember._src.numpy.elementwise import logaddexp
from ember._src.ops import special_more
from ember._src.ops.control_flow.associative_scan import associative_scan
from ember._src.ops.elementwise import select_n, stop_gradient_p
from ember._src.ops.shape import broadcast_in_dim
from ember._src.tree_util import tree_map


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of the given sizes."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, sizes + aval.shape, dims)


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
