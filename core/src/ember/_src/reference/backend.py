"""The ``reference`` backend: every computation is evaluated by NumPy, one primitive at a time.

It is slow and exact by construction, needs nothing beyond NumPy, and is what the core's test
suite runs on when no XLA backend is installed. Buffers are read-only NumPy arrays in a small
holder, so that donation and ``delete()`` behave as they do on a real device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import ShapedArray
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.ir import check_result_sizes
from ember._src.runtime.backend import Backend, Computation, Device, Executable

PLATFORM = "reference"


class ReferenceBuffer:
    """A read-only host array standing in for device memory."""

    __slots__ = ("value",)

    def __init__(self, value: np.ndarray | None):
        self.value = value


def _frozen(value: np.ndarray) -> np.ndarray:
    value = np.array(value, copy=True)  # never alias the caller's memory
    value.setflags(write=False)
    return value


class ReferenceDevice(Device):
    def __init__(self, backend: ReferenceBackend, index: int):
        self.platform = PLATFORM
        self.id = index
        self.device_kind = "numpy"
        self.process_index = 0
        self.backend = backend

    def __repr__(self) -> str:
        return f"ReferenceDevice(id={self.id})"


class ReferenceExecutable(Executable):
    def __init__(self, computation: Computation):
        self.computation = computation
        self._donated = [i for i, d in enumerate(computation.donated_invars) if d]

    def execute(self, args: Sequence[ReferenceBuffer]) -> list[ReferenceBuffer]:
        values = []
        for i, buf in enumerate(args):
            if buf.value is None:
                raise errors.ExecutionError(
                    f"{self.computation.name}: argument {i} has been deleted or donated"
                )
            values.append(buf.value)
        try:
            # Freezing copies: a broadcast result is first allocated here.
            outs = [
                ReferenceBuffer(_frozen(v)) for v in evaluate_jaxpr(self.computation.jaxpr, values)
            ]
        except errors.EmberError:
            raise
        except MemoryError as exc:
            raise errors.OutOfMemoryError(
                f"{self.computation.name} ran out of memory on the reference backend: {exc}"
            ) from None
        except Exception as exc:
            raise errors.ExecutionError(
                f"{self.computation.name} failed on the reference backend: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        for i in self._donated:
            args[i].value = None
        return outs

    def as_text(self) -> str:
        return str(self.computation.jaxpr)

    def cost_analysis(self) -> dict[str, float]:
        # No compiler, so no estimate of flops: report what is known exactly.
        nbytes = sum(a.size * a.dtype.itemsize for a in self.computation.in_avals)
        nbytes += sum(a.size * a.dtype.itemsize for a in self.computation.out_avals)
        return {"bytes accessed": float(nbytes), "equations": float(_count(self.computation))}


def _count(computation: Computation) -> int:
    return len(computation.jaxpr.jaxpr.eqns)


class ReferenceBackend(Backend):
    platform = PLATFORM
    compiles_stablehlo = False

    def __init__(self, device_count: int = 1):
        self._devices = [ReferenceDevice(self, i) for i in range(device_count)]

    def devices(self) -> list[Device]:
        return list(self._devices)

    def buffer_from_numpy(
        self, value: np.ndarray, aval: ShapedArray, device: Device
    ) -> ReferenceBuffer:
        return ReferenceBuffer(_frozen(np.asarray(value, aval.dtype)))

    def buffer_to_numpy(self, buffer: ReferenceBuffer) -> np.ndarray:
        if buffer.value is None:
            raise RuntimeError("the array has been deleted or donated")
        return buffer.value

    # A multi-device buffer is simply the global value: the reference backend interprets whole
    # programs, so a layout over devices changes where pieces would live, never the values.

    def buffer_from_shards(
        self, shards: Sequence[np.ndarray], aval: ShapedArray, sharding: Any
    ) -> ReferenceBuffer:
        value = np.empty(aval.shape, aval.dtype)
        indices = sharding.devices_indices_map(aval.shape)
        for device, shard in zip(sharding.addressable_devices, shards):
            value[indices[device]] = shard
        return ReferenceBuffer(_frozen(value))

    def shard_buffers(
        self, buffer: ReferenceBuffer, aval: ShapedArray, sharding: Any
    ) -> list[ReferenceBuffer]:
        indices = sharding.devices_indices_map(aval.shape)
        value = self.buffer_to_numpy(buffer)
        return [ReferenceBuffer(_frozen(value[indices[d]])) for d in sharding.addressable_devices]

    def copy_to_device(
        self, buffer: ReferenceBuffer, aval: ShapedArray, device: Device
    ) -> ReferenceBuffer:
        return ReferenceBuffer(buffer.value)

    def compile(self, computation: Computation) -> ReferenceExecutable:
        for eqn in computation.jaxpr.jaxpr.eqns:  # refuse impossible sizes up front, as XLA does
            check_result_sizes(eqn)
        return ReferenceExecutable(computation)

    def delete(self, buffer: ReferenceBuffer) -> None:
        buffer.value = None

    def is_deleted(self, buffer: ReferenceBuffer) -> bool:
        return buffer.value is None

    def versions(self) -> dict[str, str]:
        return {"numpy": np.__version__}
