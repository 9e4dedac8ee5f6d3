"""Running cupy on the buffers XLA hands a named kernel: on their GPU, on the program's stream.

XLA's buffers expose ``__cuda_array_interface__``, so ``cupy.asarray`` wraps them without a
copy. Work must go on the execution stream of the program (``ctx.stream``): launched on cupy's
default stream, it could run before XLA has written the inputs or after XLA reads the outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import cupy

from ember.extend import KernelContext

# The dtypes the kernels accept; arithmetic is in float32 either way.
SUPPORTED_DTYPES = ("float32", "float16")


def as_cupy(buffers: Sequence[Any]) -> list[cupy.ndarray]:
    """The buffers as cupy arrays over the same GPU memory (no copies)."""
    return [cupy.asarray(b) for b in buffers]


def check_dtype(kernel: str, array: cupy.ndarray) -> None:
    if array.dtype.name not in SUPPORTED_DTYPES:
        raise TypeError(
            f"the cuda kernel {kernel!r} supports {', '.join(SUPPORTED_DTYPES)}, got "
            f"{array.dtype.name}"
        )


@contextlib.contextmanager
def on_program_stream(ctx: KernelContext, buffer: Any) -> Iterator[None]:
    """Make ``buffer``'s GPU current and the program's execution stream cupy's stream."""
    if ctx.stream is None:
        raise RuntimeError(
            f"the cuda kernels need a GPU execution stream; platform {ctx.platform!r} gave none"
        )
    pointer = buffer.__cuda_array_interface__["data"][0]
    device_id = cupy.cuda.runtime.pointerGetAttributes(pointer).device
    with cupy.cuda.Device(device_id), cupy.cuda.ExternalStream(ctx.stream):
        yield
