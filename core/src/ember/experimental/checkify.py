"""Runtime checks as values (``jax.experimental.checkify``): ``checkify``, ``check``, the
``Error`` a checkified function returns and the sets of errors it can check for."""

from ember._src.checkify.check import check as check, debug_check as debug_check
from ember._src.checkify.check_error import check_error as check_error
from ember._src.checkify.error import (
    BatchedError as BatchedError,
    DivisionByZeroError as DivisionByZeroError,
    Error as Error,
    ErrorCategory as ErrorCategory,
    FailedCheckError as FailedCheckError,
    JaxException as JaxException,
    JaxRuntimeError as JaxRuntimeError,
    NaNError as NaNError,
    OOBError as OOBError,
    all_checks as all_checks,
    automatic_checks as automatic_checks,
    div_checks as div_checks,
    float_checks as float_checks,
    index_checks as index_checks,
    nan_checks as nan_checks,
    user_checks as user_checks,
)
from ember._src.checkify.transform import checkify as checkify
