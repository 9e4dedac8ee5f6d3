"""NaN and inf checks on computed values: the ``debug_nans`` and ``debug_infs`` options.

When one of them is on, every eager primitive's floating outputs are read back to the host and
checked, and so are the outputs of every top-level ``jit`` call; ``jit`` re-runs a function
whose outputs hold such a value op by op (as under ``disable_jit``), so that the eager check
names the first primitive that produced it and the user's line that called it. The error is
``FloatingPointError``, as in JAX.

Off, the checks cost one attribute read per dispatch: ``armed`` is False until either option is
first switched on. Options can be set per thread (``with debug_nans():``), so once armed it
stays armed and the options themselves are read on each dispatch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.config import config
from ember._src.runtime.array import Array

# True once debug_nans or debug_infs has been switched on anywhere (see the module docstring).
armed = False


def _arm(value: bool) -> None:
    global armed
    if value:
        armed = True


config.define(
    "debug_nans",
    False,
    aliases=("jax_debug_nans",),
    on_change=_arm,
    help="Check every computed floating value for NaN and raise FloatingPointError naming the "
    "primitive and the line that produced it (slow: values are read back to the host).",
)
config.define(
    "debug_infs",
    False,
    aliases=("jax_debug_infs",),
    on_change=_arm,
    help="Like debug_nans, for infinities.",
)
_debug_nans = config.reader("debug_nans")
_debug_infs = config.reader("debug_infs")
_arm(_debug_nans() or _debug_infs())  # seeded from EMBER_DEBUG_NANS / EMBER_DEBUG_INFS


def active() -> bool:
    """Whether values must be checked here and now."""
    return armed and (_debug_nans() or _debug_infs())


def first_invalid(values: Sequence[Any]) -> str | None:
    """'nan' or 'inf' if a floating Array among ``values`` holds one that is being checked
    for, else None."""
    nans, infs = _debug_nans(), _debug_infs()
    for x in values:
        if type(x) is not Array or not dtypes.is_inexact(x.aval.dtype):
            continue
        # In a multi-process job each process checks the shards it holds.
        pieces = [x] if x.is_fully_addressable else [s.data for s in x.addressable_shards]
        for piece in pieces:
            host = np.asarray(piece)
            if nans and np.isnan(host).any():
                return "nan"
            if infs and np.isinf(host).any():
                return "inf"
    return None


def check_primitive_outputs(name: str, outs: Sequence[Any]) -> None:
    """Raise FloatingPointError if the outputs of primitive ``name`` hold a NaN or inf that is
    being checked for; the message names the user's line that bound it."""
    found = first_invalid(outs)
    if found is not None:
        raise FloatingPointError(f"invalid value ({found}) encountered in {name}{errors.where()}")


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Switch both checks off for this thread, for a block (a jitted call checks its outputs
    as a whole, not the program it runs)."""
    with config.option("debug_nans", False), config.option("debug_infs", False):
        yield


def debug_nans(new_val: bool = True) -> contextlib.AbstractContextManager[None]:
    """``with ember.debug_nans():`` checks for NaNs within the block, as ``jax.debug_nans``."""
    return config.option("debug_nans", bool(new_val))


def debug_infs(new_val: bool = True) -> contextlib.AbstractContextManager[None]:
    """``with ember.debug_infs():`` checks for infinities within the block, as
    ``jax.debug_infs``."""
    return config.option("debug_infs", bool(new_val))
