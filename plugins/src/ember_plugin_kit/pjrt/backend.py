"""An ember ``Backend`` over any PJRT client.

A PJRT backend plugin creates a client (``make_cpu_client``, ``make_plugin_client``) and wraps
it in ``PjrtBackend``; everything else (transfers, compiling StableHLO text, executing,
donation, introspection) is shared here.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ember.errors import CompileError, ExecutionError, OutOfMemoryError
from ember.extend import (
    TOKEN_AVAL,
    Backend,
    Computation,
    Device,
    Executable,
    Profiler,
    ProfileSession,
    ShapedArray,
)
from ember_plugin_kit.pjrt import _jaxlib, dlpack_capsule


class PjrtDevice(Device):
    """An ember device backed by one PJRT device."""

    # Where a device sits in its slice, for platforms whose PJRT devices say (TPUs): its chip's
    # (x, y, z) in the slice's torus, its core on that chip, and the slice it belongs to.
    TOPOLOGY_ATTRIBUTES = ("coords", "core_on_chip", "slice_index")

    def __init__(self, backend: Backend, raw: _jaxlib.RawDevice):
        self.raw = raw
        self.sharding = _jaxlib.DeviceSharding(raw)
        self.platform = backend.platform
        self.id = raw.id
        # the device's index on this host, as DLPack and CUDA number devices
        self.local_hardware_id = raw.local_hardware_id
        self.device_kind = raw.device_kind
        self.process_index = raw.process_index
        self.backend = backend
        for name in self.TOPOLOGY_ATTRIBUTES:
            value = getattr(raw, name, None)
            if value is not None:
                setattr(self, name, tuple(value) if isinstance(value, list) else value)

    def __repr__(self) -> str:
        where = "".join(
            f", {name}={getattr(self, name)}"
            for name in ("coords", "core_on_chip")
            if hasattr(self, name)
        )
        return f"{self.platform.capitalize()}Device(id={self.id}{where})"

    def memory_stats(self) -> dict[str, int] | None:
        return self.raw.memory_stats()


class PjrtExecutable(Executable):
    """A loaded PJRT executable with its result handlers built once."""

    def __init__(self, computation: Computation, loaded: Any, devices: Sequence[PjrtDevice]):
        self.computation = computation
        self.loaded = loaded
        self._name = computation.name
        if len(devices) == 1:
            self._output_shardings = None
            shardings = [devices[0].sharding] * len(computation.out_avals)
        else:  # SPMD: each output is laid out as the partitioner decided
            self._output_shardings = _jaxlib.output_shardings(loaded)
            raw = [d.raw for d in devices]
            shardings = [_jaxlib.layout_sharding(raw, h) for h in self._output_shardings]
        # A program with ordered effects returns their tokens first (on its one device).
        tokens = [_jaxlib.result_handler(TOKEN_AVAL, devices[0].sharding)]
        self._handlers = tokens * computation.effect_tokens + [
            _jaxlib.result_handler(a, s) for a, s in zip(computation.out_avals, shardings)
        ]

    def output_shardings(self) -> list[str] | None:
        return self._output_shardings

    def execute(self, args: Sequence[Any]) -> list[Any]:
        try:
            # The one jaxlib call made outside _jaxlib: it is the whole per-call cost of
            # dispatch, and a wrapper function around it would add to every call.
            return self.loaded.execute_sharded(args).consume_with_handlers(self._handlers)
        except _jaxlib.XlaRuntimeError as exc:
            if "RESOURCE_EXHAUSTED" in str(exc):
                raise OutOfMemoryError(
                    f"{self._name} ran out of memory: {exc} (the arrays are "
                    f"{', '.join(a.str_short() for a in self.computation.out_avals)})"
                ) from None
            raise ExecutionError(f"{self._name} failed while running: {exc}") from None

    def as_text(self) -> str:
        return _jaxlib.hlo_text(self.loaded)

    def cost_analysis(self) -> dict[str, float]:
        return dict(self.loaded.cost_analysis())

    def memory_analysis(self) -> Any:
        return _jaxlib.memory_stats(self.loaded)

    def serialize(self) -> bytes:
        backend = self.computation.devices[0].backend
        return _jaxlib.serialize(backend.client, self.loaded)


class XlaProfileSession(ProfileSession):
    def __init__(self, session: Any):
        self._session = session

    def stop_and_export(self, log_dir: str) -> str:
        return _jaxlib.stop_and_export_profile(self._session, log_dir)


class XlaProfiler(Profiler):
    """XLA's profiler: one per process, shared by every PJRT client in it."""

    def start(self) -> XlaProfileSession:
        try:
            return XlaProfileSession(_jaxlib.start_profiler_session())
        except _jaxlib.XlaRuntimeError as exc:
            raise RuntimeError(f"the XLA profiler could not start: {exc}") from None

    def annotation(self, name: str, metadata: dict[str, Any]) -> Any:
        return _jaxlib.trace_me(name, metadata)

    def start_server(self, port: int) -> Any:
        return _jaxlib.start_profiler_server(port)


_XLA_PROFILER = XlaProfiler()


