"""Calling C++ handlers written against XLA's FFI from ember programs (JAX's ``jax.ffi``)."""

from ember._src.ffi.call import ffi_call as ffi_call
from ember._src.ffi.registry import (
    include_dir as include_dir,
    pycapsule as pycapsule,
    register_ffi_target as register_ffi_target,
    register_ffi_type as register_ffi_type,
    register_ffi_type_id as register_ffi_type_id,
)

__all__ = [
    "ffi_call",
    "include_dir",
    "pycapsule",
    "register_ffi_target",
    "register_ffi_type",
    "register_ffi_type_id",
]
