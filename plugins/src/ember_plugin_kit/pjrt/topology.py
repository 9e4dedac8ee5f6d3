"""Compiling for hardware this machine does not have: the compile-only devices of a named
topology of a PJRT plugin (a TPU slice such as ``"v5e:2x2"``), and a backend that compiles
for them.

A plugin's compiler can describe a slice by name without any chip present; programs compiled
for its devices are real executables for that slice, with XLA's cost and memory analysis, but
nothing can run on them here. Any PJRT plugin whose library answers
``PJRT_TopologyDescription_Create`` for a name can use this (TPU's does on any machine).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ember.errors import CompileError, ExecutionError
from ember.extend import Backend, Computation, Device, Executable, ShapedArray
from ember_plugin_kit.pjrt import _jaxlib
from ember_plugin_kit.pjrt.backend import PjrtDevice, describe_compile_error


def compile_only_error(platform: str, what: str) -> ExecutionError:
    return ExecutionError(
        f"{what}: its devices are compile-only devices of a {platform} topology (from "
        f"ember.experimental.topologies), which this machine does not have; inspect it "
        f"(.as_text(), .cost_analysis(), .memory_analysis()) or run it where the "
        f"{platform} hardware is"
    )


class CompileOnlyExecutable(Executable):
    """A program compiled for a topology's devices: everything but running it."""

    compile_only = True

    def __init__(self, computation: Computation, compiled: Any, platform: str):
        self.computation = computation
        self.compiled = compiled
        self.platform = platform
        self._output_shardings = (
            _jaxlib.output_shardings(compiled) if len(computation.devices) > 1 else None
        )

    def output_shardings(self) -> list[str] | None:
        return self._output_shardings

    def execute(self, args: Sequence[Any]) -> list[Any]:
        raise compile_only_error(self.platform, f"{self.computation.name} cannot run here")

    def as_text(self) -> str:
        return _jaxlib.hlo_text(self.compiled)

    def cost_analysis(self) -> dict[str, float]:
        return dict(self.compiled.cost_analysis())

    def memory_analysis(self) -> Any:
        return _jaxlib.memory_stats(self.compiled)


class CompileOnlyBackend(Backend):
    """The backend of one topology's compile-only devices: it compiles, and refuses buffers.

    ``debug_options``: as ``PjrtBackend``'s (XLA ``DebugOptions`` fields set on each compile).
    """

    def __init__(
        self,
        platform: str,
        topology_name: str,
        raw_devices: Sequence[_jaxlib.RawDevice],
        *,
        debug_options: Mapping[str, Any] | None = None,
    ):
        self.platform = platform
        self.topology_name = topology_name
        self.debug_options = dict(debug_options or {})
        self._devices = [PjrtDevice(self, d) for d in raw_devices]

    def devices(self) -> list[Device]:
        return list(self._devices)

    def compile(self, computation: Computation) -> CompileOnlyExecutable:
        text = computation.as_text(self.platform)
        if computation.host_callbacks:
            raise CompileError(
                f"{computation.name} calls back into Python (debug.print, pure_callback, "
                f"io_callback, named kernels), which a compile-only {self.platform} topology "
                f"cannot compile"
            )
        raw_devices = [d.raw for d in computation.devices]
        try:
            compiled = _jaxlib.compile_only(text, raw_devices, self.debug_options)
        except _jaxlib.XlaRuntimeError as exc:
            raise CompileError(describe_compile_error(computation.name, text, str(exc))) from None
        return CompileOnlyExecutable(computation, compiled, self.platform)

    def buffer_from_numpy(self, value: np.ndarray, aval: ShapedArray, device: Device) -> Any:
        raise compile_only_error(self.platform, f"no array can be put on {device}")

    def buffer_to_numpy(self, buffer: Any) -> np.ndarray:
        raise compile_only_error(self.platform, "no array lives here")

    def buffer_from_shards(
        self, shards: Sequence[np.ndarray], aval: ShapedArray, sharding: Any
    ) -> Any:
        raise compile_only_error(self.platform, f"no {aval.str_short()} array can be put on them")

    def versions(self) -> dict[str, str]:
        return {"jaxlib": _jaxlib.JAXLIB_VERSION, "topology": self.topology_name}


def compile_only_backend(
    platform: str,
    library_path: str,
    topology_name: str,
    options: Mapping[str, Any] | None = None,
    *,
    debug_options: Mapping[str, Any] | None = None,
) -> CompileOnlyBackend:
    """A backend over the compile-only devices of ``topology_name`` as the PJRT plugin at
    ``library_path`` (loaded as ``platform``, once per process) describes it. Raises
    ``_jaxlib.XlaRuntimeError`` with the plugin's reason when it does not know the name."""
    raw = _jaxlib.compile_only_devices(platform, library_path, topology_name, options or {})
    return CompileOnlyBackend(platform, topology_name, raw, debug_options=debug_options)
