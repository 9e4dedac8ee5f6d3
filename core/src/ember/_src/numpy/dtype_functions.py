"""Dtype functions of ember.numpy: result_type, promote_types, can_cast, finfo, iinfo.

They follow ember's (JAX's) promotion lattice and x64 setting, not NumPy's rules: for
example ``result_type(int8, uint8)`` is int16 and ``result_type(2.0)`` is float32 unless x64 is
on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.core import get_aval


def _dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    if isinstance(x, (type, np.dtype, str)):
        return dtypes.canonicalize(np.dtype(x)), False
    aval = get_aval(x)
    return aval.dtype, aval.weak_type


def result_type(*args: Any) -> np.dtype:
    """The dtype ember's promotion rules give for combining ``args`` (dtypes or values)."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    return dtypes.promote([_dtype_and_weak(a) for a in args])[0]


def promote_types(a: Any, b: Any) -> np.dtype:
    return dtypes.promote([(np.dtype(a), False), (np.dtype(b), False)])[0]


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """Whether ``from_`` converts to ``to`` under NumPy's casting rule ``casting``."""
    source = _dtype_and_weak(from_)[0]
    target = np.dtype(to)
    if dtypes.bfloat16 is not None and np.dtype(dtypes.bfloat16) in (source, target):
        # NumPy does not know bfloat16: safe means the lattice's join is the target.
        if casting == "unsafe" or source == target:
            return True
        if casting == "same_kind":
            return dtypes.is_inexact(target) or not dtypes.is_inexact(source)
        return promote_types(source, target) == target
    return bool(np.can_cast(source, target, casting))


def finfo(dtype: Any) -> Any:
    """Machine limits of a floating dtype (bfloat16 included)."""
    if not isinstance(dtype, (type, np.dtype, str)):
        dtype = get_aval(dtype).dtype
    return dtypes.finfo(dtype)


def iinfo(int_type: Any) -> np.iinfo:
    if not isinstance(int_type, (type, np.dtype, str)):
        int_type = get_aval(int_type).dtype
    return np.iinfo(int_type)
