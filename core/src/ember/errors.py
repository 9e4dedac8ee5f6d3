"""The exceptions ember raises (see docs/errors.md)."""

from ember._src.errors import (
    BackendError as BackendError,
    CompileError as CompileError,
    ConcretizationTypeError as ConcretizationTypeError,
    EmberError as EmberError,
    EmberTypeError as EmberTypeError,
    ExecutionError as ExecutionError,
    OutOfMemoryError as OutOfMemoryError,
    PluginError as PluginError,
    TracerArrayConversionError as TracerArrayConversionError,
    TracerBoolConversionError as TracerBoolConversionError,
    TracerIntegerConversionError as TracerIntegerConversionError,
    UnboundAxisError as UnboundAxisError,
    UnexpectedTracerError as UnexpectedTracerError,
    UnknownPlatformError as UnknownPlatformError,
)
from ember._src.interpreters.eval import JaxprTypeError as JaxprTypeError
from ember._src.lowering.module import LoweringError as LoweringError
