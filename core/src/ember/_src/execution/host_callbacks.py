"""Calling back into Python from a running program: what the executable calls, and how its
failures reach the caller.

The lowering of a callback equation registers a ``HostFunction`` with its module: the function
XLA calls with the operands' values as (read-only) NumPy arrays, and whose results it copies
into the program's buffers. XLA trusts those results blindly (a wrong dtype corrupts memory),
so every result is checked against the declared abstract value here, on the host, first.

A callback that raises fails the run. XLA reports that as a runtime error carrying only
text; the original exception is kept here, and ``raise_failure`` (called by whoever sees the
runtime error) raises it as a ``CallbackError`` naming the callback, with the exception as
its cause.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray

_failures: list[errors.CallbackError] = []
_failures_lock = threading.Lock()


class HostFunction:
    """What a compiled program calls: ``fun`` on the operands' values, its results checked.

    ``fun`` takes and returns flat lists of arrays. ``tokens``: how many ordered-effect tokens
    XLA passes first and expects back first (they carry no data: passed through).
    """

    __slots__ = ("fun", "result_avals", "tokens", "description")

    def __init__(
        self,
        fun: Callable[..., Sequence[Any]],
        result_avals: Sequence[ShapedArray],
        tokens: int,
        description: str,
    ):
        self.fun = fun
        self.result_avals = tuple(result_avals)
        self.tokens = tokens
        self.description = description

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        tokens, values = args[: self.tokens], args[self.tokens :]
        try:
            results = self.fun(*values)
            checked = check_results(results, self.result_avals, self.description)
        except errors.CallbackError as err:
            _record(err)
            raise
        except Exception as exc:
            failure = errors.CallbackError(f"{self.description} raised {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            _record(failure)
            raise failure from exc
        return (*tokens, *checked)


class KernelContext:
    """What a named kernel gets first: the ``platform`` it runs on and, on a GPU, the
    ``stream`` (an integer handle, e.g. for ``cupy.cuda.ExternalStream``) that the program
    runs on; None on CPU, which has no streams."""

    __slots__ = ("platform", "_raw")

    def __init__(self, platform: str, raw: Any):
        self.platform = platform
        self._raw = raw

    @property
    def stream(self) -> int | None:
        if self.platform == "cpu" or self._raw is None:
            return None  # XLA's CPU execution context has no stream to give
        return int(self._raw.stream)

    def __repr__(self) -> str:
        return f"KernelContext(platform={self.platform!r})"


class BufferFunction:
    """What a compiled program calls for a named kernel (XLA's buffer callback):
    ``kernel(ctx, outputs, *inputs, **static_params)`` on the program's own buffers.

    XLA calls it with its execution context, the input buffers and then the output buffers;
    the kernel writes the outputs in place and returns nothing. A kernel that raises, or
    returns a value, fails the run with a ``CallbackError`` naming it (see ``raise_failure``).
    """

    __slots__ = ("kernel", "platform", "num_inputs", "static_params", "description")

    def __init__(
        self,
        kernel: Callable[..., Any],
        platform: str,
        num_inputs: int,
        static_params: dict[str, Any],
        description: str,
    ):
        self.kernel = kernel
        self.platform = platform
        self.num_inputs = num_inputs
        self.static_params = static_params
        self.description = description

    def __call__(self, raw_context: Any, *buffers: Any) -> tuple[()]:
        inputs, outputs = buffers[: self.num_inputs], list(buffers[self.num_inputs :])
        ctx = KernelContext(self.platform, raw_context)
        try:
            returned = self.kernel(ctx, outputs, *inputs, **self.static_params)
            if returned is not None:
                raise errors.CallbackError(
                    f"{self.description} returned a value of type {type(returned).__name__}: "
                    f"a kernel writes its outputs in place and returns None"
                )
        except errors.CallbackError as err:
            _record(err)
            raise
        except Exception as exc:
            failure = errors.CallbackError(f"{self.description} raised {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            _record(failure)
            raise failure from exc
        return ()


def check_results(
    results: Sequence[Any], avals: Sequence[ShapedArray], description: str
) -> list[np.ndarray]:
    """``results`` as contiguous arrays of exactly ``avals``' shapes and dtypes. A dtype that
    canonicalises to the declared one (float64 for a float32 result with x64 off) is
    converted, as JAX does; any other difference is a ``CallbackError``."""
    results = list(results)
    if len(results) != len(avals):
        raise errors.CallbackError(
            f"{description} returned {len(results)} arrays where {len(avals)} were declared"
        )
    checked = []
    for i, (value, aval) in enumerate(zip(results, avals)):
        array = np.asarray(value)
        if array.shape != aval.shape:
            raise errors.CallbackError(
                f"{description} returned an array of shape {array.shape} for result {i}, "
                f"declared {aval.str_short()}"
            )
        if array.dtype != aval.dtype:
            if dtypes.canonicalize(array.dtype) != aval.dtype:
                raise errors.CallbackError(
                    f"{description} returned dtype {array.dtype} for result {i}, declared "
                    f"{aval.str_short()}"
                )
            array = array.astype(aval.dtype)
        # (np.ascontiguousarray would make a 0-d array 1-d)
        checked.append(array if array.flags.c_contiguous else array.copy(order="C"))
    return checked


def _record(failure: errors.CallbackError) -> None:
    with _failures_lock:
        _failures.append(failure)
        del _failures[:-8]  # only the latest few matter: one run reports one


def raise_failure(runtime_error: BaseException) -> None:
    """If a host callback's failure caused ``runtime_error``, raise that failure instead."""
    with _failures_lock:
        if not _failures or str(_failures[-1]) not in str(runtime_error):
            return
        failure = _failures.pop()
        _failures.clear()
    raise failure from failure.__cause__
