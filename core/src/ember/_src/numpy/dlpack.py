"""DLPack exchange (``ember.dlpack``): importing other libraries' arrays and the dtypes that
can cross. Export is ``Array.__dlpack__``; both go through host (CPU) memory."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.execution import placement
from ember._src.numpy import creation
from ember._src.runtime.array import Array

# The element types DLPack can describe and ember can hold (no float8, no sub-byte ints).
_SUPPORTED = frozenset(
    np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
) | ({np.dtype(dtypes.bfloat16)} if dtypes.bfloat16 is not None else set())  # fmt: skip

_KDL_CPU = 1


def is_supported_dtype(dtype: Any) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack."""
    return np.dtype(dtype) in _SUPPORTED


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Any:
    """An ember array with the data of ``external_array``, any object with ``__dlpack__``
    (a NumPy array, a PyTorch CPU tensor, another ember array), on ``device``."""
    return import_array(external_array, device, copy)


def import_array(x: Any, device: Any, copy: bool | None) -> Any:
    if isinstance(x, Array):
        if device is None:
            return x
        return placement.to_device(x, placement.resolve_device(device, "device"))
    _check_importable(x)
    host = np.from_dlpack(x, copy=copy)
    if not is_supported_dtype(host.dtype):
        raise BufferError(
            f"from_dlpack: dtype {host.dtype} cannot be exchanged through DLPack{errors.where()}"
        )
    # The data moves into the backend's memory (ember arrays are immutable, so a copy is
    # never observable); copy=False only forbids an extra copy on the host side.
    return creation.asarray(host, device=device)


def _check_importable(x: Any) -> None:
    """A clear BufferError for producers ember cannot read: memory off the host."""
    if not hasattr(x, "__dlpack__"):
        raise errors.EmberTypeError(
            f"from_dlpack: {type(x).__name__} has no __dlpack__ method{errors.where()}"
        )
    if hasattr(x, "__dlpack_device__"):
        kind, _ = x.__dlpack_device__()
        if int(kind) != _KDL_CPU:
            raise BufferError(
                f"from_dlpack: the array lives on DLPack device type {int(kind)}, not the host "
                f"CPU; copy it to host memory first{errors.where()}"
            )
