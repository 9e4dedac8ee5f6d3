"""More of NumPy's everyday surface: triangles, Kronecker products, sign and angle helpers,
and set operations (with JAX's static ``size=`` under jit)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.lax.log_add_exp import complex_log_add
from ember._src.lax.numeric import exp2 as lax_exp2
from ember._src.numpy import (
    creation,
    elementwise as enp,
    manipulation,
    reductions,
    searching,
    sorting,
)
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.extras import unique
from ember._src.numpy.util import broadcast_args, promote_dtypes, promote_to_inexact, shape_of
from ember._src.primitives.bits import bitcast_convert_type


def _inexact(x: Any) -> Any:
    return promote_to_inexact(x)[0]


def _triangle(m: Any, k: int, lower: bool) -> Any:
    m = creation.asarray(m)
    rows, cols = get_aval(m).shape[-2:]
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    keep = (j - i <= k) if lower else (j - i >= k)
    return enp.where(keep, m, np.zeros((), get_aval(m).dtype))


def tril(m: Any, k: int = 0) -> Any:
    return _triangle(m, k, lower=True)


def triu(m: Any, k: int = 0) -> Any:
    return _triangle(m, k, lower=False)


def kron(a: Any, b: Any) -> Any:
    a, b = promote_dtypes(creation.asarray(a), creation.asarray(b))
    ndim = max(get_aval(a).ndim, get_aval(b).ndim)
    a = manipulation.reshape(a, (1,) * (ndim - get_aval(a).ndim) + get_aval(a).shape)
    b = manipulation.reshape(b, (1,) * (ndim - get_aval(b).ndim) + get_aval(b).shape)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    # a[i] * b[j] laid out as a (n_a, n_b) block per axis, then merged
    a_exp = manipulation.reshape(a, tuple(d for s in sa for d in (s, 1)))
    b_exp = manipulation.reshape(b, tuple(d for s in sb for d in (1, s)))
    return manipulation.reshape(a_exp * b_exp, tuple(x * y for x, y in zip(sa, sb)))


def _real_only(name: str, *xs: Any) -> None:
    for x in xs:
        if get_aval(x).dtype.kind == "c":
            raise errors.EmberTypeError(
                f"{name} does not accept complex operands, got {get_aval(x).dtype}{errors.where()}"
            )


def copysign(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    _real_only("copysign", x1, x2)
    negative = signbit(x2)
    magnitude = enp.abs(x1)
    return enp.where(negative, enp.negative(magnitude), magnitude)


def signbit(x: Any, /) -> Any:
    x = creation.asarray(x)
    dtype = get_aval(x).dtype
    if dtype.kind in "uib":
        return enp.less(x, 0)
    if dtype.kind == "c":
        raise ValueError(f"signbit is not well defined for {dtype}{errors.where()}")
    # the sign bit itself, so that -0.0 and -nan count as negative
    return enp.less(bitcast_convert_type(x, np.dtype(f"i{dtype.itemsize}")), 0)


def hypot(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    if get_aval(x1).dtype.kind == "c":
        raise ValueError(
            "jnp.hypot is not well defined for complex-valued inputs. Please convert to real "
            f"values first, such as by using jnp.real or jnp.imag to take the real or imaginary "
            f"components respectively.{errors.where()}"
        )
    a, b = enp.abs(x1), enp.abs(x2)
    big, small = enp.maximum(a, b), enp.minimum(a, b)
    safe = enp.where(enp.equal(big, 0), np.ones((), get_aval(big).dtype), big)
    ratio = small / safe
    # An infinite side makes the hypotenuse infinite, even beside nan (inf/inf would be nan).
    return enp.where(enp.isinf(a) | enp.isinf(b), np.inf, big * enp.sqrt(1 + ratio * ratio))


def heaviside(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    _real_only("heaviside", x1, x2)
    zero = np.zeros((), get_aval(x1).dtype)
    one = np.ones((), get_aval(x1).dtype)
    return enp.where(enp.less(x1, 0), zero, enp.where(enp.greater(x1, 0), one, x2))


def sinc(x: Any, /) -> Any:
    x = _inexact(x)
    pi_x = x * np.asarray(np.pi, get_aval(x).dtype)
    safe = enp.where(enp.equal(x, 0), np.ones((), get_aval(x).dtype), pi_x)
    return enp.where(enp.equal(x, 0), np.ones((), get_aval(x).dtype), enp.sin(safe) / safe)


def deg2rad(x: Any, /) -> Any:
    x = _inexact(x)
    return x * np.asarray(np.pi / 180, get_aval(x).dtype)


def rad2deg(x: Any, /) -> Any:
    x = _inexact(x)
    return x * np.asarray(180 / np.pi, get_aval(x).dtype)


radians, degrees = deg2rad, rad2deg


def _logaddexp2(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    if get_aval(x1).dtype.kind == "c":
        x1, x2 = broadcast_args("logaddexp2", x1, x2)
        amax = enp.maximum(x1, x2)
        return complex_log_add(x1, x2, amax, lax_exp2, 1 / np.log(2), np.pi / np.log(2))
    ln2 = np.asarray(np.log(2), get_aval(x1).dtype)
    return enp.logaddexp(x1 * ln2, x2 * ln2) / ln2


logaddexp2 = enp.as_ufunc(_logaddexp2, "logaddexp2", 2)


# --------------------------------------------------------------------------------------------
# Set operations (sorted, unique results; ``size=`` pads to a static length under jit)


_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    method: str = "auto",
) -> Any:
    """Whether each element appears in ``test_elements``. ``"compare_all"`` compares every
    pair (O(n*m) work, quickest for small inputs); ``"binary_search"`` and ``"sort"`` sort
    ``test_elements`` and look each element up (O((n + m) log m)); ``"auto"`` picks by the
    number of pairs. ``assume_unique`` only chooses JAX's algorithm; answers are the same."""
    if method not in _ISIN_METHODS:
        raise ValueError(
            f"isin: method must be one of {_ISIN_METHODS}, got {method!r}{errors.where()}"
        )
    element, test = promote_dtypes(creation.asarray(element), creation.asarray(test_elements))
    flat = manipulation.reshape(test, (get_aval(test).size,))
    if get_aval(flat).size == 0 or get_aval(element).size == 0:
        found = creation.zeros(shape_of(element), dtypes.bool_)
    elif method == "compare_all" or (
        method == "auto" and get_aval(element).size * get_aval(flat).size <= _ISIN_PAIRS
    ):
        matches = enp.equal(manipulation.expand_dims(element, -1), flat)
        found = reductions.any(matches, axis=-1)
    else:
        found = _isin_sorted(element, flat)
    return enp.logical_not(found) if invert else found


