"""Pallas kernels compiled by Triton, for GPU plugins.

``compile_pallas_call(ctx, call, *operands)`` is a kernel compiler (see
``LoweringRegistry.register_kernel_compiler``): it lowers a ``PallasCall``'s kernel to a
Triton-dialect module and emits XLA's Triton custom call, which XLA compiles for the GPU.
``register(registry, platform)`` installs it for a platform. ``lower_kernel(call)`` gives the
module's text; ``bytecode`` parses, verifies and compiles it (jaxlib is imported only there,
at first use).
"""

from ember_plugin_kit.triton.custom_call import compile_pallas_call, register
from ember_plugin_kit.triton.lowering import TritonKernel, lower_kernel

__all__ = ["TritonKernel", "compile_pallas_call", "lower_kernel", "register"]
