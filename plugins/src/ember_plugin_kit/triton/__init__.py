"""Pallas kernels compiled by Triton, for GPU plugins.

``compile_pallas_call(ctx, call, *operands)`` is a kernel compiler (see
``LoweringRegistry.register_kernel_compiler``): it lowers a ``PallasCall``'s kernel to a
Triton-dialect module and emits XLA's Triton custom call, which XLA compiles for the GPU.
``register(registry, platform)`` installs it for a platform. ``lower_kernel(call)`` gives the
module's text; ``bytecode`` parses, verifies and compiles it (jaxlib is imported only there,
at first use).

What a kernel may use (anything else is a ``NotImplementedError`` naming the primitive, the
kernel and the line, pointing to ``interpret=True``):

- arithmetic, comparisons, bitwise ops, ``where``/``select_n``, casts, ``clamp``,
  ``integer_pow``; ``exp``, ``log``, ``sqrt``, ``rsqrt``, ``sin``, ``cos``, ``erf``,
  ``floor``, ``ceil`` natively and ``tanh``, ``log1p``, ``expm1``, ``pow``, ``atan2``,
  ``round``, inverse trigonometric and hyperbolic functions, ``lgamma``, ``erf_inv`` from
  CUDA's libdevice;
- ``broadcast_in_dim``, reshapes that keep the element order, ``iota``, ``transpose``,
  ``reduce_sum/max/min/prod/and/or/xor`` (``tt.reduce``), 2-D ``dot_general`` with every
  dimension >= 16 (``tt.dot``; f32 in TF32 unless ``precision=HIGHEST``);
- Ref reads and writes with int, ``pl.ds`` (static or traced start) and ``:`` indices, masked
  ``pl.load``/``pl.store``, atomics (``add`` on floats; all on integers), ``program_id``;
- ``fori_loop`` (``scf.for``; ``scf.while`` with traced bounds), ``while_loop``, ``cond`` and
  ``pl.when`` (``scf.if``), nested jit and custom_jvp/custom_vjp calls (inlined).

Tensors need power-of-two shapes (Triton's rule), a grid at most three axes, and blocks whose
array does not divide evenly are masked at the edge. Not supported: scratch operands
(``scratch_shapes``/``run_scoped``), indexing Refs with integer arrays, value slicing,
``debug_print``, offsets past 2**31 elements.
"""

from ember_plugin_kit.triton.custom_call import compile_pallas_call, register
from ember_plugin_kit.triton.lowering import TritonKernel, lower_kernel

__all__ = ["TritonKernel", "compile_pallas_call", "lower_kernel", "register"]
