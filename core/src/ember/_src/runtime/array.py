"""``ember.Array``: an immutable array living on a device.

An Array wraps one backend buffer with its abstract value (shape, dtype, weak type) and its
``Sharding``: every array is sharded, an array on one device by that device's (interned)
``SingleDeviceSharding``. The buffer holds the shards this process owns (for a multi-device
array, the backend's multi-device buffer). Arithmetic operators and array methods come from
ember's NumPy layer (wired in by ``ember._src.assembly``); this module holds what needs the
concrete value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray
from ember._src.runtime import multiprocess
from ember._src.runtime.backend import Device
from ember._src.runtime.sharding import NamedSharding, Sharding, SingleDeviceSharding

# DLPack's device types (``DLDeviceType``) of the platforms whose arrays live in device memory.
DLPACK_DEVICE_TYPES = {"cuda": 2, "rocm": 10}


def hardware_id(device: Device) -> int:
    """The device's number on its host, as CUDA and DLPack count (its id where the backend
    does not say)."""
    found = getattr(device, "local_hardware_id", None)
    return device.id if found is None else int(found)


class Array:
    """An n-dimensional array on a device (the result of every ember computation)."""

    __slots__ = ("aval", "_buffer", "_sharding", "_host", "__weakref__")
    __array_priority__ = 100

    def __init__(self, aval: ShapedArray, buffer: Any, sharding: Sharding):
        # The type says what the layout says over Explicit mesh axes, whatever made the array.
        if type(sharding) is NamedSharding:
            typed = sharding.typed(len(aval.shape))
            if typed != aval.typed_sharding:
                aval = aval.update(sharding=typed)
        elif aval.typed_sharding is not None:
            aval = aval.update(sharding=None)
        self.aval = aval
        self._buffer = buffer
        # Single-device shardings are interned, so the hot paths (eager dispatch, jit's fast
        # path) compare ``_sharding`` by identity.
        self._sharding = sharding
        self._host: np.ndarray | None = None

    # -- metadata -------------------------------------------------------------------------------

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def sharding(self) -> Sharding:
        return self._sharding

    @property
    def device(self) -> Device | Sharding:
        """The device of a single-device array; the sharding of a multi-device one (as JAX)."""
        sharding = self._sharding
        return sharding.device if type(sharding) is SingleDeviceSharding else sharding

    def devices(self) -> set[Device]:
        return self._sharding.device_set

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return self.sharding.is_fully_addressable

    @property
    def _backend(self) -> Any:
        return self._sharding.backend

    @property
    def addressable_shards(self) -> list[Shard]:
        """One ``Shard`` (device, index, data) per device holding a piece of this array."""
        self._check_alive()
        where = self._sharding
        if type(where) is SingleDeviceSharding:
            return [Shard(where.device, tuple(slice(None) for _ in self.shape), self)]
        indices = where.addressable_devices_indices_map(self.shape)
        pieces = where.backend.shard_buffers(self._buffer, self.aval, where)
        shard_aval = self.aval.update(shape=where.shard_shape(self.shape))
        return [
            Shard(device, indices[device], Array(shard_aval, piece, SingleDeviceSharding(device)))
            for device, piece in zip(where.addressable_devices, pieces)
        ]

    @property
    def global_shards(self) -> list[Shard]:
        return self.addressable_shards

    @property
    def committed(self) -> bool:
        return True

    # -- the value ------------------------------------------------------------------------------

    @property
    def _value(self) -> np.ndarray:
        if self._host is None:
            self._check_alive()
            sharding = self._sharding
            if type(sharding) is SingleDeviceSharding:
                if multiprocess.current_job() is not None:
                    self._wait_ready()
                host = sharding.device.backend.buffer_to_numpy(self._buffer)
            elif not sharding.is_fully_addressable and not sharding.is_fully_replicated:
                raise errors.DistributedError(
                    f"the value of {self.aval.str_short()} laid out as {sharding} is spread "
                    f"over several processes, and this process holds only its own shards: "
                    f"gather it with ember.experimental.multihost_utils.process_allgather(x), "
                    f"or read x.addressable_shards{errors.where()}"
                )
            elif sharding.is_fully_replicated:  # every shard is the whole value: read one
                backend = sharding.backend
                piece = backend.shard_buffers(self._buffer, self.aval, sharding)[0]
                device = sharding.addressable_devices[0]
                host = Array(self.aval, piece, SingleDeviceSharding(device))._value
            else:
                host = self._assemble_on_host()
            if host.dtype != self.aval.dtype:
                host = host.astype(self.aval.dtype)
            host = np.asarray(host)
            if host.flags.writeable:
                host = host.copy()
                host.setflags(write=False)
            self._host = host
        return self._host

    def _assemble_on_host(self) -> np.ndarray:
        host = np.empty(self.shape, self.aval.dtype)
        for shard in self.addressable_shards:
            host[shard.index] = shard.data._value
        return host

    def _wait_ready(self) -> None:
        """Block until computed; in a multi-process job, with its deadlines (a computation
        that spans processes waits on the others)."""
        backend, buffers = self._sharding.backend, [self._buffer]
        if multiprocess.current_job() is None:  # alone: nothing to bound, no message to build
            backend.block_until_ready(buffers)
            return
        multiprocess.wait_ready(
            lambda: backend.block_until_ready(buffers),
            f"waiting for {self.aval.str_short()}",
            lambda: backend.buffers_ready(buffers),
        )

    def _check_alive(self) -> None:
        if self._buffer is None or self._sharding.backend.is_deleted(self._buffer):
            raise RuntimeError(f"Array {self.aval.str_short()} has been deleted or donated")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        value = self._value
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        return value

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[Any, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of this array's data: host memory for CPU and reference arrays,
        the device's own memory (no copy) for GPU arrays. ``stream``, for a GPU array, is the
        consumer's stream (an integer, as DLPack says: 1 or 2 name CUDA's legacy and
        per-thread default streams): it waits until the data is written, the host does not.
        Host arrays take no stream (None, or -1)."""
        if not self._on_host_memory():
            return self._device_dlpack(stream, dl_device, copy)
        if stream is not None and stream != -1:
            raise BufferError(
                f"__dlpack__: an array in host memory takes no stream (None), got {stream!r}"
            )
        if dl_device is not None and tuple(int(d) for d in dl_device) != (1, 0):
            raise BufferError(
                f"__dlpack__: can only export to the host CPU (1, 0), not {dl_device}"
            )
        if max_version is None or tuple(max_version) < (1, 0):
            # Consumers older than DLPack 1.0 take an unversioned capsule, which can't say the
            # buffer is read-only: give them their own copy, unless told not to copy.
            if copy is False:
                raise BufferError(
                    "__dlpack__(copy=False) needs a DLPack 1.0 consumer (max_version >= (1, 0)): "
                    "older ones can't be told the buffer is read-only, so they need a copy"
                )
            return self._value.copy().__dlpack__()
        return self._value.__dlpack__(max_version=max_version, copy=copy)

    def _device_dlpack(self, stream: Any, dl_device: Any, copy: bool | None) -> Any:
        """``__dlpack__`` of an array in a device's memory, through its backend."""
        here = self.__dlpack_device__()
        if dl_device is not None and tuple(int(d) for d in dl_device) != here:
            raise BufferError(
                f"__dlpack__: this array is on DLPack device {here}; exporting it to "
                f"{tuple(dl_device)} needs a copy: use ember.device_put first"
            )
        if stream is not None and not isinstance(stream, int):
            raise BufferError(f"__dlpack__: stream must be an integer or None, got {stream!r}")
        buffer = self._buffer
        if copy:  # the consumer gets memory of its own
            buffer = self._backend.copy_to_device(buffer, self.aval, self.device)
        try:
            return self._backend.buffer_to_dlpack(buffer, stream=stream)
        except NotImplementedError as exc:
            raise BufferError(f"__dlpack__ of an array on {self.device!r}: {exc}") from None

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._on_host_memory():
            return (1, 0)  # kDLCPU
        kind = DLPACK_DEVICE_TYPES.get(self.device.platform)
        sharding = self._sharding
        if kind is None or type(sharding) is not SingleDeviceSharding:
            raise BufferError(
                f"__dlpack_device__ of an array on {self.device!r}: DLPack exchanges arrays "
                f"on one device of {', '.join(sorted(DLPACK_DEVICE_TYPES))} or the host"
            )
        return (kind, hardware_id(sharding.device))

    def _on_host_memory(self) -> bool:
        sharding = self._sharding
        return type(sharding) is SingleDeviceSharding and sharding.device.platform in (
            "cpu",
            "reference",
        )

    def item(self, *args: Any) -> Any:
        return self._value.item(*args)

    def tobytes(self, order: str = "C") -> bytes:
        return self._value.tobytes(order)

    def addressable_data(self, index: int) -> Array:
        """The piece of this array on its ``index``-th addressable device."""
        return self.addressable_shards[index].data

    def tolist(self) -> Any:
        return self._value.tolist()

    def block_until_ready(self) -> Array:
        self._check_alive()
        self._wait_ready()
        return self

    def is_ready(self) -> bool:
        return True

    def delete(self) -> None:
        if self._buffer is not None:
            self._sharding.backend.delete(self._buffer)
        self._buffer = None
        self._host = None

    def is_deleted(self) -> bool:
        return self._buffer is None or self._sharding.backend.is_deleted(self._buffer)

    def copy_to_host_async(self) -> None:
        self._value  # noqa: B018 - reading caches the host copy

    # -- Python protocol ------------------------------------------------------------------------

    def __bool__(self) -> bool:
        if self.aval.size != 1:
            raise ValueError(
                f"the truth value of an array with {self.aval.size} elements is ambiguous; "
                f"use .any() or .all(){errors.where()}"
            )
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if not dtypes.is_integer(self.aval.dtype) or self.aval.shape:
            raise TypeError(
                f"only integer scalar arrays can be converted to an index, not "
                f"{self.aval.str_short()}{errors.where()}"
            )
        return int(self._value)

    def _scalar(self, what: str) -> Any:
        if self.aval.size != 1:
            raise TypeError(
                f"only size-1 arrays can be converted to a Python {what}, not "
                f"{self.aval.str_short()}{errors.where()}"
            )
        return self._value.reshape(())[()]

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    __hash__ = None  # type: ignore[assignment]  # arrays are mutable-looking: unhashable, as NumPy

    def __repr__(self) -> str:
        if self.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        prefix = "Array("
        body = np.array2string(self._value, separator=", ", prefix=prefix)
        weak = ", weak_type=True" if self.aval.weak_type else ""
        return f"{prefix}{body}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        if self.aval.shape:
            return format(self._value, spec) if not spec else str(self._value)
        return format(self._value[()], spec)

    def __reduce__(self) -> Any:
        return (_rebuild, (np.asarray(self._value), self.aval.weak_type))

    def __copy__(self) -> Array:
        return self

    def __deepcopy__(self, memo: dict) -> Array:
        return self


class Shard:
    """One device's piece of an Array: ``device``, ``index`` (slices into the global array)
    and ``data`` (an Array on that device)."""

    __slots__ = ("device", "index", "data")

    def __init__(self, device: Device, index: tuple, data: Array):
        self.device = device
        self.index = index
        self.data = data

    @property
    def replica_id(self) -> int:
        return 0

    def __repr__(self) -> str:
        return (
            f"Shard(device={self.device!r}, index={self.index}, data={self.data.aval.str_short()})"
        )


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    return _host_to_device(value, weak_type=weak_type)


def _no_runtime(value: np.ndarray, weak_type: bool) -> Array:
    raise errors.BackendError("ember's runtime is not initialised; import ember first")


_host_to_device = _no_runtime


def set_host_to_device(put) -> None:
    """Install the host-to-device transfer used to unpickle Arrays (``ember._src.assembly``
    sets execution's ``device_put_numpy``)."""
    global _host_to_device
    _host_to_device = put


core.register_aval_getter(Array, lambda x: x.aval)
