"""The versioned API for plugin authors.

A backend plugin implements hooks (``@hookimpl``) from ``ember._src.plugin.hookspecs`` and
describes its platforms with ``PlatformSpec``; its backend subclasses ``Backend``,
``Executable`` and ``Device``. ``PLUGIN_API_VERSION`` is the contract's version.
``evaluate_jaxpr`` and ``reference_rule`` give a backend that interprets programs ember's own
NumPy evaluation of every primitive. ``PallasCall`` and ``BlockMapping`` describe a Pallas
kernel call to a platform's kernel compiler. ``call_named_kernel`` calls a fused kernel a
plugin registered by name (``LoweringRegistry.register_named_kernel``); the kernel gets a
``KernelContext``. docs/plugin_guide.md explains each name.
"""

from ember._src.config import define as define_config_option
from ember._src.core import Primitive as Primitive, ShapedArray as ShapedArray
from ember._src.ir import ClosedJaxpr as ClosedJaxpr
from ember._src.lowering.mlir import RuleContext as RuleContext
from ember._src.pallas.core import BlockMapping as BlockMapping, PallasCall as PallasCall
from ember._src.plugin.hookspecs import hookimpl as hookimpl, hookspec as hookspec
from ember._src.plugin.manager import collective_registry as collective_registry
from ember._src.plugin.registries import (
    CollectiveRegistry as CollectiveRegistry,
    LoweringRegistry as LoweringRegistry,
)
from ember._src.plugin.spec import (
    PLUGIN_API_VERSION as PLUGIN_API_VERSION,
    ClusterEnvironment as ClusterEnvironment,
    PlatformSpec as PlatformSpec,
)
from ember._src.primitives.named_kernels import (
    KernelContext as KernelContext,
    call_named_kernel as call_named_kernel,
)
from ember._src.reference.evaluation import (
    evaluate_jaxpr as evaluate_jaxpr,
    reference_rule as reference_rule,
)
from ember._src.runtime.backend import (
    TOKEN_AVAL as TOKEN_AVAL,
    Backend as Backend,
    Computation as Computation,
    Device as Device,
    Executable as Executable,
    Profiler as Profiler,
    ProfileSession as ProfileSession,
)
from ember._src.runtime.multiprocess import Job as Job, current_job as current_job

__all__ = [
    "PLUGIN_API_VERSION",
    "TOKEN_AVAL",
    "Backend",
    "BlockMapping",
    "KernelContext",
    "ClosedJaxpr",
    "ClusterEnvironment",
    "CollectiveRegistry",
    "Computation",
    "Device",
    "Executable",
    "LoweringRegistry",
    "PallasCall",
    "PlatformSpec",
    "Primitive",
    "ProfileSession",
    "Profiler",
    "RuleContext",
    "Job",
    "ShapedArray",
    "call_named_kernel",
    "collective_registry",
    "current_job",
    "define_config_option",
    "evaluate_jaxpr",
    "hookimpl",
    "hookspec",
    "reference_rule",
]
