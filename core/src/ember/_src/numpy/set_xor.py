"""``setxor1d``: the sorted unique values in exactly one of two arrays (with JAX's static
``size=`` under jit)."""

from __future__ import annotations

from typing import Any

from ember._src.numpy import creation, manipulation
from ember._src.numpy.more import _masked_unique, _needs_size, isin
from ember._src.numpy.util import promote_dtypes


def setxor1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Values in ``ar1`` or ``ar2`` but not both, sorted and unique; ``size=`` pads (with
    ``fill_value``, default the smallest result) or truncates to a static length."""
    a, b = promote_dtypes(
        manipulation.ravel(creation.asarray(ar1)), manipulation.ravel(creation.asarray(ar2))
    )
    joined = manipulation.concatenate([a, b])
    _needs_size(joined, size, "setxor1d")
    # The values of each array missing from the other form two disjoint sets: their union
    # (deduplicated) is the symmetric difference, whether or not the inputs were unique.
    keep = manipulation.concatenate([isin(a, b, invert=True), isin(b, a, invert=True)])
    return _masked_unique(joined, keep, size, fill_value)
