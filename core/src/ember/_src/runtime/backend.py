"""The contract between ember's core and a backend: devices, buffers, compile, execute.

A backend plugin's platform factory returns a ``Backend``. The core hands it a
``Computation`` (a closed jaxpr plus its StableHLO lowering, produced lazily for the backend's
platform) and gets back an ``Executable`` that runs on backend *buffers* (opaque objects the
backend made). ``ember.Array`` wraps one buffer with its abstract value and sharding.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src.core import ShapedArray
from ember._src.ir import ClosedJaxpr

Buffer = Any

# What an effect token looks like to a backend's buffers: it carries no data.
TOKEN_AVAL = ShapedArray((0,), np.dtype(np.bool_))


class Device:
    """One device of a backend. Plugins subclass this (or set the same attributes).

    Attributes: ``platform`` (e.g. "cpu"), ``id`` (unique across processes), ``device_kind``
    (e.g. "cpu", "NVIDIA H100"), ``process_index`` (the process that owns it), ``backend``.
    """

    platform: str
    id: int
    device_kind: str
    process_index: int = 0
    backend: Backend

    def __repr__(self) -> str:
        return f"{self.platform.capitalize()}Device(id={self.id})"

    def __lt__(self, other: Device) -> bool:
        return (self.platform, self.id) < (other.platform, other.id)


class Computation:
    """What a backend compiles.

    ``jaxpr`` is the whole program; ``as_text(platform)`` returns its StableHLO module, lowered
    with the given platform's rule overrides (built on first request, then cached). XLA-based
    backends compile the text; the reference backend interprets ``jaxpr`` directly.
    """

    def __init__(
        self,
        name: str,
        jaxpr: ClosedJaxpr,
        *,
        devices: Sequence[Device],
        donated_invars: Sequence[bool] | None = None,
        lower: Callable[[Computation, str], str] | None = None,
        text: dict[str, str] | None = None,
        in_shardings: Sequence[Any] | None = None,
        out_shardings: Sequence[Any] | None = None,
        mesh: Any = None,
    ):
        self.name = name
        self.jaxpr = jaxpr
        self.in_avals: tuple[ShapedArray, ...] = tuple(jaxpr.in_avals)
        self.out_avals: tuple[ShapedArray, ...] = tuple(jaxpr.out_avals)
        self.devices = tuple(devices)
        self.donated_invars = tuple(donated_invars or (False,) * len(self.in_avals))
        self._lower = lower
        self._text: dict[str, str] = dict(text or {})
        # For a computation over several devices (SPMD): the Sharding of each argument, and of
        # each result where the caller fixed it (None: the partitioner chooses).
        self.in_shardings = tuple(in_shardings or (None,) * len(self.in_avals))
        self.out_shardings = tuple(out_shardings or (None,) * len(self.out_avals))
        self.mesh = mesh  # the device mesh of an SPMD computation (devices in mesh order)
        # The Python functions the program calls back into (host callbacks: debug.print,
        # pure_callback, io_callback), in the order of the indices the lowering gave them.
        # Filled while the computation is lowered; a backend hands them to its compiler.
        self.host_callbacks: list[Callable[..., Any]] = []
        # How many effect tokens the compiled program takes before its arguments and returns
        # before its results (one per ordered effect; see ``lower_module``'s
        # ``effect_tokens``). A backend makes one result of ``TOKEN_AVAL`` for each.
        self.effect_tokens = 0

    @property
    def num_partitions(self) -> int:
        return len(self.devices)

    def as_text(self, platform: str) -> str:
        text = self._text.get(platform)
        if text is None:
            if self._lower is None:
                raise ValueError(f"computation {self.name!r} has no lowering for {platform!r}")
            text = self._text[platform] = self._lower(self, platform)
        return text


class Executable(abc.ABC):
    """A compiled computation, ready to run on buffers of its backend."""

    # True for a program compiled for devices this process cannot run on (the compile-only
    # devices of a named topology, ``ember.experimental.topologies``): it can be inspected
    # (``as_text``, ``cost_analysis``, ``memory_analysis``); ``execute`` raises ExecutionError.
    compile_only: bool = False

    @abc.abstractmethod
    def execute(self, args: Sequence[Buffer]) -> list[Buffer]:
        """Run on one buffer per input; return one buffer per output."""

    def output_shardings(self) -> list[str] | None:
        """For an SPMD executable: the XLA sharding string of each output as compiled (device
        ids being positions in the computation's device list); None where not applicable."""
        return None

    def as_text(self) -> str:
        """The compiled program (e.g. optimised HLO), for humans."""
        raise NotImplementedError(f"{type(self).__name__} cannot print its compiled program")

    def cost_analysis(self) -> dict[str, float]:
        raise NotImplementedError(f"{type(self).__name__} has no cost analysis")

    def memory_analysis(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no memory analysis")

    def serialize(self) -> bytes:
        """The compiled program as bytes that ``Backend.deserialize_executable`` loads back
        (in this or another process), for the persistent compilation cache."""
        raise NotImplementedError(f"{type(self).__name__} cannot be serialized")


class ProfileSession(abc.ABC):
    """One running trace of a ``Profiler``."""

    @abc.abstractmethod
    def stop_and_export(self, log_dir: str) -> str:
        """Stop tracing and write the trace under ``log_dir`` in TensorBoard's layout
        (``plugins/profile/<run>/<host>.xplane.pb``, with ``<host>.trace.json.gz`` beside it);
        return the run's directory."""


class Profiler(abc.ABC):
    """A tracing profiler (XLA's, for PJRT backends): what ``ember.profiler`` drives."""

    @abc.abstractmethod
    def start(self) -> ProfileSession:
        """Start tracing; raises RuntimeError while another trace runs in this process."""

    @abc.abstractmethod
    def annotation(self, name: str, metadata: dict[str, Any]) -> Any:
        """A context manager recording a span named ``name`` (with ``metadata``) in the trace
        running while it is entered; it costs next to nothing when none runs."""

    @abc.abstractmethod
    def start_server(self, port: int) -> Any:
        """Serve traces on ``port`` to a profiler client (TensorBoard); the server stops when
        the returned handle is dropped."""


class Backend(abc.ABC):
    """The runtime of one platform (one PJRT client, or the NumPy reference)."""

    platform: str
    # False for backends that run the jaxpr itself and never read the StableHLO text.
    compiles_stablehlo: bool = True

    @abc.abstractmethod
    def devices(self) -> list[Device]:
        """Every device of this platform, across all processes."""

    def local_devices(self) -> list[Device]:
        return [d for d in self.devices() if d.process_index == self.process_index()]

    def process_index(self) -> int:
        return 0

    @abc.abstractmethod
    def buffer_from_numpy(self, value: np.ndarray, aval: ShapedArray, device: Device) -> Buffer:
        """Copy ``value`` (already of ``aval``'s canonical dtype) onto ``device``."""

    @abc.abstractmethod
    def buffer_to_numpy(self, buffer: Buffer) -> np.ndarray:
        """The buffer's contents on the host (read-only is fine)."""

    @abc.abstractmethod
    def compile(self, computation: Computation) -> Executable:
        """Compile for ``computation.devices``; errors raise ember.errors.CompileError."""

    # -- the persistent compilation cache (optional: a backend without it leaves these) ------

    def cache_fingerprint(self, computation: Computation) -> bytes | None:
        """Everything besides the program's StableHLO text that changes what ``compile`` makes
        of ``computation``: compile options, compiler and runtime versions, the devices
        (ids and kinds, in order), compiler flags. The core adds the text and hashes it all
        into the key of a cached executable. None: this backend's executables are not cached
        (the default; e.g. a backend that interprets the jaxpr and compiles nothing)."""
        return None

    def deserialize_executable(self, computation: Computation, blob: bytes) -> Executable:
        """The executable ``Executable.serialize`` made ``blob`` from, loaded for
        ``computation.devices``; a blob this backend cannot load (corrupted, truncated, from
        another version) raises ember.errors.CompileError."""
        raise NotImplementedError(f"the {self.platform} backend cannot load serialized programs")

    # -- arrays over several devices (optional: a backend without them leaves these) ---------

    def buffer_from_shards(
        self, shards: Sequence[np.ndarray], aval: ShapedArray, sharding: Any
    ) -> Buffer:
        """One multi-device buffer of global ``aval`` from host pieces, ``shards[i]`` going to
        ``sharding.addressable_devices[i]`` (laid out as ``sharding.hlo_sharding`` says; in a
        multi-process job the other processes put the other pieces)."""
        raise NotImplementedError(f"the {self.platform} backend has no multi-device arrays")

    def assemble_buffers(
        self, buffers: Sequence[Buffer], aval: ShapedArray, sharding: Any
    ) -> Buffer:
        """One multi-device buffer from single-device buffers of this backend, ``buffers[i]``
        living on ``sharding.addressable_devices[i]`` (by default through the host)."""
        shards = [self.buffer_to_numpy(b) for b in buffers]
        return self.buffer_from_shards(shards, aval, sharding)

    def shard_buffers(self, buffer: Buffer, aval: ShapedArray, sharding: Any) -> list[Buffer]:
        """The single-device buffers of this process's pieces of a multi-device buffer, in
        ``sharding.addressable_devices`` order."""
        raise NotImplementedError(f"the {self.platform} backend has no multi-device arrays")

    def copy_to_device(self, buffer: Buffer, aval: ShapedArray, device: Device) -> Buffer:
        """Move a buffer of this backend to another of its devices."""
        return self.buffer_from_numpy(self.buffer_to_numpy(buffer), aval, device)

    def buffer_to_dlpack(self, buffer: Buffer, *, stream: int | None) -> Any:
        """A DLPack capsule sharing a single-device buffer's memory (no copy), for arrays in
        a device's own memory (GPUs). ``stream``: the consumer's stream (an integer handle),
        which the backend makes wait until the buffer is written; None: the host waits."""
        raise NotImplementedError(
            f"the {self.platform} backend cannot export device buffers through DLPack"
        )

    def buffer_from_dlpack(self, external: Any, device: Device) -> tuple[Buffer, ShapedArray]:
        """A buffer on ``device`` sharing the memory of ``external`` (an object with
        ``__dlpack__`` whose data is on that device), and its abstract value. The backend
        passes the stream the producer must order its writes before (GPUs) to
        ``external.__dlpack__(stream=...)``."""
        raise NotImplementedError(
            f"the {self.platform} backend cannot import device memory through DLPack"
        )

    def block_until_ready(self, buffers: Sequence[Buffer]) -> None:  # noqa: B027
        """Wait until the buffers' values are computed (a no-op for synchronous backends)."""

    def buffers_ready(self, buffers: Sequence[Buffer]) -> bool:
        """Whether every buffer's value is computed, without waiting (None entries count as
        ready); True for synchronous backends. False when it cannot tell (a deleted buffer):
        the caller then waits, with deadlines."""
        return True

    def delete(self, buffer: Buffer) -> None:  # noqa: B027
        """Free a buffer's memory now (a no-op where memory is garbage-collected)."""

    def is_deleted(self, buffer: Buffer) -> bool:
        return False

    # -- StableHLO portable artifacts (optional: what ember.export needs) ----------------------

    def stablehlo_versions(self) -> dict[str, str]:
        """StableHLO versions: ``current`` (what this backend writes), ``minimum`` (the oldest
        it reads), ``week_4`` / ``week_12`` (what consumers 4 / 12 weeks old read)."""
        raise NotImplementedError(f"the {self.platform} backend has no StableHLO serialisation")

    def to_portable_artifact(self, text: str, target_version: str) -> bytes:
        """StableHLO module text as a portable artifact (VHLO bytecode) that StableHLO
        ``target_version`` reads; ValueError if the text does not parse."""
        raise NotImplementedError(f"the {self.platform} backend has no StableHLO serialisation")

    def from_portable_artifact(self, artifact: bytes) -> str:
        """The StableHLO module text of a portable artifact; ValueError if it is not one."""
        raise NotImplementedError(f"the {self.platform} backend has no StableHLO serialisation")

    def versions(self) -> dict[str, str]:
        """Library versions worth reporting in ``python -m ember doctor``."""
        return {}

    # -- XLA's FFI (optional: what ember.ffi needs) -----------------------------------------

    def register_ffi_target(
        self, name: str, handler: Any, api_version: int, **options: Any
    ) -> None:
        """Make the custom-call target ``name`` run ``handler`` (a PyCapsule holding a C
        function pointer, or a dict of them by FFI stage) in the programs this backend
        compiles from now on. ``api_version``: 1 for XLA's typed FFI, 0 for the legacy custom
        call API; ``options``: what the compiler's registration takes besides (``traits``).
        ValueError when the compiler refuses the handler."""
        raise NotImplementedError(
            f"the {self.platform} backend cannot register XLA FFI targets (target {name!r})"
        )

    def register_ffi_type(self, name: str, registration: Any) -> None:
        """Register the FFI user type ``name`` (``registration``: a dict with a ``type_id``
        capsule and optionally a ``type_info`` one) for the handlers of this backend."""
        raise NotImplementedError(
            f"the {self.platform} backend cannot register XLA FFI types (type {name!r})"
        )

    def ffi_include_dir(self) -> str:
        """The folder holding the C++ headers of XLA's FFI (``xla/ffi/api/ffi.h``) that
        handlers for this backend compile against."""
        raise NotImplementedError(f"the {self.platform} backend ships no XLA FFI headers")

    # -- profiling (optional) -------------------------------------------------------------------

    def profiler(self) -> Profiler:
        """The tracing profiler that records this backend's work (``ember.profiler.trace``)."""
        raise NotImplementedError(f"the {self.platform} backend has no profiler")

    def device_memory_profile(self) -> bytes:
        """What this backend's devices hold now, as a gzip-compressed pprof profile."""
        raise NotImplementedError(f"the {self.platform} backend has no device memory profile")
