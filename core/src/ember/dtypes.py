"""Dtypes ember adds to NumPy's, and dtype utilities (as ``jax.dtypes``)."""

from ember._src.dtypes import (
    bfloat16 as bfloat16,
    float0 as float0,
    issubdtype as issubdtype,
)
