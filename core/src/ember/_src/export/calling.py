"""Calling an exported program: the ``call_exported`` primitive and its lowering.

One primitive serves every way of calling: run eagerly, its one-equation program is compiled
like any primitive's; inside ``jit`` it is one equation of the caller's jaxpr. Either way the
lowering copies the exported module's functions into the caller's module as private functions
(renamed, so two exported programs, or an exported program and the caller, never clash) and
emits a ``func.call`` of its ``main``, passing the index of the platform being lowered for when
the program was exported for several. Differentiation goes through the exported VJP (see
``Exported.call``); the primitive itself has no derivative.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors, rules
from ember._src.core import ShapedArray
from ember._src.export import modules
from ember._src.export.modules import PLATFORM_INDEX_TYPE
from ember._src.export.shape_poly import symbolic_tensor_type
from ember._src.lowering.mlir import ModuleContext, RuleContext, tensor_type
from ember._src.runtime.sharding import explicit_entries, typed_sharding

# The exported programs already copied into each module being lowered: exported -> its main.
_embedded: weakref.WeakKeyDictionary[ModuleContext, dict[Any, str]] = weakref.WeakKeyDictionary()


def _abstract_eval(*avals: ShapedArray, exported: Any) -> list[ShapedArray]:
    return exported.out_avals_for(avals)


def _sharding_rule(*avals: ShapedArray, exported: Any) -> list[Any]:
    """The typed layouts of the results when an argument is split over Explicit mesh axes:
    as exported, over the caller's mesh when it is the exported one; else whole (the program
    computes whole values, and the partitioner moves them)."""
    caller = next(a.typed_sharding.mesh for a in avals if a.typed_sharding is not None)
    mesh = exported.mesh
    if mesh is None or caller.shape_tuple != mesh.shape_tuple:
        return [None] * len(exported.out_avals)
    return [
        None if spec is None else typed_sharding(caller, explicit_entries(spec, a.ndim, caller))
        for spec, a in zip(exported.out_specs, exported.out_avals)
    ]


def _lowering(ctx: RuleContext, *operands: str, exported: Any) -> list[str]:
    platforms = exported.platforms
    if ctx.platform not in platforms:
        raise errors.ExportError(
            f"the exported function {exported.fun_name} was exported for "
            f"{', '.join(platforms)}, not for {ctx.platform}"
        )
    _check_devices(ctx, exported)
    main = embedded_main(ctx.module, exported)
    args = list(operands)
    if not exported.is_polymorphic:
        if len(platforms) > 1:
            args.insert(0, _platform_index(ctx, platforms))
        return ctx.op("func.call", args, list(ctx.avals_out), {"callee": f"@{main}"})
    # A polymorphic main takes and returns dynamically shaped tensors: convert to its types
    # and back. The backend refines the caller's module to static shapes before compiling.
    in_types = [symbolic_tensor_type(a) for a in exported.in_avals]
    out_types = [symbolic_tensor_type(a) for a in exported.out_avals]
    args = [_convert(ctx, x, t) for x, t in zip(args, in_types)]
    if len(platforms) > 1:
        args.insert(0, _platform_index(ctx, platforms))
        in_types.insert(0, PLATFORM_INDEX_TYPE)
    result = ctx.fn.fresh()
    lhs = f"{result}:{len(out_types)} = " if out_types else ""
    ctx.fn.lines.append(
        f'{ctx.indent}{lhs}"func.call"({", ".join(args)}) <{{callee = @{main}}}> : '
        f"({', '.join(in_types)}) -> ({', '.join(out_types)})"
    )
    outs = []
    for i, (t, aval) in enumerate(zip(out_types, ctx.avals_out)):
        ctx.fn.types[f"{result}#{i}"] = t
        outs.append(_convert(ctx, f"{result}#{i}", tensor_type(aval)))
    return outs


def _check_devices(ctx: RuleContext, exported: Any) -> None:
    """A program exported over N devices runs only in a program over a mesh of N devices (a
    one-device program runs anywhere: each device computes it whole)."""
    if exported.nr_devices == 1:
        return
    mesh = ctx.module.mesh
    devices = 1 if mesh is None else mesh.size
    if devices != exported.nr_devices:
        raise errors.ExportError(
            f"the exported function {exported.fun_name} was exported for "
            f"{exported.nr_devices} devices, but it is called in a program over {devices} "
            f"device{'s' if devices != 1 else ''}"
        )
    if ctx.module.in_manual:
        raise errors.ExportError(
            f"the exported function {exported.fun_name} runs over {exported.nr_devices} "
            f"devices: it cannot be called inside a shard_map body, where each device runs "
            f"its own part"
        )


def _platform_index(ctx: RuleContext, platforms: Sequence[str]) -> str:
    index = np.int32(platforms.index(ctx.platform))
    return ctx.constant(index, ShapedArray((), np.dtype(np.int32)))


def _convert(ctx: RuleContext, x: str, to_type: str) -> str:
    """``x`` as a tensor of type ``to_type`` (same element type, static <-> dynamic shape)."""
    name = ctx.fn.fresh()
    ctx.fn.lines.append(
        f'{ctx.indent}{name} = "stablehlo.convert"({x}) : ({ctx.fn.types[x]}) -> {to_type}'
    )
    ctx.fn.types[name] = to_type
    return name


def embedded_main(module: ModuleContext, exported: Any) -> str:
    """The name of ``exported``'s main in ``module``, copying its functions there first.

    A program exported over a mesh refers to it as ``@mesh`` (in Shardy attributes, or in
    the strings that carry them once read back from a portable artifact). Where the caller's
    module declares the same mesh, the copied functions use the caller's; else the exported
    mesh is declared under a name of its own, and the references renamed."""
    inside = _embedded.setdefault(module, {})
    main = inside.get(exported)
    if main is None:
        prefix = f"_ember_exported_{len(inside)}_"
        functions, main = modules.private_functions(exported.mlir_module(), prefix)
        functions = modules.without_meshes(functions)
        mesh = exported.mesh
        if mesh is not None and (
            module.mesh is None or module.mesh.shape_tuple != mesh.shape_tuple
        ):
            name = prefix + "mesh"
            functions = modules.rename_symbols(functions, {"mesh": name})
            axes = ", ".join(f'"{axis}"={size}' for axis, size in mesh.shape_tuple)
            module.declarations[name] = f"sdy.mesh @{name} = <[{axes}]>"
        module.extra_functions.append(functions)
        inside[exported] = main
    return main


def _no_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, exported: Any) -> Any:
    raise errors.EmberTypeError(
        f"the exported function {exported.fun_name} has no VJP, so it cannot be "
        f"differentiated: export it with its VJP (serialize(vjp_order=1)) and deserialize "
        f"that{errors.where()}"
    )


def _reference(*args: Any, exported: Any) -> Any:
    raise errors.ExportError(
        f"the exported {exported.fun_name} is StableHLO for {', '.join(exported.platforms)}: "
        f"the NumPy reference backend cannot run it (call it on a backend that compiles "
        f"StableHLO, e.g. jit(..., device=ember.devices('cpu')[0])){errors.where()}"
    )


call_exported_p = rules.define_primitive(
    "call_exported",
    abstract_eval=_abstract_eval,
    jvp=_no_jvp,
    lowering=_lowering,
    reference=_reference,
    sharding=_sharding_rule,
    multiple_results=True,
)


def call_exported(leaves: Sequence[Any], exported: Any) -> list[Any]:
    """Bind a call of ``exported`` on its flat arguments (already checked)."""
    return call_exported_p.bind(*leaves, exported=exported)
