"""``export(jit(f))(*args)``: a jitted function traced, lowered and kept as an ``Exported``.

``f`` is traced for the arguments' shapes and dtypes (arrays or ``ShapeDtypeStruct``s), with
its consts closed over; lowered once per requested platform (several lowerings are combined
under one ``main`` switching on a platform index, see ``modules``); and the module kept as a
portable artifact targeting the StableHLO version a consumer four weeks old still reads.
Arguments with symbolic dimensions take ``shape_poly``'s path. A call that ``jit`` would run
over a device mesh is lowered over it, as ``jit`` lowers it, and its mesh and layouts kept
(``shardings``). Functions that call back into Python are refused (``effects``). The VJP is
exported on demand (``Exported.vjp``, ``serialize(vjp_order=1)``), from the same function,
over the same mesh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray
from ember._src.execution.compiled import mesh_in_jaxpr, prepare
from ember._src.export import effects, modules, poly_lowering, shape_poly, shardings, trees
from ember._src.export.artifacts import artifact_backend
from ember._src.export.exported import Exported, argument_names
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lowering.mlir import sanitize_name
from ember._src.lowering.module import lower_module
from ember._src.plugin import manager
from ember._src.runtime.backend import Computation
from ember._src.runtime.mesh import Mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec, Sharding
from ember._src.transforms.autodiff import vjp as vjp_transform
from ember._src.transforms.jit import JitFunction, jit
from ember._src.transforms.staging import ShapeDtypeStruct
from ember._src.tree.util import PyTreeDef, tree_leaves, tree_map, tree_unflatten

# Which StableHLO version the artifact targets: the one StableHLO promises a consumer four
# weeks old still reads (see docs/export.md).
COMPATIBILITY_WINDOW = "week_4"


def default_export_platform() -> str:
    """The platform ``export`` lowers for when given none: the default backend's."""
    return manager.default_backend().platform


def export(
    fun_jit: Any,
    *,
    platforms: Sequence[str] | None = None,
    disabled_checks: Sequence[Any] = (),
) -> Callable[..., Exported]:
    """``export(jit(f))(*args, **kwargs)`` -> ``Exported`` of ``f`` for these arguments'
    shapes and dtypes, lowered for each of ``platforms`` (default: the default backend's)."""
    if not isinstance(fun_jit, JitFunction):
        raise TypeError(
            f"export requires an ember.jit function, got {type(fun_jit).__name__}: "
            f"use export(ember.jit(f))"
        )
    if isinstance(platforms, str):
        raise TypeError(f"platforms must be a sequence of names, got the string {platforms!r}")

    def do_export(*args: Any, **kwargs: Any) -> Exported:
        specs = [x for x in tree_leaves((args, kwargs)) if isinstance(x, ShapeDtypeStruct)]
        symbols = shape_poly.dim_names([s.shape for s in specs])
        checks = tuple(disabled_checks)
        if not symbols:
            closed, in_tree, out_tree = fun_jit.trace_closed(*args, **kwargs)
            layouts = _layouts_on_mesh(fun_jit, args, kwargs)
            return export_closed(
                closed, in_tree, out_tree, fun_jit.__name__, platforms, checks, layouts=layouts
            )
        return _export_polymorphic(fun_jit, args, kwargs, symbols, platforms, checks)

    return do_export


def _export_polymorphic(
    fun_jit: JitFunction,
    args: tuple,
    kwargs: dict,
    symbols: list[str],
    platforms: Sequence[str] | None,
    checks: tuple,
) -> Exported:
    """Three traces with the symbols standing for different sizes; the program they share."""
    all_sizes = shape_poly.sentinels(symbols)
    name = fun_jit.__name__
    traces = []
    for sizes in all_sizes:
        args_s, kwargs_s = tree_map(lambda x, s=sizes: shape_poly.specialize(x, s), (args, kwargs))
        traces.append(fun_jit.trace_closed(*args_s, **kwargs_s))
        if _layouts_on_mesh(fun_jit, args_s, kwargs_s) is not None:
            raise errors.ExportError(
                f"{name} runs over a device mesh: ember exports programs over a mesh for "
                f"static shapes only, not symbolic ones"
            )
    closed, in_tree, out_tree = traces[0]
    in_shapes, out_shapes, found = shape_poly.compare_traces(
        [t[0] for t in traces], all_sizes, name
    )

    def flat_fun(*leaves: Any) -> list[Any]:
        if fun_jit._has_statics:  # its static arguments are not among the leaves
            raise errors.ExportError(
                f"the VJP of a shape-polymorphic export of {name}, which has static arguments, "
                f"cannot be exported"
            )
        call_args, call_kwargs = tree_unflatten(in_tree, leaves)
        return tree_leaves(fun_jit(*call_args, **call_kwargs))

    poly = Polymorphism(found, in_shapes, out_shapes, argument_names(in_tree))
    return export_closed(closed, in_tree, out_tree, name, platforms, checks, poly, flat_fun)


