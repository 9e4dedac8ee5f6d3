"""``pl.debug_print`` (and ``ember.debug.print``) in a kernel: ``tt.print``.

A kernel cannot call back into Python, so the print runs on the device: Triton's ``tt.print``
prints a text and then each element of its values, with the program's id and the element's
index (CUDA's ``printf``). The format comes from the callback's ``printed`` description: each
``{}`` becomes one ``tt.print`` whose text is the literal text before it; static arguments are
already formatted into that text. Format specs (``{:.3f}``), keyword and pytree arguments and
ordered prints have no device form and are refused.
"""

from __future__ import annotations

import numpy as np

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Value, bytes_literal
from ember_plugin_kit.triton.tensors import convert


def _print(kctx: KernelContext, text: str, value: Value | None) -> None:
    e = kctx.emitter
    prefix = bytes_literal(text.encode())
    if value is None:
        e.line(f"tt.print {prefix} {{hex = false, isSigned = array<i32>}}")
        return
    if value.dtype == np.bool_:  # printf has no i1: print it as 0 or 1
        value = convert(e, value, np.int32)
    signed = int(np.dtype(value.dtype).kind == "i")
    e.line(
        f"tt.print {prefix} {{hex = false, isSigned = array<i32: {signed}>}} : "
        f"{value.name} : {value.type}"
    )


@rule("debug_callback")
def _debug_callback(kctx: KernelContext, eqn, *operands: Value) -> list:
    callback = eqn.params["callback"]
    pieces = getattr(callback, "printed", None)
    if pieces is None:
        raise kctx.fail(
            "debug_callback", f"{callback!r}: a kernel cannot call Python; only debug_print"
        )
    if eqn.params.get("ordered"):
        raise kctx.fail("debug_callback", "an ordered print")
    text = ""
    for piece in pieces:
        if isinstance(piece, str):
            text += piece
            continue
        operand, spec = piece
        if operand is None or spec:
            raise ValueError(
                f"pl.debug_print in Pallas kernel {kctx.name!r}: the field "
                f"{{{spec if operand is None else ':' + spec}}} cannot be printed by Triton, "
                "whose tt.print prints positional arrays as they are; use a plain {}"
            )
        _print(kctx, text, operands[operand])
        text = ""
    if text:
        _print(kctx, text, None)
    return []