# Above this many (element, test element) pairs, "auto" sorts rather than compares them all.
_ISIN_PAIRS = 1 << 16


def _isin_sorted(element: Any, flat_test: Any) -> Any:
    """Membership by binary search in the sorted test elements: the candidate where each
    element would go is the only one that can equal it (NaN equals nothing, as with ==)."""
    ordered = sorting.sort(flat_test)
    place = searching.searchsorted(ordered, element)
    last = get_aval(ordered).size - 1
    candidate = take(ordered, enp.minimum(place, last))
    return enp.equal(element, candidate)


def _needs_size(x: Any, size: Any, what: str) -> None:
    if size is None and isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(
            f"{what} of a traced array has a value-dependent shape; pass size=...{errors.where()}"
        )


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    joined = manipulation.concatenate(
        [manipulation.ravel(creation.asarray(ar1)), manipulation.ravel(creation.asarray(ar2))]
    )
    _needs_size(joined, size, "union1d")
    return unique(joined, size=size, fill_value=fill_value)


def intersect1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    return_indices: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Sorted unique values found in both arrays; with ``return_indices`` also the index of
    each value's first occurrence in the flattened ``ar1`` and ``ar2`` (padding entries get
    the array's length, as in JAX). ``assume_unique`` is accepted; the result is the same."""
    a, b = promote_dtypes(
        manipulation.ravel(creation.asarray(ar1)), manipulation.ravel(creation.asarray(ar2))
    )
    _needs_size(a, size, "intersect1d")
    present = isin(a, b)
    values = _masked_unique(a, present, size, fill_value)
    if not return_indices:
        return values
    is_real = creation.ones(shape_of(values), dtypes.bool_)
    if size is not None:
        n_results = reductions.sum(enp.logical_and(present, _first_occurrences(a)), dtype=np.int32)
        is_real = enp.less(creation.arange(size, dtype=np.int32), n_results)
    return values, _first_index_of(values, a, is_real), _first_index_of(values, b, is_real)


def _first_occurrences(a: Any) -> Any:
    """Whether each entry of the 1-D ``a`` is the first one holding its value."""
    same = enp.equal(manipulation.expand_dims(a, -1), a)
    first = reductions.argmax(same, axis=-1)
    return enp.equal(first, creation.arange(shape_of(a)[0], dtype=get_aval(first).dtype))


def _first_index_of(values: Any, a: Any, is_real: Any) -> Any:
    """Index in ``a`` of each value's first occurrence; ``len(a)`` where not ``is_real``
    (in the default integer type, int64 under x64, as JAX)."""
    n = shape_of(a)[0]
    index_dtype = dtypes.default_int()
    if not n:
        return creation.full(shape_of(values), n, index_dtype)
    index = reductions.argmax(enp.equal(manipulation.expand_dims(values, -1), a), axis=-1)
    index = manipulation.astype(index, index_dtype)
    return enp.where(is_real, index, index_dtype.type(n))


def setdiff1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    a = manipulation.ravel(creation.asarray(ar1))
    _needs_size(a, size, "setdiff1d")
    return _masked_unique(a, isin(a, ar2, invert=True), size, fill_value)


def _masked_unique(a: Any, keep: Any, size: Any, fill_value: Any) -> Any:
    if size is None:
        values = np.asarray(a)[np.asarray(keep)]
        return unique(creation.asarray(values))
    # Push the dropped values past every kept one, then take the unique leading part.
    dtype = get_aval(a).dtype
    top = np.asarray(
        dtypes.finfo(dtype).max if dtypes.is_inexact(dtype) else np.iinfo(dtype).max, dtype
    )
    staged = enp.where(keep, a, top)
    count = reductions.sum(keep, dtype=np.int32)
    uniques = unique(staged, size=size, fill_value=top)
    has_top = reductions.any(enp.logical_and(keep, enp.equal(a, top)))
    n_unique = reductions.sum(enp.not_equal(uniques, top), dtype=np.int32)
    valid = enp.less(creation.arange(size, dtype=np.int32), n_unique + has_top.astype(np.int32))
    valid = enp.logical_and(valid, enp.greater(count, 0))
    fill = uniques[0] if fill_value is None else fill_value
    return enp.where(valid, uniques, np.asarray(fill, dtype) if fill_value is not None else fill)