class Layouts:
    """Where a program exported over a mesh runs: the mesh, and how each flat argument and
    result is laid out over it (a result's None: the partitioner chooses)."""

    def __init__(self, mesh: Mesh, in_shardings: list[Sharding], out_shardings: list[Any]):
        self.mesh = mesh
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings


def _layouts_on_mesh(fun_jit: JitFunction, args: tuple, kwargs: dict) -> Layouts | None:
    """The mesh and layouts a call of ``fun_jit`` with these arguments has, as jit decides
    them (in_shardings/out_shardings, arrays laid out over a mesh, a shard_map or sharding
    constraint inside, the mesh in scope); None when it runs on one device."""
    where, in_shardings, out_shardings = fun_jit.placement(*args, **kwargs)
    if not isinstance(where, Mesh):
        return None
    return Layouts(where, in_shardings, out_shardings)


class Polymorphism:
    """What a polymorphic export knows besides its first trace: what comparing the traces
    found (the expressions its sizes and constants stand for), the symbolic shapes of its
    arguments and results, the arguments' names."""

    def __init__(
        self, found: shape_poly.Found, in_shapes: list, out_shapes: list, names: list[str]
    ):
        self.found = found
        self.in_shapes = in_shapes
        self.out_shapes = out_shapes
        self.names = names

    def generalize(self, text: str, name: str) -> str:
        return poly_lowering.Generalizer(self.found, self.in_shapes, self.names, name).rewrite(text)


def export_closed(
    closed: ClosedJaxpr,
    in_tree: PyTreeDef,
    out_tree: PyTreeDef,
    name: str,
    platforms: Sequence[str] | None,
    disabled_checks: tuple = (),
    poly: Polymorphism | None = None,
    flat_fun: Callable[..., list[Any]] | None = None,
    layouts: Layouts | None = None,
) -> Exported:
    """The Exported of a traced function (its consts closed over); ``poly`` when it was
    traced for symbolic shapes, ``flat_fun`` the function on flat arguments its VJP is
    exported from (default: the jaxpr's evaluation); ``layouts`` when it runs over a mesh."""
    effects.check_exportable(closed, name)  # whichever the backends, it cannot be exported
    backend = artifact_backend()
    chosen = tuple(platforms) if platforms else (default_export_platform(),)
    for platform in chosen:
        if platform == "reference":
            raise errors.ExportError(
                "cannot export for the reference backend: it runs jaxprs, not StableHLO"
            )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"platforms lists a platform twice: {chosen}")
    if layouts is None and mesh_in_jaxpr(closed.jaxpr) is not None:
        raise errors.ExportError(
            f"{name} runs over a device mesh (a shard_map or sharding constraint), but its "
            f"trace was given no mesh to export it for"
        )
    if layouts is not None and len(chosen) > 1:
        raise errors.ExportError(
            f"{name} runs over a device mesh: ember exports programs over a mesh for one "
            f"platform at a time, and {', '.join(chosen)} were asked"
        )
    trees.encode(in_tree)  # fail now, not when serialising, on a structure with no JSON form
    trees.encode(out_tree)
    module_name = f"jit_{name}"
    in_avals = [core.raise_to_shaped(a) for a in closed.in_avals]
    out_avals = [core.raise_to_shaped(a) for a in closed.out_avals]
    if layouts is None:
        lowerings = [(p, lower_module(closed, platform=p, name=module_name)) for p in chosen]
        mesh, in_specs, out_specs = None, None, None
    else:
        computation, in_specs, out_specs = _computation_on_mesh(closed, module_name, layouts)
        lowerings = [(p, computation.as_text(p)) for p in chosen]
        mesh = layouts.mesh.abstract_mesh
    if poly is not None:
        lowerings = [(p, poly.generalize(text, name)) for p, text in lowerings]
        in_avals = [a.update(shape=s) for a, s in zip(in_avals, poly.in_shapes)]
        out_avals = [a.update(shape=s) for a, s in zip(out_avals, poly.out_shapes)]
    if len(lowerings) == 1:
        text = lowerings[0][1]
    else:
        text = modules.combine_platforms(
            sanitize_name(module_name),
            lowerings,
            [shape_poly.symbolic_tensor_type(a) for a in in_avals],
            [shape_poly.symbolic_tensor_type(a) for a in out_avals],
        )
    versions = backend.stablehlo_versions()
    target = versions[COMPATIBILITY_WINDOW]
    artifact = backend.to_portable_artifact(text, target)

    if flat_fun is None:

        def flat_fun(*leaves: Any) -> list[Any]:
            return eval_jaxpr(closed.jaxpr, closed.consts, *leaves)

    vjp_layouts = None
    if layouts is not None:  # the VJP runs over the mesh too, the cotangents laid as results
        over = layouts.mesh
        outs = [None if s is None else NamedSharding(over, s) for s in out_specs]
        vjp_layouts = (tuple(layouts.in_shardings) + tuple(outs), tuple(layouts.in_shardings))

    def vjp_source() -> Exported:
        return _export_vjp(flat_fun, in_avals, out_avals, name, chosen, vjp_layouts)

    exported = Exported(
        fun_name=name,
        in_tree=in_tree,
        in_avals=in_avals,
        out_tree=out_tree,
        out_avals=out_avals,
        platforms=chosen,
        mlir_module_serialized=artifact,
        stablehlo_version=target,
        stablehlo_producer_version=versions["current"],
        disabled_safety_checks=[str(c) for c in disabled_checks],
        vjp_source=vjp_source,
        nr_devices=1 if mesh is None else mesh.size,
        mesh=mesh,
        in_specs=in_specs,
        out_specs=out_specs,
    )
    exported._text = text
    return exported


