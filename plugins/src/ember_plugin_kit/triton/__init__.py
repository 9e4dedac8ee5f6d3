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
  static slices that pick power-of-two pieces (``x[:, :k]``, ``x[:, k:2k]``, ``x[::2]``,
  ``x[i]``), one element at a traced index (``x[i]``, ``dynamic_slice`` of size 1) and
  concatenations of 2, 4, 8... equal power-of-two pieces and ``rev``/``flip`` (``tt.split``
  / ``tt.join``, see ``slicing``),
  ``reduce_sum/max/min/prod/and/or/xor`` (``tt.reduce``), ``argmax``/``argmin``,
  ``cumsum``/``cumprod``/``cummax``/``cummin`` (``tt.scan``), 2-D
  ``dot_general`` with every dimension >= 16 (``tt.dot``; f32 in TF32 unless
  ``precision=HIGHEST``);
- Ref reads and writes with int, ``pl.ds`` (static or traced start), ``:`` and integer-array
  indices (gathers and scatters, NumPy's placement of the indexed dimensions), masked
  ``pl.load``/``pl.store``, atomics (``add`` on floats; all on integers), ``program_id``;
- ``fori_loop`` (``scf.for``; ``scf.while`` with traced bounds), ``while_loop``, ``cond`` and
  ``pl.when`` (``scf.if``), nested jit and custom_jvp/custom_vjp calls (inlined);
- scratch Refs (``scratch_shapes``, ``pl.run_scoped``) of up to 2**20 elements, kept in
  registers (see ``scratch``): read and written whole or at integer indices (reads also in
  power-of-two slices), carried through loops and branches;
- ``pl.debug_print`` with plain ``{}`` fields (``tt.print``, see ``printing``).

Tensors need power-of-two shapes (Triton's rule); a grid of more than three axes folds its
leading axes into CUDA's x (see ``grid``); blocks whose array does not divide evenly are
masked at the edge; offsets are i32 (as Triton's own), and i64 into arrays of 2**31 elements
or more. Not supported: other parts of scratch Refs, other value slices (slice the Ref instead),
``cumlogsumexp``.
"""

from ember_plugin_kit.triton.custom_call import compile_pallas_call, register
from ember_plugin_kit.triton.lowering import TritonKernel, lower_kernel

__all__ = ["TritonKernel", "compile_pallas_call", "lower_kernel", "register"]
