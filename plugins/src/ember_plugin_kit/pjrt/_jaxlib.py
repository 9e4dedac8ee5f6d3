"""Every call into jaxlib's private Python surface, in one place.

jaxlib's ``_jax`` and ``xla_client`` modules are not a public API and change between releases,
which is why the kit pins ``jaxlib>=0.10.2,<0.11`` and keeps all of it here, covered by the
kit's tests. Nothing in this module imports ``jax``; some jaxlib entry points lazily import
``jax`` from C++ (disassembling results into per-device arrays, Python result handlers), so
they are not used.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading

# XLA's C++ logging is configured when jaxlib loads; INFO and WARNING lines are noise for
# ember users. A user who wants them sets TF_CPP_MIN_LOG_LEVEL before importing ember.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, _profiler, xla_client
from jaxlib.cpu import _lapack
from jaxlib.version import __version__ as jaxlib_version

from ember_plugin_kit.pjrt.xla_flags import check_xla_flags

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


class LayoutSharding(_jax.GSPMDSharding):
    """The jaxlib-side sharding of a buffer over several devices: an XLA sharding string over
    a device list (device ids in the string are positions in the list)."""

    memory_kind = None

    def __init__(self, devices: Sequence[RawDevice], hlo: str):
        super().__init__(_jax.DeviceList(tuple(devices)), xla_client.HloSharding.from_string(hlo))
        self._hlo_text = hlo
        self._hlo = xla_client.HloSharding.from_string(hlo)
        self._key = (tuple(d.id for d in devices), hlo)

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        return self._hlo

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LayoutSharding) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)


_layouts: dict[tuple, LayoutSharding] = {}


def layout_sharding(devices: Sequence[RawDevice], hlo: str) -> LayoutSharding:
    key = (tuple(devices), hlo)
    found = _layouts.get(key)
    if found is None:
        found = _layouts[key] = LayoutSharding(devices, hlo)
    return found


def normalized_sharding(hlo_sharding: Any) -> str:
    """XLA's sharding in the one form ember's core reads: explicit device positions."""
    if hlo_sharding.is_replicated():
        return "{replicated}"
    if hlo_sharding.is_maximal():
        return f"{{maximal device={hlo_sharding.tile_assignment_devices()[0]}}}"
    if not hlo_sharding.is_tiled():
        return str(hlo_sharding)  # manual or unknown: the core reports it as unsupported
    dims = ",".join(str(d) for d in hlo_sharding.tile_assignment_dimensions())
    ids = ",".join(str(i) for i in hlo_sharding.tile_assignment_devices())
    tail = " last_tile_dim_replicate" if hlo_sharding.replicate_on_last_tile_dim() else ""
    return f"{{devices=[{dims}]{ids}{tail}}}"


# -- clients ---------------------------------------------------------------------------------


def make_cpu_client(
    num_devices: int,
    *,
    coordination: Any = None,
    collectives: Any = None,
    process_id: int = 0,
    num_processes: int = 1,
    topology_timeout_s: float = 300,
) -> RawClient:
    """XLA's CPU client; with a coordination client and a collectives transport
    (``gloo_collectives``), one process's part of a multi-process job."""
    check_xla_flags()
    if coordination is None:
        return xla_client.make_cpu_client(num_devices=num_devices)
    # XLA counts the topology exchange's deadline in whole minutes.
    minutes = max(1, -(-int(topology_timeout_s) // 60))
    return xla_client.make_cpu_client(
        distributed_client=coordination,
        node_id=process_id,
        num_nodes=num_processes,
        collectives=collectives,
        num_devices=num_devices,
        get_local_topology_timeout_minutes=minutes,
        get_global_topology_timeout_minutes=minutes,
    )


def gloo_collectives(coordination: Any, hostname: str | None) -> Any:
    """XLA's CPU collectives between processes through gloo over TCP, rendezvousing through
    the coordination service; ``hostname``: the address the other processes reach this one
    at (None: this host's name)."""
    return _jax.make_gloo_tcp_collectives(coordination, hostname=hostname)


# -- XLA's coordination service (multi-process jobs) -----------------------------------------


def start_coordination_service(
    bind_address: str, num_processes: int, heartbeat_timeout_s: float, shutdown_timeout_s: float
) -> Any:
    # recoverable: a process that dies is dropped from the job instead of the service telling
    # every other process to terminate (which XLA does from a C++ thread, with no exception).
    return _jax.get_distributed_runtime_service(
        bind_address,
        num_processes,
        heartbeat_timeout=max(1, int(heartbeat_timeout_s)),
        shutdown_timeout=max(1, int(shutdown_timeout_s)),
        recoverable=True,
    )


def coordination_client(
    address: str,
    process_id: int,
    init_timeout_s: float,
    heartbeat_timeout_s: float,
    shutdown_timeout_s: float,
) -> Any:
    return _jax.get_distributed_runtime_client(
        address,
        process_id,
        init_timeout=max(1, int(init_timeout_s)),
        heartbeat_timeout=max(1, int(heartbeat_timeout_s)),
        shutdown_timeout=max(1, int(shutdown_timeout_s)),
        # Destroying the client must not run the shutdown barrier (it would wait on peers
        # with no deadline of ember's); ember shuts it down explicitly.
        shutdown_on_destruction=False,
        use_compression=True,
    )


_loaded_plugins: dict[str, str] = {}
_plugin_c_apis: dict[str, Any] = {}  # name -> the PJRT C API capsule of its library


def make_plugin_client(
    name: str,
    library_path: str,
    options: dict[str, Any],
    job: Any = None,
    *,
    job_options: bool = True,
) -> RawClient:
    """A client from a PJRT plugin library (CUDA, ROCm, TPU, or a third party's).

    Loading is guarded: jaxlib refuses a second load of one name, and initialising a name that
    was never loaded crashes the process, so neither is allowed to happen.

    ``job`` (``ember.extend.current_job()``): this process's part of a multi-process job. The
    client is then created with the job's coordination client, through whose key-value store
    the PJRT plugin exchanges the global topology and its collectives' ids (NCCL's on GPU),
    plus the options XLA's GPU plugins read for it: ``node_id``, ``num_nodes`` and, when the
    job names this process's devices, ``visible_devices``. ``job_options=False`` leaves those
    options out for plugins that refuse them (libtpu: ``Unexpected option name passed to
    PJRT_Client_Create: num_nodes``) and learn their place in the job from the coordination
    client alone.
    """
    check_xla_flags()
    distributed = None
    if job is not None:
        distributed = job.coordination.raw
    if job is not None and job_options:
        options = {**options, "node_id": job.process_id, "num_nodes": job.num_processes}
        if job.local_device_ids is not None:
            options.setdefault("visible_devices", list(job.local_device_ids))
    plugin_c_api(name, library_path)
    return xla_client.make_c_api_client(name, options, distributed)


def plugin_c_api(name: str, library_path: str) -> Any:
    """The PJRT C API of a plugin library, loaded and initialised once per process (what a
    plugin's extensions take, such as the CUDA plugin's Triton compiler; loading needs no
    device). None when another user of jaxlib in this process loaded the library first."""
    previous = _loaded_plugins.get(name)
    if previous is None:
        if not os.path.exists(library_path):
            raise FileNotFoundError(f"PJRT plugin library {library_path!r} does not exist")
        c_api = None
        try:
            c_api = xla_client.load_pjrt_plugin_dynamically(name, library_path)
        except XlaRuntimeError as exc:
            # Another user of jaxlib in this process (JAX's own plugin discovery, in a
            # benchmark beside JAX) loaded it first: jaxlib keeps one plugin per name, shared,
            # and does not hand its C API out again (None here).
            if "ALREADY_EXISTS" not in str(exc):
                raise
        _loaded_plugins[name] = library_path
        _plugin_c_apis[name] = c_api
        if not xla_client.pjrt_plugin_initialized(name):
            xla_client.initialize_pjrt_plugin(name)
    elif previous != library_path:
        raise ValueError(
            f"PJRT plugin {name!r} is already loaded from {previous!r}; cannot load "
            f"{library_path!r} as well in one process"
        )
    return _plugin_c_apis[name]


_lapack_lock = threading.Lock()
_lapack_targets: list[str] = []


def register_lapack_handlers() -> list[str]:
    """Register jaxlib's LAPACK handlers (``lapack_spotrf_ffi``, ...) with XLA's CPU client, as
    JAX does for its own CPU backend; returns their names. Once per process (later calls return
    the same names), before the first CPU program that calls them compiles. Each typed-FFI
    handler is registered for platform ``cpu`` and declared batch partitionable (XLA may split
    its leading batch dimensions across devices); ``initialize_lapack`` points them at the
    routines, when the first program that calls one is lowered."""
    with _lapack_lock:
        if _lapack_targets:
            return list(_lapack_targets)
        for name, handler in _lapack.registrations().items():
            # "_ffi" names are typed-FFI handlers (api_version 1 here); jaxlib 0.10 has no other
            api_version = 1 if name.endswith("_ffi") else 0
            xla_client.register_custom_call_target(name, handler, "cpu", api_version)
            if api_version == 1:
                xla_client.register_custom_call_as_batch_partitionable(name)
            _lapack_targets.append(name)
        return list(_lapack_targets)


_lapack_initialized: list[bool] = []


def initialize_lapack() -> None:
    """Point the LAPACK handlers at SciPy's routines (SciPy is a jaxlib dependency), once per
    process. Deferred to the first program that calls one, as JAX defers it: importing SciPy's
    LAPACK costs a few tenths of a second that a program without linear algebra need not pay."""
    if _lapack_initialized:
        return
    with _lapack_lock:
        if not _lapack_initialized:
            _lapack.initialize()
            _lapack_initialized.append(True)


def _initialize_lapack_if_called(program: str | bytes) -> None:
    """Load the LAPACK routines before compiling or loading a program that calls a handler
    (one exported elsewhere, or an executable from the persistent cache, was lowered in
    another process): a handler called uninitialized would crash the interpreter."""
    if _lapack_targets and not _lapack_initialized:
        marker = "lapack_" if isinstance(program, str) else b"lapack_"
        if marker in program:
            initialize_lapack()


def lapack_enum_values() -> dict[str, int]:
    """The values of the enums jaxlib's LAPACK handlers take as attributes, by
    ``module.Enum.member`` (``"eig.ComputationMode.kComputeEigenvectors"``): what a plugin that
    pins them as constants checks them against."""
    values = {}
    for module in ("eig", "schur", "svd"):
        for enum_name in dir(getattr(_lapack, module)):
            enum = getattr(getattr(_lapack, module), enum_name)
            for member, value in getattr(enum, "__members__", {}).items():
                values[f"{module}.{enum_name}.{member}"] = int(value.value)
    return values


_registered_extensions: dict[tuple[str, str], list[str]] = {}


def register_plugin_extension(
    name: str,
    library_path: str,
    extension_module: str,
    xla_platform: str,
    handler_modules: Sequence[str] = (),
) -> list[str]:
    """Register an extension module's FFI types and handlers with plugin ``name`` (loaded from
    ``library_path`` if not yet), as JAX's own plugin initialisation does: the handlers the
    plugin's programs call by name (``xla_ffi_python_gpu_callback`` for host callbacks, ...).

    ``extension_module`` (e.g. ``jax_cuda12_plugin.cuda_plugin_extension``) must provide
    ``ffi_types()``, ``ffi_handlers()``, ``register_custom_type(c_api, name, type_id)`` and
    ``register_custom_call_target(c_api, name, fn, xla_platform, api_version, traits)``.
    Registers once per process, before the plugin's first client; returns the handlers'
    names (none when another jaxlib user loaded the plugin first: it registered its own).
    ``handler_modules`` (e.g. ``jax_cuda12_plugin._solver``) each provide ``registrations()``,
    more typed-FFI handlers by name (cuSOLVER's, ...), registered through the extension's
    ``register_custom_call_target`` as JAX's ``gpu_solver`` registers them.
    Raises ``ModuleNotFoundError`` when the extension is not installed."""
    key = (name, extension_module, tuple(handler_modules))
    if key in _registered_extensions:
        return list(_registered_extensions[key])
    extension = importlib.import_module(extension_module)
    # All imported before anything registers: a missing one leaves the plugin untouched.
    more = [importlib.import_module(m).registrations() for m in handler_modules]
    c_api = plugin_c_api(name, library_path)
    registered: list[str] = []
    if c_api is not None:
        for type_name, type_id in extension.ffi_types().items():
            extension.register_custom_type(c_api, type_name, type_id)
        for target, handler in extension.ffi_handlers().items():
            # api_version 1: XLA's typed FFI, which every handler of these extensions uses
            extension.register_custom_call_target(c_api, target, handler, xla_platform, 1, 0)
            registered.append(target)
        for handlers in more:
            for target, handler in handlers.items():
                extension.register_custom_call_target(c_api, target, handler, xla_platform, 1, 0)
                registered.append(target)
    _registered_extensions[key] = registered
    return list(registered)


# -- XLA's FFI: user handlers -------------------------------------------------------------


def register_ffi_target(
    name: str, handler: Any, platform: str, api_version: int, **options: Any
) -> None:
    """Register a user's FFI handler (a PyCapsule, or a dict of them by stage) as custom-call
    target ``name`` for XLA platform ``platform``; process-wide, as XLA's registry is. XLA
    rejects a second, different handler under a name: that is a ValueError."""
    try:
        xla_client.register_custom_call_target(name, handler, platform, api_version, **options)
    except (_jax.JaxRuntimeError, RuntimeError, TypeError) as exc:
        raise ValueError(f"XLA refused FFI target {name!r} for {platform}: {exc}") from None


def register_ffi_type(name: str, registration: Any, platform: str) -> None:
    """Register a user's FFI type (``{"type_id": capsule, "type_info": capsule}``)."""
    try:
        xla_client.register_custom_type(name, registration, platform=platform)
    except (_jax.JaxRuntimeError, RuntimeError, TypeError) as exc:
        raise ValueError(f"XLA refused FFI type {name!r} for {platform}: {exc}") from None


def ffi_include_dir() -> str:
    """The XLA FFI headers jaxlib ships (``<jaxlib>/include``, holding ``xla/ffi/api``)."""
    # xla_client.py sits at the top of the jaxlib package, beside include/
    return os.path.join(os.path.dirname(os.path.abspath(xla_client.__file__)), "include")


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


def put_shards(
    shards: Sequence[np.ndarray],
    aval: Any,
    sharding: LayoutSharding,
    devices: Sequence[RawDevice],
    shard_avals: Sequence[Any],
) -> RawBuffer:
    """One multi-device buffer from host pieces, ``shards[i]`` going to ``devices[i]``.

    Each piece is put on its device, then the pieces are assembled: jaxlib's batched put of a
    partially replicated layout calls back into jax (absent here) and fails.
    """
    pieces = [
        put(shard, shard_aval, _device_sharding(device), device)
        for shard, shard_aval, device in zip(shards, shard_avals, devices)
    ]
    return assemble(pieces, aval, sharding)


def assemble(pieces: Sequence[RawBuffer], aval: Any, sharding: LayoutSharding) -> RawBuffer:
    """One multi-device buffer from single-device ones, in the sharding's device order (the
    pieces are shared, not copied)."""
    return _jax.ArrayImpl(aval, sharding, list(pieces), True, _skip_checks=True)


_device_shardings: dict[RawDevice, DeviceSharding] = {}


def _device_sharding(device: RawDevice) -> DeviceSharding:
    found = _device_shardings.get(device)
    if found is None:
        found = _device_shardings[device] = DeviceSharding(device)
    return found


_no_jax_import = threading.Lock()


def shard_buffers(buffer: RawBuffer) -> list[RawBuffer]:
    """The single-device buffers of a multi-device buffer, in its device order.

    jaxlib builds each piece's abstract value by importing ``jax.core`` when that module can
    be imported (and carries on with none when it can't). ember never imports jax, so while
    jax is not already loaded the import is made to fail for the duration of this call.
    """
    if "jax" in sys.modules:
        return list(buffer._arrays)
    # Every module it asks for is blocked by name: a None in sys.modules fails the import at
    # once, where a missing name still runs the import machinery (~14 us per module and
    # piece) and, with jax installed, jax/__init__.py.
    with _no_jax_import:
        for name in _JAX_MODULES_JAXLIB_IMPORTS:
            sys.modules[name] = None  # type: ignore[assignment]
        try:
            return list(buffer._arrays)
        finally:
            for name in _JAX_MODULES_JAXLIB_IMPORTS:
                if sys.modules.get(name, 0) is None:
                    del sys.modules[name]


_JAX_MODULES_JAXLIB_IMPORTS = ("jax", "jax.core", "jax._src", "jax._src.sharding_impls")


def copy_to(buffer: RawBuffer, sharding: DeviceSharding) -> RawBuffer:
    (moved,) = _jax.batched_copy_array_to_devices_with_sharding(
        [buffer],
        [sharding._internal_device_list],
        [sharding],
        [xla_client.ArrayCopySemantics.ALWAYS_COPY],
    )
    return moved


def to_dlpack(buffer: RawBuffer, stream: int | None) -> Any:
    """A DLPack capsule sharing ``buffer``'s memory. With ``stream`` (a consumer's GPU
    stream) jaxlib makes that stream wait on the buffer's definition event; with None the
    host waits until the buffer is written."""
    return _jax.buffer_to_dlpack_managed_tensor(buffer, stream=stream)


def external_ready_stream(device: RawDevice) -> int | None:
    """The stream on ``device`` that a DLPack producer must order its writes before, so that
    ember's programs see them (GPUs); None where devices have no streams (CPU)."""
    if device.platform == "cpu":
        return None  # jaxlib: GetStreamForExternalReadyEvents is only implemented for GPU
    return device.get_stream_for_external_ready_events()


def from_dlpack(capsule: Any, device: RawDevice, stream: int | None) -> RawBuffer:
    """A buffer sharing the memory a DLPack capsule describes (jaxlib copies only where it
    must, e.g. for host memory not aligned to 64 bytes)."""
    return _jax.dlpack_managed_tensor_to_buffer(capsule, device, stream)


def with_aval(buffer: RawBuffer, aval: Any, sharding: DeviceSharding) -> RawBuffer:
    """``buffer`` (from ``from_dlpack``, which leaves it without one) with ember's abstract
    value, as every buffer ember holds has."""
    return _jax.ArrayImpl(aval, sharding, [buffer], True, _skip_checks=True)


def to_numpy(buffer: RawBuffer) -> np.ndarray:
    host = np.asarray(buffer)
    if host.dtype == object:
        # Dtypes outside NumPy's buffer protocol (ml_dtypes' bfloat16, float8) come back as
        # object arrays; jaxlib's own conversion knows them.
        host = buffer._single_device_array_to_np_array_did_copy()[0]
    return host


def block_until_ready(buffers: Sequence[RawBuffer]) -> None:
    _jax.batched_block_until_ready(list(buffers))


# -- executables ---------------------------------------------------------------------------------


def compile_text(
    client: RawClient,
    text: str | bytes,
    devices: Sequence[RawDevice],
    host_callbacks: Sequence[Any] = (),
    debug_options: Mapping[str, Any] | None = None,
) -> Any:
    """Compile StableHLO (text, or MLIR bytecode); a program over several devices is
    partitioned by Shardy.

    ``host_callbacks``: the Python functions the program's ``xla_ffi_python_*_callback``
    custom calls name by index (jaxlib takes them only with a parsed module).
    ``debug_options``: fields of XLA's ``DebugOptions`` the platform compiles with (see
    ``compile_options``)."""
    _initialize_lapack_if_called(text)
    options = compile_options(devices, debug_options)
    device_list = _jax.DeviceList(tuple(devices))
    if host_callbacks:
        module = parse_module(text)
        return client.compile_and_load(
            module, device_list, options, host_callbacks=list(host_callbacks)
        )
    return client.compile_and_load(text, device_list, options)


def compile_options(
    devices: Sequence[RawDevice], debug_options: Mapping[str, Any] | None = None
) -> Any:
    """The options ``compile_text`` compiles with for ``devices``.

    ``debug_options``: fields of XLA's ``DebugOptions`` set on every compile, by name: what a
    platform's compiler needs to know about its machine, such as where the CUDA tools are
    (``xla_gpu_cuda_data_dir``). A name XLA does not have is a ``ValueError``."""
    options = xla_client.CompileOptions()
    # Without an explicit assignment XLA runs partition 0 on the client's first device,
    # whatever device list is passed, and rejects buffers that live elsewhere.
    # Shape [replicas, partitions]: ember runs one replica with one partition per device.
    ids = np.array([[d.id for d in devices]], dtype=np.int32)
    options.device_assignment = xla_client.DeviceAssignment.create(ids)
    if len(devices) > 1:
        options.num_partitions = len(devices)
        options.executable_build_options.use_spmd_partitioning = True
        options.executable_build_options.use_shardy_partitioner = True
    if debug_options:
        xla_debug = options.executable_build_options.debug_options
        for name, value in debug_options.items():
            if not hasattr(xla_debug, name):
                raise ValueError(f"XLA has no compiler debug option {name!r}")
            setattr(xla_debug, name, value)
    return options


def compile_options_fingerprint(
    devices: Sequence[RawDevice], debug_options: Mapping[str, Any] | None = None
) -> bytes:
    """The serialized compile options for ``devices``: every field that changes the executable
    (device assignment, partitions, partitioner, debug options), for keys of compiled
    programs."""
    return compile_options(devices, debug_options).SerializeAsString()


# jaxlib's MLIR bindings are imported on first use: they cost ~45 ms at startup, and only
# programs that call back into Python (a parsed module) and ember.export need them.
_mlir_context: Any = None
_mlir_lock = threading.Lock()  # MLIR contexts are not thread-safe


def _mlir_module(name: str) -> Any:
    return importlib.import_module(name)


def _mlir_context_made() -> Any:
    """One MLIR context with StableHLO, CHLO, MHLO and Shardy registered (parsing is cheap;
    building a context is not). Callers hold ``_mlir_lock``."""
    global _mlir_context
    if _mlir_context is None:
        ir = _mlir_module("jaxlib.mlir.ir")
        registry = ir.DialectRegistry()
        _mlir_module("jaxlib.mlir._mlir_libs._jax_mlir_ext").register_dialects(registry)
        context = ir.Context()
        context.append_dialect_registry(registry)
        context.load_all_available_dialects()
        for name in ("stablehlo", "sdy", "chlo"):
            _mlir_module(f"jaxlib.mlir.dialects.{name}").register_dialect(context)
        _mlir_module("jaxlib.mlir.dialects.mhlo").register_mhlo_dialect(context)
        _mlir_context = context
    return _mlir_context


def parse_module(text: str | bytes) -> Any:
    """StableHLO (text or bytecode) as a module of jaxlib's MLIR bindings."""
    with _mlir_lock:
        context = _mlir_context_made()
        with context:
            return _mlir_module("jaxlib.mlir.ir").Module.parse(text)


def result_handler(aval: Any, sharding: DeviceSharding) -> Any:
    # _skip_checks: the C++ checks would import jax to compare shardings.
    return _jax.array_result_handler(aval, sharding, committed=True, _skip_checks=True)


def output_shardings(executable: Any) -> list[str]:
    return [
        normalized_sharding(xla_client.HloSharding.from_proto(op))
        for op in executable.get_output_shardings()
    ]


def hlo_text(executable: Any) -> str:
    return "\n\n".join(module.to_string() for module in executable.hlo_modules())


def compile_only_devices(
    name: str, library_path: str, topology_name: str, options: Mapping[str, Any]
) -> list[RawDevice]:
    """The devices of a named topology of plugin ``name`` (e.g. ``"v5e:2x2"`` for TPUs), made
    by the plugin's compiler alone: no hardware is needed. They compile (``compile_only``)
    but hold no buffers and run nothing. ``options``: the plugin's topology options."""
    c_api = plugin_c_api(name, library_path)
    if c_api is None:
        raise XlaRuntimeError(
            f"FAILED_PRECONDITION: the {name} PJRT library was loaded by another user of jaxlib "
            f"in this process, which keeps its C API: topologies cannot be made here"
        )
    topology = xla_client.make_c_api_device_topology(c_api, topology_name, **dict(options))
    return list(topology._make_compile_only_devices())


def compile_only(
    text: str,
    devices: Sequence[RawDevice],
    debug_options: Mapping[str, Any] | None = None,
) -> Any:
    """Compile StableHLO for compile-only ``devices`` (``compile_only_devices``): an executable
    to inspect (``hlo_text``, ``memory_stats``, ``cost_analysis()``), never to run. The
    compile-only client takes a parsed module, not text."""
    options = compile_options(devices, debug_options)
    module = parse_module(text)
    return devices[0].client.compile(module, _jax.DeviceList(tuple(devices)), options)


def memory_stats(executable: Any) -> Any:
    return executable.get_compiled_memory_stats()


def serialize(client: RawClient, executable: Any) -> bytes:
    return client.serialize_executable(executable)


def deserialize(client: RawClient, blob: bytes, devices: Sequence[RawDevice]) -> Any:
    _initialize_lapack_if_called(blob)
    return client.deserialize_executable(blob, _jax.DeviceList(tuple(devices)), None)


# -- profiling -----------------------------------------------------------------------------------


def start_profiler_session() -> Any:
    """XLA's profiler, tracing every client of this process (host and devices) from now on;
    raises XlaRuntimeError (ALREADY_EXISTS) while another session runs."""
    return _profiler.ProfilerSession()


def stop_and_export_profile(session: Any, log_dir: str) -> str:
    """Stop ``session`` and write its trace (an XSpace) in TensorBoard's layout under
    ``log_dir``: ``plugins/profile/<run>/<host>.xplane.pb`` and ``<host>.trace.json.gz``.
    Returns the run's directory (named after the time, so the newest one)."""
    xspace = session.stop()
    session.export(xspace, log_dir)
    runs = os.path.join(log_dir, "plugins", "profile")
    return max((os.path.join(runs, name) for name in os.listdir(runs)), key=os.path.getmtime)


def trace_me(name: str, metadata: dict[str, Any]) -> Any:
    """A context manager recording a span in the running trace (nearly free when none runs)."""
    return _profiler.TraceMe(name, **metadata)


def start_profiler_server(port: int) -> Any:
    """Serve traces to a profiler client on ``port``; stops when the handle is dropped."""
    return _profiler.start_server(port)


def heap_profile(client: RawClient) -> bytes:
    """The buffers and executables ``client`` holds, as a pprof profile (not compressed)."""
    return client.heap_profile()


# -- StableHLO portable artifacts (ember.export) ---------------------------------------------------


def stablehlo_versions() -> dict[str, str]:
    """StableHLO versions of this jaxlib: ``current``, ``minimum`` (the oldest it reads) and
    ``week_4`` / ``week_12`` (the versions StableHLO promises consumers 4 / 12 weeks old read)."""
    stablehlo = _mlir_module("jaxlib.mlir.dialects.stablehlo")
    requirement = stablehlo.StablehloCompatibilityRequirement
    return {
        "current": stablehlo.get_current_version(),
        "minimum": stablehlo.get_minimum_version(),
        "week_4": stablehlo.get_version_from_compatibility_requirement(requirement.WEEK_4),
        "week_12": stablehlo.get_version_from_compatibility_requirement(requirement.WEEK_12),
    }


def to_portable_artifact(text: str, target_version: str) -> bytes:
    """StableHLO text as a VHLO portable artifact readable by StableHLO ``target_version``."""
    with _mlir_lock:
        return _jax.mlir.serialize_portable_artifact(text, target_version, False)


def from_portable_artifact(artifact: bytes) -> str:
    """The StableHLO text of a portable artifact (of any version this jaxlib reads)."""
    with _mlir_lock:
        module = _jax.mlir.deserialize_portable_artifact(artifact, _mlir_context_made())
        return module.operation.get_asm(enable_debug_info=False)


def refine_polymorphic_shapes(text: str) -> bytes:
    """A module with dynamically shaped tensors (an exported program called with static ones)
    refined to static shapes, its shape assertions checked; MLIR bytecode."""
    with _mlir_lock:
        return _jax.mlir.refine_polymorphic_shapes(
            text.encode(), enable_shape_assertions=True, validate_static_shapes=True
        )