def _computation_on_mesh(
    closed: ClosedJaxpr, module_name: str, layouts: Layouts
) -> tuple[Computation, list[PartitionSpec], list[PartitionSpec | None]]:
    """The computation of ``closed`` over ``layouts.mesh``, lowered as ``jit`` lowers it (its
    arguments and fixed results annotated with Shardy shardings, the module declaring the
    mesh), and the specs of its arguments and fixed results."""
    mesh = layouts.mesh
    prepared = prepare(closed, module_name, mesh, layouts.in_shardings, layouts.out_shardings)
    if prepared.keep_in is not None:
        raise errors.ExportError(
            f"{module_name} takes or returns float0 values (tangents of integers): ember "
            f"exports programs over a mesh without them only"
        )
    in_specs = [
        shardings.spec_of(s, mesh, f"argument #{i}") for i, s in enumerate(layouts.in_shardings)
    ]
    out_specs = [
        shardings.spec_of(s, mesh, f"result #{i}") for i, s in enumerate(prepared.out_shardings)
    ]
    return prepared.computation, in_specs, out_specs


def _export_vjp(
    flat_fun: Callable[..., list[Any]],
    in_avals: Sequence[ShapedArray],
    out_avals: Sequence[ShapedArray],
    name: str,
    platforms: Sequence[str],
    layouts: tuple[tuple, tuple] | None = None,
) -> Exported:
    """The Exported VJP of ``flat_fun``: (flat primals, flat output cotangents) -> flat input
    cotangents, for the same (possibly symbolic) shapes; over a mesh, ``layouts`` are its
    (in_shardings, out_shardings)."""
    for aval in [*in_avals, *out_avals]:
        if not dtypes.is_inexact(aval.dtype):
            raise errors.EmberTypeError(
                f"the VJP of {name} can be exported only when every input and output is "
                f"floating-point or complex, but one is {aval.str_short()}"
            )
    n_in = len(in_avals)

    def vjp_flat(*primals_and_cts: Any) -> tuple:
        primals, cts = primals_and_cts[:n_in], primals_and_cts[n_in:]
        _, pullback = vjp_transform(flat_fun, *primals)
        return tuple(pullback(list(cts)))

    vjp_flat.__name__ = f"vjp_{name}"
    specs = [ShapeDtypeStruct(a.shape, a.dtype) for a in [*in_avals, *out_avals]]
    if layouts is None:
        return export(jit(vjp_flat), platforms=platforms)(*specs)
    in_shardings, out_shardings = layouts
    program = jit(vjp_flat, in_shardings=in_shardings, out_shardings=out_shardings)
    return export(program, platforms=platforms)(*specs)
