"""The exceptions ember raises (see docs/errors.md)."""

from ember._src.errors import (
    BackendError as BackendError,
    CompileError as CompileError,
    ConcretizationTypeError as ConcretizationTypeError,
    ControlFlowTypeError as ControlFlowTypeError,
    CustomDerivativeError as CustomDerivativeError,
    EmberError as EmberError,
    EmberTypeError as EmberTypeError,
    ExecutionError as ExecutionError,
    JaxprTypeError as JaxprTypeError,
    LoweringError as LoweringError,
    OutOfMemoryError as OutOfMemoryError,
    PluginError as PluginError,
    PluginWarning as PluginWarning,
    ShapeMismatchError as ShapeMismatchError,
    TracerArrayConversionError as TracerArrayConversionError,
    TracerBoolConversionError as TracerBoolConversionError,
    TracerIntegerConversionError as TracerIntegerConversionError,
    UnboundAxisError as UnboundAxisError,
    UnexpectedTracerError as UnexpectedTracerError,
    UnknownPlatformError as UnknownPlatformError,
)
