"""Reading the shape and dtype a DLPack capsule describes, before jaxlib takes it over.

jaxlib's import (``dlpack_managed_tensor_to_buffer``) returns a buffer without an abstract
value, and without jax loaded nothing on it tells its shape or dtype; the capsule does. Only
unversioned capsules (``"dltensor"``, what ``__dlpack__()`` gives when no ``max_version`` is
asked) are read, through the C layout of ``DLManagedTensor`` (dlpack.h).
"""

from __future__ import annotations

import ctypes
from typing import Any

import ml_dtypes
import numpy as np

_CAPSULE_NAME = b"dltensor"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


# (DLDataTypeCode, bits) -> NumPy dtype
_DTYPES = {
    (0, 8): np.dtype(np.int8),
    (0, 16): np.dtype(np.int16),
    (0, 32): np.dtype(np.int32),
    (0, 64): np.dtype(np.int64),
    (1, 8): np.dtype(np.uint8),
    (1, 16): np.dtype(np.uint16),
    (1, 32): np.dtype(np.uint32),
    (1, 64): np.dtype(np.uint64),
    (2, 16): np.dtype(np.float16),
    (2, 32): np.dtype(np.float32),
    (2, 64): np.dtype(np.float64),
    (4, 16): np.dtype(ml_dtypes.bfloat16),
    (5, 64): np.dtype(np.complex64),
    (5, 128): np.dtype(np.complex128),
    (6, 8): np.dtype(np.bool_),
}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def shape_and_dtype(capsule: Any) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and NumPy dtype of an unconsumed ``"dltensor"`` capsule (BufferError for
    anything else, or a dtype ember cannot hold)."""
    if not _is_valid(capsule, _CAPSULE_NAME):
        raise BufferError(
            "from_dlpack: the producer gave no unconsumed 'dltensor' capsule (DLPack < 1.0)"
        )
    # DLManagedTensor begins with its DLTensor
    tensor = _DLTensor.from_address(_get_pointer(capsule, _CAPSULE_NAME))
    key = (tensor.dtype.code, tensor.dtype.bits)
    if key not in _DTYPES or tensor.dtype.lanes != 1:
        raise BufferError(
            f"from_dlpack: DLPack dtype (code {key[0]}, {key[1]} bits, {tensor.dtype.lanes} "
            f"lanes) has no ember dtype"
        )
    shape = tuple(int(tensor.shape[i]) for i in range(tensor.ndim))
    return shape, _DTYPES[key]
