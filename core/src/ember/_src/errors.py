"""The exceptions ember raises, and how they name the user's line of code.

Every exception class here is public (``ember.errors``) and documented in docs/errors.md.
They subclass the built-in type a NumPy user would expect (``TypeError`` for dtype and shape
misuse, ``RuntimeError`` for backend problems) so that ``except TypeError`` keeps working.
"""

from __future__ import annotations

import os
import sys
import traceback

_EMBER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PLUGIN_MARKERS = (os.sep + "ember_plugin_", os.sep + "pluggy" + os.sep)


class EmberError(Exception):
    """Base class of ember's own exceptions."""


class EmberTypeError(EmberError, TypeError):
    """An operation got operands of the wrong shape or dtype."""


class ShapeMismatchError(EmberTypeError, ValueError):
    """Contracted dimensions differ (``dot``, ``matmul``, ``tensordot``, ``einsum``, ...): a
    TypeError as in JAX and a ValueError as in NumPy, so code written for either catches it."""


class ConcretizationTypeError(EmberTypeError):
    """A traced value was needed as a concrete Python value (e.g. a shape, or `if x:`)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """A traced value was used where Python needs a bool (`if`, `while`, `and`, `or`)."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """A traced value was used where Python needs an int (`range`, an index, a shape)."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value was converted to a NumPy array (``np.asarray(tracer)``)."""


class NonConcreteBooleanIndexError(ConcretizationTypeError, IndexError):
    """A traced boolean mask was used as an index: the result's shape would depend on its
    values. An IndexError as in JAX, and still a ConcretizationTypeError."""


class UnexpectedTracerError(EmberError):
    """A tracer escaped the transformation that created it and was used afterwards."""


class UnboundAxisError(EmberError, NameError):
    """A collective named an axis that no enclosing vmap or shard_map binds."""


class BackendError(EmberError, RuntimeError):
    """No backend can run the computation (none installed, none selected, init failed)."""


class UnknownPlatformError(BackendError, ValueError):
    """A platform name was asked for that no installed plugin provides."""


class PluginError(EmberError, RuntimeError):
    """A plugin is broken or incompatible with this version of ember."""


class PluginWarning(UserWarning):
    """A plugin or its platform failed and was skipped (the default backend fell back to the
    next platform); ``python -m ember doctor`` shows the full traceback."""


class CompileError(EmberError, RuntimeError):
    """The backend compiler rejected a lowered computation."""


class ExecutionError(EmberError, RuntimeError):
    """The backend failed while running a compiled computation."""


class ControlFlowTypeError(EmberTypeError):
    """Branches or loop bodies whose output types disagree with what the construct needs."""


class CustomDerivativeError(EmberTypeError):
    """A custom_jvp/custom_vjp rule returned values of the wrong structure or type."""


class LoweringError(EmberError, TypeError):
    """A primitive could not be lowered (names the primitive and the user's line)."""


class JaxprTypeError(EmberTypeError):
    """A jaxpr is ill-typed (an internal error in a transformation or a rule)."""


class ShardingTypeError(EmberTypeError):
    """Under explicit mesh axes, operands whose typed shardings do not fit together (two
    meshes, one mesh axis used twice, an output sharding that is ambiguous without
    ``out_sharding=``), or a sharding that does not fit the array or the mesh in scope."""


class OutOfMemoryError(ExecutionError, MemoryError):
    """The backend could not allocate the memory a computation's arrays need."""


class CallbackError(ExecutionError):
    """A host callback (``debug.print``, ``debug.callback``, ``pure_callback``,
    ``io_callback``) raised, or returned results of another structure, shape or dtype than
    declared. Names the callback and the line that made it; the callback's own exception is
    chained as the cause."""


class DistributedError(EmberError, RuntimeError):
    """A multi-process job could not be set up or kept together: ``initialize`` called twice
    or after the first computation, a coordinator that cannot be reached, processes that
    disagree on the job's shape, a global array read where only part of it lives."""


class ProcessFailedError(DistributedError):
    """Another process of the job died or stopped sending heartbeats while this one waited on
    it (names the process and how long it has been silent)."""


class CollectiveTimeoutError(DistributedError, TimeoutError):
    """A wait on the other processes (a cross-process computation, a barrier) passed its
    deadline: a process is alive but did not join (names the processes that are behind)."""


class CheckifyError(EmberError, ValueError):
    """A runtime check failed: ``checkify.check`` run eagerly, or ``Error.throw()`` on the
    error a checkified function returned (a failed check, a NaN, a division by zero, an
    out-of-bounds index). ``ember.experimental.checkify.JaxRuntimeError`` is this class."""


class ExportError(EmberError, ValueError):
    """An exported program cannot be read or called here: a file that is not an ember export
    (bad magic bytes), of an unsupported format version, truncated, with bad metadata or a
    bad StableHLO artifact, or a custom pytree node whose serialized name is not registered;
    a call on a platform or device count it was not exported for; or the export of a function
    that calls back into Python (an artifact cannot carry a Python function)."""


# Every class above is public as ember.errors.X: say so in tracebacks and reprs, instead of
# naming the private module that happens to define it.
for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, (EmberError, PluginWarning)):
        _cls.__module__ = "ember.errors"
del _cls


def user_frame() -> traceback.FrameSummary | None:
    """The innermost stack frame that belongs to user code (not ember, a plugin or pluggy)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_internal_file(filename):
            return traceback.FrameSummary(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def is_internal_file(filename: str) -> bool:
    if filename.startswith(_EMBER_ROOT) or filename.startswith("<frozen"):
        return True
    return any(marker in filename for marker in _PLUGIN_MARKERS) or filename.endswith(
        os.sep + "contextlib.py"
    )


def where() -> str:
    """' (at file.py:12 in fn)' for the user's current line, or '' when there is none."""
    frame = user_frame()
    if frame is None:
        return ""
    return f" (at {format_frame(frame)})"


def format_frame(frame: traceback.FrameSummary) -> str:
    return f"{frame.filename}:{frame.lineno} in {frame.name}"
