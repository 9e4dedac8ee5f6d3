"""Numerical calculus on sampled data: finite-difference ``gradient``, the ``trapezoid``
rule, phase ``unwrap`` and differences (``diff``, ``ediff1d``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.operands import (
    as_operand,
    canonicalize_axes,
    canonicalize_axis,
    dtype_of,
    promote_dtypes,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import cumsum
from ember._src.primitives.shape import broadcast_in_dim, convert_element_type
from ember._src.primitives.slicing import slice_along
from ember._src.transforms.jit import jit


def _along(v: Any, axis: int, ndim: int) -> Any:
    """A 1-D ``v`` shaped to broadcast along ``axis`` of an ``ndim``-D array."""
    shape = [1] * ndim
    shape[axis] = shape_of(v)[0]
    return manipulation.reshape(v, tuple(shape))


# --------------------------------------------------------------------------------------------
# gradient


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int | None = None) -> Any:
    """Derivatives of sampled ``f`` along each axis: second-order central differences inside,
    one-sided differences of order ``edge_order`` (1 or 2, as NumPy) at the edges. Spacings
    (``varargs``) are one scalar for every axis, or one scalar or 1-D coordinate array per
    axis."""
    if edge_order not in (None, 1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}{errors.where()}")
    order = edge_order or 1
    f = creation.asarray_inexact(f)
    ndim = get_aval(f).ndim
    axes = canonicalize_axes(axis, ndim)
    spacings = _spacings(varargs, len(axes))
    results = []
    for ax, spacing in zip(axes, spacings):
        if shape_of(f)[ax] < order + 1:
            raise ValueError(
                f"gradient: axis {ax} has {shape_of(f)[ax]} samples; at least {order + 1} are "
                f"needed for edge_order={order}{errors.where()}"
            )
        results.append(_gradient_along(f, ax, spacing, order))
    return results[0] if len(results) == 1 else results


def _spacings(varargs: tuple, n_axes: int) -> list[Any]:
    if not varargs:
        return [1.0] * n_axes
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [varargs[0]] * n_axes
    if len(varargs) != n_axes:
        raise TypeError(
            f"gradient: {len(varargs)} spacings given for {n_axes} axes; give one for all or "
            f"one per axis{errors.where()}"
        )
    return list(varargs)


def _gradient_along(f: Any, axis: int, spacing: Any, order: int) -> Any:
    n, ndim = shape_of(f)[axis], get_aval(f).ndim
    first, last = slice_along(f, axis, 0, 1), slice_along(f, axis, n - 1, n)
    before, centre, after = (
        slice_along(f, axis, 0, n - 2),
        slice_along(f, axis, 1, n - 1),
        slice_along(f, axis, 2, n),
    )
    if np.ndim(spacing) == 0:
        h = convert_element_type(creation.asarray(spacing), dtype_of(f))
        inside = enp.divide(enp.subtract(after, before), enp.multiply(h, 2))
        start = enp.divide(enp.subtract(slice_along(f, axis, 1, 2), first), h)
        end = enp.divide(enp.subtract(last, slice_along(f, axis, n - 2, n - 1)), h)
        if order == 2:
            start, end = _second_order_edges(f, axis, h, h, h, h)
    else:
        x = convert_element_type(creation.asarray(as_operand(spacing)), dtype_of(f))
        if get_aval(x).ndim != 1 or shape_of(x)[0] != n:
            raise ValueError(
                f"gradient: coordinates along axis {axis} must be 1-D of length {n}, got shape "
                f"{shape_of(x)}{errors.where()}"
            )
        dx = _along(enp.subtract(x[1:], x[:-1]), axis, ndim)
        h1, h2 = slice_along(dx, axis, 0, n - 2), slice_along(dx, axis, 1, n - 1)
        # The second-order formula for uneven steps h1 (behind) and h2 (ahead).
        total = enp.add(h1, h2)
        weight_before = enp.negative(enp.divide(h2, enp.multiply(h1, total)))
        weight_centre = enp.divide(enp.subtract(h2, h1), enp.multiply(h1, h2))
        weight_after = enp.divide(h1, enp.multiply(h2, total))
        inside = enp.add(
            enp.add(enp.multiply(weight_before, before), enp.multiply(weight_centre, centre)),
            enp.multiply(weight_after, after),
        )
        start = enp.divide(
            enp.subtract(slice_along(f, axis, 1, 2), first), slice_along(dx, axis, 0, 1)
        )
        end = enp.divide(
            enp.subtract(last, slice_along(f, axis, n - 2, n - 1)),
            slice_along(dx, axis, n - 2, n - 1),
        )
        if order == 2:
            start, end = _second_order_edges(
                f,
                axis,
                slice_along(dx, axis, 0, 1),
                slice_along(dx, axis, 1, 2),
                slice_along(dx, axis, n - 3, n - 2),
                slice_along(dx, axis, n - 2, n - 1),
            )
    return manipulation.concatenate([start, inside, end], axis=axis)


def _second_order_edges(f: Any, axis: int, a1: Any, a2: Any, b1: Any, b2: Any) -> tuple:
    """One-sided second-order differences at both ends, from the first two steps (a1, a2)
    and the last two (b1, b2): the derivative of the parabola through three samples."""
    n = shape_of(f)[axis]

    def at(i: int) -> Any:
        return slice_along(f, axis, i, i + 1)

    mul, div, add = enp.multiply, enp.divide, enp.add
    a12 = add(a1, a2)
    start = add(
        add(
            mul(enp.negative(div(add(mul(a1, 2), a2), mul(a1, a12))), at(0)),
            mul(div(a12, mul(a1, a2)), at(1)),
        ),
        mul(enp.negative(div(a1, mul(a2, a12))), at(2)),
    )
    b12 = add(b1, b2)
    end = add(
        add(
            mul(div(b2, mul(b1, b12)), at(n - 3)),
            mul(enp.negative(div(b12, mul(b1, b2))), at(n - 2)),
        ),
        mul(div(add(mul(b2, 2), b1), mul(b2, b12)), at(n - 1)),
    )
    return start, end


# --------------------------------------------------------------------------------------------
# Integration, unwrapping, differences


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of sampled ``y`` by the trapezoidal rule, at points ``x`` (1-D along
    ``axis``, or ``y``'s shape) or evenly ``dx`` apart."""
    y = creation.asarray_inexact(y)
    ndim = get_aval(y).ndim
    axis = canonicalize_axis(axis, ndim)
    n = shape_of(y)[axis]
    if x is None:
        widths = convert_element_type(creation.asarray(dx), dtype_of(y))
    else:
        x = creation.asarray_inexact(x)
        y, x = promote_dtypes(y, x)
        if get_aval(x).ndim == 1:
            if shape_of(x)[0] != n:
                raise ValueError(
                    f"trapezoid: x has {shape_of(x)[0]} points but y has {n} along axis {axis}"
                    f"{errors.where()}"
                )
            x = _along(x, axis, ndim)
        m = shape_of(x)[axis]
        widths = enp.subtract(slice_along(x, axis, 1, m), slice_along(x, axis, 0, m - 1))
    heights = enp.add(slice_along(y, axis, 1, n), slice_along(y, axis, 0, max(n - 1, 0)))
    return enp.multiply(reductions.sum(enp.multiply(widths, heights), axis=axis), 0.5)


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) between neighbours
    along ``axis`` replaced by their equivalents modulo ``period``."""
    p = creation.asarray(p)
    if not dtypes.is_inexact(dtype_of(p)):  # as JAX: the default float, whatever the width
        p = convert_element_type(p, dtypes.default_float())
    axis = canonicalize_axis(axis, get_aval(p).ndim)
    if shape_of(p)[axis] < 2:
        return p
    period = convert_element_type(creation.asarray(period), dtype_of(p))
    half = enp.divide(period, 2)
    discont = (
        half if discont is None else convert_element_type(creation.asarray(discont), dtype_of(p))
    )
    return _unwrap(p, discont, period, axis)


@functools.partial(jit, inline=True, static_argnames="axis")  # one executable eagerly
def _unwrap(p: Any, discont: Any, period: Any, axis: int) -> Any:
    n = shape_of(p)[axis]
    half = enp.divide(period, 2)
    steps = enp.subtract(slice_along(p, axis, 1, n), slice_along(p, axis, 0, n - 1))
    wrapped = enp.subtract(enp.remainder(enp.add(steps, half), period), half)
    # A step of exactly +half wraps to -half; keep its direction, as NumPy does.
    wrapped = enp.where(
        enp.logical_and(enp.equal(wrapped, enp.negative(half)), enp.greater(steps, 0)),
        half,
        wrapped,
    )
    correction = enp.subtract(wrapped, steps)
    correction = enp.where(enp.less(enp.abs(steps), discont), 0, correction)
    shifts = cumsum(correction, axis=axis)
    zero = creation.zeros_like(slice_along(p, axis, 0, 1))
    return enp.add(p, manipulation.concatenate([zero, shifts], axis=axis))


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of the flattened ``ary``, with ``to_begin`` and ``to_end`` (flattened, in
    ``ary``'s dtype) attached."""
    flat = manipulation.ravel(creation.asarray(as_operand(ary)))
    size = shape_of(flat)[0]
    parts = [enp.subtract(flat[1:], flat[: max(size - 1, 0)])]
    if to_begin is not None:
        begin = manipulation.ravel(creation.asarray(as_operand(to_begin)))
        parts.insert(0, convert_element_type(begin, dtype_of(flat)))
    if to_end is not None:
        end = manipulation.ravel(creation.asarray(as_operand(to_end)))
        parts.append(convert_element_type(end, dtype_of(flat)))
    return manipulation.concatenate(parts)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    a = creation.asarray(a)
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    parts = [p for p in (prepend, a, append) if p is not None]
    if len(parts) > 1:
        shape = list(shape_of(a))
        fixed = []
        for p in parts:
            p = creation.asarray(p)
            if not shape_of(p):
                shape[axis] = 1
                p = broadcast_in_dim(p, tuple(shape), ())
            fixed.append(p)
        a = manipulation.concatenate(fixed, axis=axis)
    # Booleans have no subtraction: their difference is "changed", as in NumPy and JAX.
    op = enp.not_equal if get_aval(a).dtype == dtypes.bool_ else enp.subtract
    for _ in range(n):
        size = shape_of(a)[axis]
        a = op(slice_along(a, axis, 1, size), slice_along(a, axis, 0, size - 1))
    return a
