"""Host-side helpers: arrays from bytes, strings and ``.npy`` files, scalar and iterable
tests, and printing (NumPy's own print options, which ember arrays follow).

None of these can run on traced values: they read Python objects or files.
"""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Tracer
from ember._src.numpy import creation
from ember._src.runtime.array import Array

iterable = np.iterable
array_repr = np.array_repr
array_str = np.array_str
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
# Writing goes through NumPy, which reads ember arrays with ``__array__`` (as JAX's do).
save = np.save
savez = np.savez
ComplexWarning = np.exceptions.ComplexWarning


def fromfile(*args: Any, **kwargs: Any) -> Any:
    """Refused, as in JAX: reading a file is a side effect that jit would run only once."""
    raise NotImplementedError(
        "fromfile is not implemented because reading a file is not pure (jit would read it "
        f"once, at tracing); use ember.numpy.asarray(numpy.fromfile(...)){errors.where()}"
    )


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """A 1-D array read from the raw bytes of ``buffer`` (see ``numpy.frombuffer``)."""
    return creation.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """A 1-D array parsed from the text ``string``, items separated by ``sep``."""
    return creation.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args: Any, **kwargs: Any) -> Any:
    """Not provided: consuming an iterator is a side effect that transformations would
    repeat or skip. Use ``asarray(numpy.fromiter(...))``."""
    raise NotImplementedError(
        f"fromiter is not implemented because consuming an iterator is not pure (jit would "
        f"run it once, at trace time); use ember.numpy.asarray(numpy.fromiter(...)) instead"
        f"{errors.where()}"
    )


def load(file: IO[bytes] | str | os.PathLike[Any], *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``, returning an ember array for ``.npy`` content (bfloat16 data, which
    NumPy stores as two raw bytes per element, gets its dtype back). ``.npz`` archives are
    returned as NumPy gives them."""
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2") and dtypes.bfloat16 is not None:
        out = out.view(dtypes.bfloat16)
    try:
        return creation.asarray(out)
    except TypeError:
        return out  # object arrays and other dtypes ember cannot hold stay NumPy arrays


def isscalar(element: Any) -> bool:
    """True for scalars: NumPy's scalars and Python numbers, and also arrays of rank 0
    (unlike ``numpy.isscalar``)."""
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, Tracer)):
        return element.ndim == 0
    if hasattr(element, "__jax_array__"):
        return creation.asarray(element).ndim == 0
    return False
