"""How the ``ember.scipy.stats`` distributions prepare their operands: promotion to one
inexact dtype and shape, constants in the operands' dtype, standardising, NaN outside the
support."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import elementwise as jnp
from ember._src.numpy.operands import prepare_inexact

__all__ = ["c", "floats", "standardize", "where"]


def floats(name: str, *args: Any) -> list[Any]:
    """The arguments promoted to one inexact dtype and broadcast to one shape (integers and
    Python scalars become the default float, as JAX's ``promote_args_inexact``)."""
    return prepare_inexact(name, *args)


def c(x: Any, value: Any) -> np.ndarray:
    """``value`` in ``x``'s dtype, so constants never promote the computation."""
    return np.asarray(value, get_aval(x).dtype)


def where(condition: Any, on_true: Any, on_false: Any) -> Any:
    return jnp.where(condition, on_true, on_false)


def standardize(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    """``(z, loc, scale)`` with ``z = (x - loc) / scale``, all in one dtype and shape."""
    x, loc, scale = floats(name, x, loc, scale)
    return jnp.divide(jnp.subtract(x, loc), scale), loc, scale


def nan_unless(valid: Any, value: Any) -> Any:
    """``value`` where ``valid``, nan elsewhere."""
    return jnp.where(valid, value, c(value, np.nan))
