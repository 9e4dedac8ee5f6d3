"""Naming values for checkpoint policies and seeing what reverse-mode differentiation saves
(``jax.ad_checkpoint``)."""

from ember._src.primitives.remat import (
    Offloadable as Offloadable,
    Recompute as Recompute,
    Saveable as Saveable,
)
from ember._src.transforms.checkpoint import (
    checkpoint_name as checkpoint_name,
    checkpoint_policies as checkpoint_policies,
)
from ember._src.transforms.saved_residuals import (
    print_saved_residuals as print_saved_residuals,
    saved_residuals as saved_residuals,
)
