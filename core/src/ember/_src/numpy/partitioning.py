"""Ordering beyond sort: lexsort, partition, argpartition, sort_complex.

``partition`` and ``argpartition`` return a full sort, which satisfies their contract (the
``kth`` element in its sorted place, none larger before it, none smaller after); NumPy and
JAX leave the order inside each part unspecified.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.operands import canonicalize_axis
from ember._src.numpy.sorting import argsort, sort
from ember._src.primitives.arithmetic import complex as make_complex
from ember._src.primitives.shape import iota_along
from ember._src.primitives.sort import sort as lax_sort


def lexsort(keys: Any, axis: int = -1) -> Any:
    """Indices that sort by several keys: the last key is the primary one, earlier keys
    break ties (a stable, lexicographic sort)."""
    keys = [creation.asarray(k) for k in _key_list(keys)]
    if not keys:
        raise errors.EmberTypeError(
            f"lexsort: need a sequence of keys with len > 0{errors.where()}"
        )
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) != 1:
        raise ValueError(
            f"lexsort: all keys need to be the same shape, got {[get_aval(k).shape for k in keys]}"
            f"{errors.where()}"
        )
    shape = shapes.pop()
    if not shape:
        raise np.exceptions.AxisError(f"lexsort: keys must have at least one axis{errors.where()}")
    axis = canonicalize_axis(axis, len(shape))
    positions = iota_along(dtypes.default_int(), shape, axis)
    *_, order = lax_sort((*reversed(keys), positions), axis, is_stable=True, num_keys=len(keys))
    return order


def _key_list(keys: Any) -> list[Any]:
    if isinstance(keys, (list, tuple)):
        return list(keys)
    keys = creation.asarray(keys)
    if get_aval(keys).ndim == 0:
        raise TypeError(
            f"lexsort: keys must be a sequence of arrays or a 2-D array{errors.where()}"
        )
    return [keys[i] for i in range(get_aval(keys).shape[0])]


def _kth(kth: Any, length: int, name: str) -> int:
    kth = core.concrete_or_error(kth, f"{name}'s kth")
    if np.ndim(kth):
        raise NotImplementedError(f"{name}: kth must be a single integer, got {kth!r}")
    kth = operator.index(kth)
    if not -length <= kth < length:
        raise ValueError(f"{name}: kth(={kth}) out of bounds ({length}){errors.where()}")
    return kth


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """``a`` reordered along ``axis`` so that position ``kth`` holds the element a sort would
    put there, smaller ones before it and larger ones after it."""
    a = creation.asarray(a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim)
    _kth(kth, get_aval(a).shape[axis], "partition")
    return sort(a, axis)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """Indices that partition ``a`` along ``axis`` around position ``kth`` (int32 even under
    x64, as JAX's, which come from ``lax.top_k``)."""
    a = creation.asarray(a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim)
    _kth(kth, get_aval(a).shape[axis], "argpartition")
    return argsort(a, axis, dtype=dtypes.int32)


def sort_complex(a: Any) -> Any:
    """``a`` sorted along its last axis by real part, then imaginary part, as complex."""
    a = creation.asarray(a)
    dtype = get_aval(a).dtype
    if get_aval(a).ndim == 0:
        raise np.exceptions.AxisError(
            f"sort_complex: a must have at least one axis{errors.where()}"
        )
    if dtype.kind != "c":
        complex_dtype = (
            dtypes.complex_dtype(dtype) if dtype.kind == "f" else dtypes.default_complex()
        )
        return manipulation.astype(sort(a, -1), complex_dtype)
    real, imag = lax_sort((enp.real(a), enp.imag(a)), -1, is_stable=True, num_keys=2)
    return make_complex(real, imag)
