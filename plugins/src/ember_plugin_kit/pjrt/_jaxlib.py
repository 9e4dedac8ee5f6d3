"""Every call into jaxlib's private Python surface, in one place.

jaxlib's ``_jax`` and ``xla_client`` modules are not a public API and change between releases,
which is why the kit pins ``jaxlib>=0.10.2,<0.11`` and keeps all of it here, covered by the
kit's tests. Nothing in this module imports ``jax``; some jaxlib entry points lazily import
``jax`` from C++ (disassembling results into per-device arrays, Python result handlers), so
they are not used.
"""

from __future__ import annotations

import os

# XLA's C++ logging is configured when jaxlib loads; INFO and WARNING lines are noise for
# ember users. A user who wants them sets TF_CPP_MIN_LOG_LEVEL before importing ember.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client
from jaxlib.version import __version__ as jaxlib_version

JAXLIB_VERSION: str = jaxlib_version

RawDevice = _jax.Device
RawClient = _jax.Client
RawBuffer = _jax.ArrayImpl
XlaRuntimeError = _jax.JaxRuntimeError

_COPY_ON_PUT = _jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL


class DeviceSharding(_jax.SingleDeviceSharding):
    """The jaxlib-side sharding of a buffer on one device.

    jaxlib's C++ reads ``_internal_device_list``, ``memory_kind`` and ``_to_xla_hlo_sharding``
    from the sharding of every array it makes; the base class provides only the first.
    """

    memory_kind = None

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        return xla_client.HloSharding.replicate()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceSharding) and other._device is self._device

    def __hash__(self) -> int:
        return hash(self._device)


# -- clients ---------------------------------------------------------------------------------


def make_cpu_client(num_devices: int) -> RawClient:
    return xla_client.make_cpu_client(num_devices=num_devices)


_loaded_plugins: dict[str, str] = {}


def make_plugin_client(name: str, library_path: str, options: dict[str, Any]) -> RawClient:
    """A client from a PJRT plugin library (CUDA, ROCm, TPU, or a third party's).

    Loading is guarded: jaxlib refuses a second load of one name, and initialising a name that
    was never loaded crashes the process, so neither is allowed to happen.
    """
    previous = _loaded_plugins.get(name)
    if previous is None:
        if not os.path.exists(library_path):
            raise FileNotFoundError(f"PJRT plugin library {library_path!r} does not exist")
        xla_client.load_pjrt_plugin_dynamically(name, library_path)
        _loaded_plugins[name] = library_path
        xla_client.initialize_pjrt_plugin(name)
    elif previous != library_path:
        raise ValueError(
            f"PJRT plugin {name!r} is already loaded from {previous!r}; cannot load "
            f"{library_path!r} as well in one process"
        )
    return xla_client.make_c_api_client(name, options, None)


# -- buffers -----------------------------------------------------------------------------------


def put(value: np.ndarray, aval: Any, sharding: DeviceSharding, device: RawDevice) -> RawBuffer:
    """Copy ``value`` to ``device`` (copy semantics: later host writes don't leak in)."""
    return _jax.batched_device_put(
        aval,
        sharding,
        [value],
        [device],
        committed=True,
        host_buffer_semantics=_COPY_ON_PUT,
        enable_x64=True,  # ember canonicalises dtypes itself; never let jaxlib narrow them
    )


def copy_to(buffer: RawBuffer, sharding: DeviceSharding) -> RawBuffer:
    (moved,) = _jax.batched_copy_array_to_devices_with_sharding(
        [buffer],
        [sharding._internal_device_list],
        [sharding],
        [xla_client.ArrayCopySemantics.ALWAYS_COPY],
    )
    return moved


def to_numpy(buffer: RawBuffer) -> np.ndarray:
    return np.asarray(buffer)


def block_until_ready(buffers: Sequence[RawBuffer]) -> None:
    _jax.batched_block_until_ready(list(buffers))


# -- executables ---------------------------------------------------------------------------------


def compile_text(client: RawClient, text: str, devices: Sequence[RawDevice]) -> Any:
    options = xla_client.CompileOptions()
    # Without an explicit assignment XLA runs partition 0 on the client's first device,
    # whatever device list is passed, and rejects buffers that live elsewhere.
    # Shape [replicas, partitions]: ember runs one replica with one partition per device.
    ids = np.array([[d.id for d in devices]], dtype=np.int32)
    options.device_assignment = xla_client.DeviceAssignment.create(ids)
    if len(devices) > 1:
        options.num_partitions = len(devices)
        options.executable_build_options.use_spmd_partitioning = True
    return client.compile_and_load(text, _jax.DeviceList(tuple(devices)), options)


def result_handler(aval: Any, sharding: DeviceSharding) -> Any:
    # _skip_checks: the C++ checks would import jax to compare shardings.
    return _jax.array_result_handler(aval, sharding, committed=True, _skip_checks=True)


def hlo_text(executable: Any) -> str:
    return "\n\n".join(module.to_string() for module in executable.hlo_modules())


def memory_stats(executable: Any) -> Any:
    return executable.get_compiled_memory_stats()


def serialize(client: RawClient, executable: Any) -> bytes:
    return client.serialize_executable(executable)


def deserialize(client: RawClient, blob: bytes, devices: Sequence[RawDevice]) -> Any:
    return client.deserialize_executable(blob, _jax.DeviceList(tuple(devices)), None)
