"""``linalg.matmul`` and ``linalg.tensordot``: the array API's spellings of the NumPy
contractions, with positional-only operands (and a keyword-only ``axes``)."""

from __future__ import annotations

from typing import Any

from ember._src.numpy import contractions


def matmul(
    x1: Any, x2: Any, /, *, precision: Any = None, preferred_element_type: Any = None
) -> Any:
    return contractions.matmul(
        x1, x2, precision=precision, preferred_element_type=preferred_element_type
    )


def tensordot(
    x1: Any,
    x2: Any,
    /,
    *,
    axes: Any = 2,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    return contractions.tensordot(
        x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type
    )
