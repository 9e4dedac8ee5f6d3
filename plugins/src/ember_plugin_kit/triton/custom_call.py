"""The kernel compiler: a ``pallas_call`` as XLA's Triton custom call.

``compile_pallas_call`` lowers the kernel to a Triton module and emits
``stablehlo.custom_call @__gpu$xla.gpu.triton`` with the module's bytecode in its
``mhlo.backend_config`` dictionary (jaxlib 0.10's XLA compiles it with the rest of the
program, for the GPU it runs on):

    {name, ir = <TTIR bytecode>, num_stages, num_warps, grid_x, grid_y, grid_z, debug}

Operands and results are row-major; an output that aliases an input (``input_output_aliases``)
is written in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ember_plugin_kit.triton.bytecode import to_bytecode
from ember_plugin_kit.triton.emitter import bytes_literal
from ember_plugin_kit.triton.lowering import TritonKernel, lower_kernel

CUSTOM_CALL_TARGET = "__gpu$xla.gpu.triton"
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3


def triton_params(compiler_params: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(num_warps, num_stages)`` from ``compiler_params["triton"]`` (a dict, or an object
    with those attributes such as ``pallas.triton.CompilerParams``; None means the default)."""
    params = (compiler_params or {}).get("triton") or {}

    def read(name: str, default: int) -> int:
        value = params.get(name) if isinstance(params, Mapping) else getattr(params, name, None)
        if value is None:
            return default
        if int(value) < 1:
            raise ValueError(f"Triton compiler parameter {name} must be positive, got {value}")
        return int(value)

    return read("num_warps", DEFAULT_NUM_WARPS), read("num_stages", DEFAULT_NUM_STAGES)


def _row_major_layouts(avals: Sequence[Any]) -> str:
    layouts = []
    for aval in avals:
        rank = len(aval.shape)
        dims = ", ".join(str(d) for d in range(rank - 1, -1, -1))
        layouts.append(
            f"dense<[{dims}]> : tensor<{rank}xindex>" if rank else ("dense<> : tensor<0xindex>")
        )
    return "[" + ", ".join(layouts) + "]"


def _aliases(aliases: Any, num_results: int) -> str:
    pairs = sorted(dict(aliases or {}).items())
    entries = []
    for operand, output in pairs:
        # With one result, the result is not a tuple: its index path is empty.
        output_path = "[]" if num_results == 1 else f"[{output}]"
        entries.append(
            f"#stablehlo.output_operand_alias<output_tuple_indices = {output_path}, "
            f"operand_index = {operand}, operand_tuple_indices = []>"
        )
    return "[" + ", ".join(entries) + "]"


def backend_config(
    kernel: TritonKernel, ttir: bytes, num_warps: int, num_stages: int, debug: bool
) -> str:
    grid_x, grid_y, grid_z = kernel.grid
    return (
        f'{{name = "{kernel.name}", ir = {bytes_literal(ttir)}, '
        f"num_stages = {num_stages} : i32, num_warps = {num_warps} : i32, "
        f"grid_x = {grid_x} : i32, grid_y = {grid_y} : i32, grid_z = {grid_z} : i32, "
        f"debug = {'true' if debug else 'false'}}}"
    )


def compile_pallas_call(ctx: Any, call: Any, *operands: str) -> list[str]:
    """Emit ``call`` (a ``PallasCall``) into the module ``ctx`` lowers as a Triton custom
    call; returns the results' SSA names. A kernel the lowering does not cover raises
    ``NotImplementedError`` naming the primitive."""
    kernel = lower_kernel(call)
    if call.debug:
        print(f"The Triton module of Pallas kernel {kernel.name}:\n{kernel.text}")
    ttir = to_bytecode(kernel.text)
    num_warps, num_stages = triton_params(call.compiler_params)
    out_avals = list(call.out_avals)
    attrs = {
        "call_target_name": f'"{CUSTOM_CALL_TARGET}"',
        # The dictionary config lives in the mhlo.backend_config attribute, which XLA reads
        # only from API version 1 calls (the backend_config property must then be a string).
        "api_version": "1 : i32",
        "backend_config": '""',
        "operand_layouts": _row_major_layouts(ctx.avals_in),
        "result_layouts": _row_major_layouts(out_avals),
    }
    if call.input_output_aliases:
        attrs["output_operand_aliases"] = _aliases(call.input_output_aliases, len(out_avals))
    config = backend_config(kernel, ttir, num_warps, num_stages, bool(call.debug))
    return ctx.op(
        "stablehlo.custom_call",
        list(operands),
        out_avals,
        attrs,
        discardable={"mhlo.backend_config": config},
    )


def register(registry: Any, platform: str) -> None:
    """Make ``compile_pallas_call`` the kernel compiler of ``platform`` in ``registry`` (a
    plugin's ``LoweringRegistry``)."""
    registry.register_kernel_compiler(compile_pallas_call, platform=platform)
