"""Chained and tensor products and their inverses: ``multi_dot`` (in the cheapest order),
``tensorinv`` and ``tensorsolve``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.numpy import creation, manipulation
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg import (
    inv,
    solve,
)
from ember._src.numpy.operands import shape_of
from ember._src.transforms.jit import jit


def _chain_order(dims: Sequence[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits (dynamic programming
    over the chain's static dimensions; matrix i is dims[i] x dims[i + 1])."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            options = [
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j)
            ]
            cost[i][j], split[i][j] = min(options)
    return split


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """``arrays[0] @ arrays[1] @ ...`` in the order with the fewest scalar multiplications;
    the first and last may be vectors."""
    arrays = [creation.asarray(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expected at least two arrays, got {len(arrays)}")
    ndims = [get_aval(x).ndim for x in arrays]
    if any(d != 2 for d in ndims[1:-1]) or ndims[0] not in (1, 2) or ndims[-1] not in (1, 2):
        raise ValueError(
            f"multi_dot: the arrays must be matrices (the first and last may be vectors), got "
            f"shapes {[shape_of(x) for x in arrays]}{errors.where()}"
        )
    first_vector, last_vector = ndims[0] == 1, ndims[-1] == 1
    if first_vector:
        arrays[0] = manipulation.reshape(arrays[0], (1, -1))
    if last_vector:
        arrays[-1] = manipulation.reshape(arrays[-1], (-1, 1))
    for left, right in zip(arrays, arrays[1:]):
        if shape_of(left)[1] != shape_of(right)[0]:
            raise ValueError(
                f"multi_dot: shapes {[shape_of(x) for x in arrays]} do not chain{errors.where()}"
            )
    dims = [shape_of(arrays[0])[0]] + [shape_of(x)[1] for x in arrays]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, len(arrays) - 1)
    rows = () if first_vector else (dims[0],)
    columns = () if last_vector else (dims[-1],)
    return manipulation.reshape(out, rows + columns)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` read as a linear map from its last axes to its first ``ind``:
    ``tensordot(tensorinv(a, ind), a, ind)`` is the identity."""
    a = creation.asarray(a)
    if not isinstance(ind, (int, np.integer)) or isinstance(ind, bool) or ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind!r}")
    shape = shape_of(a)
    outputs, inputs = shape[:ind], shape[ind:]
    if math.prod(outputs) != math.prod(inputs):
        raise ValueError(
            f"tensorinv: the first ind={ind} axes of a (shape {shape}) must have as many "
            f"elements as the others{errors.where()}"
        )
    matrix = manipulation.reshape(a, (math.prod(outputs), math.prod(inputs)))
    return manipulation.reshape(_inv_compiled(matrix), inputs + outputs)


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    """The x with ``tensordot(a, x, x.ndim) == b``; ``axes`` of ``a`` move to the end first."""
    a, b = creation.asarray(a), creation.asarray(b)
    if axes is not None:
        a = manipulation.moveaxis(a, axes, tuple(range(-len(axes), 0)))
    leading, unknowns = shape_of(a)[: get_aval(b).ndim], shape_of(a)[get_aval(b).ndim :]
    if leading != shape_of(b):
        raise ValueError(
            f"tensorsolve: the leading axes of a {shape_of(a)} must match b's shape "
            f"{shape_of(b)}{errors.where()}"
        )
    if math.prod(leading) != math.prod(unknowns):
        raise ValueError(
            f"tensorsolve: a {shape_of(a)} must have as many unknowns as b {shape_of(b)} has "
            f"equations{errors.where()}"
        )
    matrix = manipulation.reshape(a, (math.prod(leading), math.prod(unknowns)))
    flat = _solve_compiled(matrix, manipulation.reshape(b, (math.prod(leading),)))
    return manipulation.reshape(flat, unknowns)


_inv_compiled = jit(inv, inline=True)


_solve_compiled = jit(solve, inline=True)
