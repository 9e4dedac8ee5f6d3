"""``lax.map``: a function over the leading axis, sequentially or in vmapped chunks."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ember._src import errors
from ember._src.core import get_aval
from ember._src.lax.slicing import slice_in_dim
from ember._src.primitives.control_flow.loops import sequential_map
from ember._src.primitives.shape import reshape as _reshape
from ember._src.primitives.slicing import concatenate
from ember._src.transforms.vmap import vmap
from ember._src.tree.util import tree_flatten, tree_map


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:
    """``f`` over the leading axis of ``xs``, sequentially; with ``batch_size``, ``f`` is
    vmapped over chunks of that many slices (the remainder is one last, smaller chunk)."""
    if batch_size is None:
        return sequential_map(f, xs)
    batch_size = operator.index(batch_size)
    if batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be positive, got {batch_size}{errors.where()}")
    leaves = tree_flatten(xs)[0]
    if not leaves:
        return sequential_map(f, xs)
    length = get_aval(leaves[0]).shape[0]
    full = (length // batch_size) * batch_size
    batched_f = vmap(f)
    pieces = []
    if full:
        chunks = tree_map(lambda x: _chunked(slice_in_dim(x, 0, full), batch_size), xs)
        ys = sequential_map(batched_f, chunks)
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
