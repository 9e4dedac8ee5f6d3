"""DLPack exchange (``ember.dlpack``): importing other libraries' arrays and the dtypes that
can cross. Export is ``Array.__dlpack__``. Host arrays cross through host memory; arrays in a
GPU's memory (cupy, PyTorch CUDA tensors) cross without copies, through the backend of the
platform that owns the device (``Backend.buffer_from_dlpack``), which hands the producer the
stream its writes must be ordered before."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.execution import placement
from ember._src.numpy import creation
from ember._src.plugin import manager
from ember._src.runtime.array import DLPACK_DEVICE_TYPES, Array, hardware_id
from ember._src.runtime.sharding import SingleDeviceSharding

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
    kind, index = _dlpack_device(x)
    if kind != _KDL_CPU:
        return _import_device_array(x, kind, index, device, copy)
    host = np.from_dlpack(x, copy=copy)
    if not is_supported_dtype(host.dtype):
        raise BufferError(
            f"from_dlpack: dtype {host.dtype} cannot be exchanged through DLPack{errors.where()}"
        )
    # The data moves into the backend's memory (ember arrays are immutable, so a copy is
    # never observable); copy=False only forbids an extra copy on the host side.
    return creation.asarray(host, device=device)


def _check_importable(x: Any) -> None:
    if not hasattr(x, "__dlpack__"):
        raise errors.EmberTypeError(
            f"from_dlpack: {type(x).__name__} has no __dlpack__ method{errors.where()}"
        )


def _dlpack_device(x: Any) -> tuple[int, int]:
    if not hasattr(x, "__dlpack_device__"):
        return _KDL_CPU, 0
    kind, index = x.__dlpack_device__()
    return int(kind), int(index)


def _import_device_array(x: Any, kind: int, index: int, device: Any, copy: bool | None) -> Any:
    """An array in a GPU's memory, taken over without a copy by the platform owning it."""
    platforms = [p for p, k in DLPACK_DEVICE_TYPES.items() if k == kind]
    if not platforms:
        raise BufferError(
            f"from_dlpack: the array lives on DLPack device type {kind}, which no ember "
            f"platform holds (host: {_KDL_CPU}; "
            f"{', '.join(f'{p}: {k}' for p, k in sorted(DLPACK_DEVICE_TYPES.items()))})"
            f"{errors.where()}"
        )
    (platform,) = platforms
    try:
        devices = manager.backend(platform).local_devices()
    except errors.BackendError as exc:
        raise BufferError(
            f"from_dlpack: the array is on a {platform} device, but ember's {platform} "
            f"platform is not available: {exc}"
        ) from None
    owner = next((d for d in devices if hardware_id(d) == index), None)
    if owner is None:
        raise BufferError(
            f"from_dlpack: the array is on {platform} device {index}, which ember does not "
            f"see (its {platform} devices: {len(devices)}){errors.where()}"
        )
    if copy:
        raise BufferError(
            f"from_dlpack(copy=True) of an array on {platform}: ember takes the producer's "
            f"memory over; copy it on the producer's side, or use copy=None{errors.where()}"
        )
    try:
        buffer, aval = owner.backend.buffer_from_dlpack(x, owner)
    except NotImplementedError as exc:
        raise BufferError(f"from_dlpack: {exc}") from None
    if not is_supported_dtype(aval.dtype):
        raise BufferError(
            f"from_dlpack: dtype {aval.dtype} cannot be exchanged through DLPack{errors.where()}"
        )
    array = Array(aval, buffer, SingleDeviceSharding(owner))
    if device is None:
        return array
    return placement.to_device(array, placement.resolve_device(device, "device"))