class PjrtBackend(Backend):
    """The backend of one platform, over one PJRT client."""

    def __init__(
        self,
        platform: str,
        client: _jaxlib.RawClient,
        *,
        debug_options: Mapping[str, Any] | None = None,
    ):
        """``debug_options``: fields of XLA's ``DebugOptions`` every compile on this platform
        sets (e.g. ``{"xla_gpu_cuda_data_dir": ...}``: where ptxas and libdevice are)."""
        self.platform = platform
        self.client = client
        self.debug_options = dict(debug_options or {})
        self._devices = [PjrtDevice(self, d) for d in client.devices()]
        self._by_raw = {d.raw: d for d in self._devices}

    def devices(self) -> list[Device]:
        return list(self._devices)

    def process_index(self) -> int:
        return self.client.process_index()

    def buffer_from_numpy(self, value: np.ndarray, aval: ShapedArray, device: Device) -> Any:
        try:
            return _jaxlib.put(value, aval, device.sharding, device.raw)
        except _jaxlib.XlaRuntimeError as exc:
            if "RESOURCE_EXHAUSTED" not in str(exc):
                raise
            raise OutOfMemoryError(no_room_message(device, aval, value.nbytes, exc)) from None

    def buffer_to_numpy(self, buffer: Any) -> np.ndarray:
        try:
            return _jaxlib.to_numpy(buffer)
        except _jaxlib.XlaRuntimeError as exc:
            raise ExecutionError(f"the computation of this array failed: {exc}") from None

    def buffer_to_dlpack(self, buffer: Any, *, stream: int | None) -> Any:
        try:
            return _jaxlib.to_dlpack(buffer, stream)
        except _jaxlib.XlaRuntimeError as exc:
            raise BufferError(f"__dlpack__ on {self.platform}: {exc}") from None

    def buffer_from_dlpack(self, external: Any, device: Device) -> tuple[Any, ShapedArray]:
        stream = _jaxlib.external_ready_stream(device.raw)
        capsule = external.__dlpack__() if stream is None else external.__dlpack__(stream=stream)
        shape, dtype = dlpack_capsule.shape_and_dtype(capsule)
        try:
            raw = _jaxlib.from_dlpack(capsule, device.raw, stream)
        except _jaxlib.XlaRuntimeError as exc:
            raise BufferError(f"from_dlpack onto {device}: {exc}") from None
        aval = ShapedArray(shape, dtype)
        return _jaxlib.with_aval(raw, aval, device.sharding), aval

    def buffer_from_shards(
        self, shards: Sequence[np.ndarray], aval: ShapedArray, sharding: Any
    ) -> Any:
        layout = self._layout(sharding, aval)
        local = [d.raw for d in sharding.addressable_devices]
        shard_aval = aval.update(shape=sharding.shard_shape(aval.shape))
        return _jaxlib.put_shards(shards, aval, layout, local, [shard_aval] * len(local))

    def assemble_buffers(self, buffers: Sequence[Any], aval: ShapedArray, sharding: Any) -> Any:
        return _jaxlib.assemble(buffers, aval, self._layout(sharding, aval))

    def _layout(self, sharding: Any, aval: ShapedArray) -> _jaxlib.LayoutSharding:
        raw = [d.raw for d in sharding.device_list]
        return _jaxlib.layout_sharding(raw, sharding.hlo_sharding(aval.ndim))

    def shard_buffers(self, buffer: Any, aval: ShapedArray, sharding: Any) -> list[Any]:
        pieces = _jaxlib.shard_buffers(buffer)
        by_device = {piece._sharding._device.id: piece for piece in pieces}
        return [by_device[d.id] for d in sharding.addressable_devices]

    def copy_to_device(self, buffer: Any, aval: ShapedArray, device: Device) -> Any:
        return _jaxlib.copy_to(buffer, device.sharding)

    def compile(self, computation: Computation) -> PjrtExecutable:
        text = computation.as_text(self.platform)
        raw_devices = [d.raw for d in computation.devices]
        try:
            program: str | bytes = text
            if has_dynamic_shapes(text):  # calls a shape-polymorphic exported program
                program = _jaxlib.refine_polymorphic_shapes(text)
            loaded = _jaxlib.compile_text(
                self.client,
                program,
                raw_devices,
                computation.host_callbacks,
                self.debug_options,
            )
        except _jaxlib.XlaRuntimeError as exc:
            raise CompileError(describe_compile_error(computation.name, text, str(exc))) from None
        return PjrtExecutable(computation, loaded, computation.devices)

    def cache_fingerprint(self, computation: Computation) -> bytes:
        devices = computation.devices
        facts = [
            f"platform {self.platform} {self.client.platform_version}",
            f"jaxlib {_jaxlib.JAXLIB_VERSION}",
            "devices " + " ".join(f"{d.id}:{d.device_kind}:{d.process_index}" for d in devices),
            f"processes {len({d.process_index for d in self._devices})}",
            "flags " + " ".join(compiler_flags()),
        ]
        options = _jaxlib.compile_options_fingerprint([d.raw for d in devices], self.debug_options)
        return "\n".join(facts).encode() + b"\noptions " + options

    def deserialize_executable(self, computation: Computation, blob: bytes) -> PjrtExecutable:
        raw_devices = [d.raw for d in computation.devices]
        try:
            loaded = _jaxlib.deserialize(self.client, blob, raw_devices)
        except _jaxlib.XlaRuntimeError as exc:
            raise CompileError(f"could not load the compiled {computation.name}: {exc}") from None
        return PjrtExecutable(computation, loaded, computation.devices)

    def block_until_ready(self, buffers: Sequence[Any]) -> None:
        try:
            _jaxlib.block_until_ready(buffers)
        except _jaxlib.XlaRuntimeError as exc:
            raise ExecutionError(f"the computation of this array failed: {exc}") from None

    def buffers_ready(self, buffers: Sequence[Any]) -> bool:
        try:
            return all(b is None or b.is_ready() for b in buffers)
        except _jaxlib.XlaRuntimeError:  # deleted or donated: let the waiting path report it
            return False

    def delete(self, buffer: Any) -> None:
        buffer.delete()

    def is_deleted(self, buffer: Any) -> bool:
        return buffer.is_deleted()

    def stablehlo_versions(self) -> dict[str, str]:
        return _jaxlib.stablehlo_versions()

    def to_portable_artifact(self, text: str, target_version: str) -> bytes:
        try:
            return _jaxlib.to_portable_artifact(text, target_version)
        except _jaxlib.XlaRuntimeError as exc:
            raise ValueError(f"StableHLO could not be serialised: {exc}") from None

    def from_portable_artifact(self, artifact: bytes) -> str:
        try:
            return _jaxlib.from_portable_artifact(artifact)
        except _jaxlib.XlaRuntimeError as exc:
            raise ValueError(f"not a portable artifact this StableHLO reads: {exc}") from None

    def versions(self) -> dict[str, str]:
        return {"jaxlib": _jaxlib.JAXLIB_VERSION, "pjrt platform": self.client.platform_version}

    def register_ffi_target(
        self, name: str, handler: Any, api_version: int, **options: Any
    ) -> None:
        _jaxlib.register_ffi_target(name, handler, self._ffi_platform(name), api_version, **options)

    def register_ffi_type(self, name: str, registration: Any) -> None:
        _jaxlib.register_ffi_type(name, registration, self._ffi_platform(name))

    def _ffi_platform(self, name: str) -> str:
        # XLA's process-wide registry reaches the CPU client; other platforms' clients come
        # from PJRT plugins, whose registration goes through the plugin's own C API.
        if self.platform != "cpu":
            raise NotImplementedError(
                f"registering FFI target or type {name!r} on {self.platform} is not "
                f"supported by the plugin kit yet (only on cpu)"
            )
        return "cpu"

    def ffi_include_dir(self) -> str:
        return _jaxlib.ffi_include_dir()

    def profiler(self) -> XlaProfiler:
        return _XLA_PROFILER

    def device_memory_profile(self) -> bytes:
        # gzip-compressed, as JAX returns it (pprof reads both forms).
        return gzip.compress(_jaxlib.heap_profile(self.client))


