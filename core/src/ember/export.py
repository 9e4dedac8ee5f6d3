"""Exporting jitted functions as versioned, portable programs (JAX's ``jax.export``).

See docs/export.md.
"""

from ember._src.export.exported import (
    CALLING_CONVENTION_VERSION as CALLING_CONVENTION_VERSION,
    Exported as Exported,
    deserialize as deserialize,
)
from ember._src.export.exporting import (
    default_export_platform as default_export_platform,
    export as export,
)
from ember._src.export.shape_poly import (
    SymbolicDim as SymbolicDim,
    symbolic_shape as symbolic_shape,
)
from ember._src.export.trees import (
    register_namedtuple_serialization as register_namedtuple_serialization,
    register_pytree_node_serialization as register_pytree_node_serialization,
)

# The calling conventions this ember writes and calls (JAX's names).
minimum_supported_calling_convention_version = CALLING_CONVENTION_VERSION
maximum_supported_calling_convention_version = CALLING_CONVENTION_VERSION
