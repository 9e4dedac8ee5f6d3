"""Exporting jitted functions as versioned, portable programs (JAX's ``jax.export``).

See docs/export.md.
"""

from ember._src.export.exported import (
    CALLING_CONVENTION_VERSION as CALLING_CONVENTION_VERSION,
    Exported as Exported,
    deserialize as deserialize,
    export as export,
)
from ember._src.export.shape_poly import (
    SymbolicDim as SymbolicDim,
    symbolic_shape as symbolic_shape,
)