def no_room_message(device: Device, aval: ShapedArray, nbytes: int, exc: Exception) -> str:
    """Why an array did not fit on ``device``, with the device's own memory figures."""
    stats = device.memory_stats() or {}
    usage = ""
    if "bytes_limit" in stats:
        usage = f"; {stats.get('bytes_in_use', 0)} of its {stats['bytes_limit']} bytes are in use"
    return f"{device} has no room for {aval.str_short()} ({nbytes} bytes){usage}: {exc}"


# Environment variables whose flags the compiler reads when the process starts.
_FLAG_VARIABLES = ("XLA_FLAGS", "LIBTPU_INIT_ARGS")


def compiler_flags() -> list[str]:
    """The compiler flags set through the environment, sorted, without those that only say
    where to dump debugging output (they change no executable)."""
    flags = []
    for name in _FLAG_VARIABLES:
        flags += os.environ.get(name, "").split()
    return sorted(f for f in flags if not f.startswith("--xla_dump"))


def has_dynamic_shapes(text: str) -> bool:
    """Whether a module has a tensor type with a dynamic dimension (``tensor<?x4xf32>``,
    ``tensor<4x?xf32>``): ember's own lowerings never do, exported programs may."""
    return "tensor<?" in text or "x?x" in text


# XLA reports MLIR diagnostics as "-:LINE:COL: error: MESSAGE", possibly after a status prefix.
_LOCATION = re.compile(r"(?:^|\s)-?:?(\d+):(\d+): error: (.*)$", re.MULTILINE)


def describe_compile_error(name: str, text: str, message: str) -> str:
    """XLA's message, with the StableHLO op it points at quoted from the module text."""
    lines = text.splitlines()
    quoted = []
    for match in _LOCATION.finditer(message):
        lineno = int(match.group(1))
        if 0 < lineno <= len(lines):
            quoted.append(f"  line {lineno}: {lines[lineno - 1].strip()}\n  error: {match[3]}")
    detail = "\n".join(quoted) if quoted else message.strip()
    return f"XLA could not compile {name}:\n{detail}"
