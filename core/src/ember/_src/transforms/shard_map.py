"""``shard_map``: run a per-device function over a mesh, with explicit collectives.

``shard_map(f, mesh=, in_specs=, out_specs=)`` splits each argument into blocks as its
``PartitionSpec`` says, runs ``f`` on every device's blocks (mesh axes bound as named axes, so
``psum(x, "data")`` and friends work inside), and puts the result blocks together as
``out_specs`` says. An output whose spec leaves out a mesh axis is taken to be the same on
every device along that axis.

With ``axis_names`` (a set of the mesh's axes; empty, the default, means all of them) only
those axes are manual: the body sees blocks split along them alone, its collectives may name
only them, ``in_specs``/``out_specs`` may mention only them, and ``get_abstract_mesh()`` inside
types only them ``Manual``. The mesh's other axes stay automatic: the body sees arrays whole
along them, and the partitioner lays its values out over them.

With ``check_vma=True`` (the default; ``check_rep`` is its older name) every value inside is
typed by the mesh axes it may vary over (``typeof(x)`` prints ``float32[4]{V:i}``): an
argument varies over the axes its in_spec splits it over, collectives and ``pcast`` change
the types as they say, and other operations vary over what their operands vary over. The
types check out_specs (an output may leave out only axes it is the same along) and make
``grad`` inside the body exact. With ``check_vma=False`` nothing is typed or checked.

The per-device function is traced into the ``shard_map`` primitive
(``primitives/shard_map.py``, with its rules). Called eagerly, the mapped function is
compiled by ``jit`` as one program over the mesh.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from ember._src import core, errors
from ember._src.core import get_aval
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.primitives import collectives
from ember._src.primitives.jaxpr_transforms import hoist_consts
from ember._src.primitives.shard_map import (
    mentioned,
    mesh_axes,
    shard_aval,
    shard_map_p,
    unmentioned,
)
from ember._src.runtime.mesh import AxisType, Mesh, current_mesh, use_mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.transforms.jit import jit
from ember._src.tree.util import flatten_fun, flatten_up_to, tree_flatten, tree_unflatten

# out_specs has no default (None is a spec: a function returning None has no outputs).
_REQUIRED: Any = object()


def shard_map(
    f: Callable[..., Any] | None = None,
    mesh: Mesh | None = None,
    in_specs: Any = None,
    out_specs: Any = _REQUIRED,
    check_rep: bool = True,
    check_vma: bool | None = None,
    axis_names: Iterable[str] = frozenset(),
) -> Callable[..., Any]:
    """Map ``f`` over the blocks of its arguments on ``mesh`` (default: the mesh in scope).
    Without ``f``, a decorator: ``@shard_map(mesh=..., in_specs=..., out_specs=...)``.
    Without ``in_specs``, each argument is split as its type says (its sharding over the
    mesh's Explicit axes), as JAX's. ``axis_names``: the mesh axes that are manual inside
    (default: all); the others stay automatic."""
    if f is None:
        return functools.partial(
            shard_map,
            mesh=mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            check_rep=check_rep,
            check_vma=check_vma,
            axis_names=axis_names,
        )
    # One name may come bare (JAX would split a string into its letters).
    axis_names = frozenset((axis_names,) if isinstance(axis_names, str) else axis_names)
    check = check_rep if check_vma is None else check_vma
    if out_specs is _REQUIRED:
        raise TypeError("shard_map needs out_specs")

    def traced_call(*args: Any) -> Any:
        the_mesh = mesh if mesh is not None else current_mesh()
        if the_mesh is None:
            raise ValueError(f"shard_map needs mesh= or an enclosing `with mesh:`{errors.where()}")
        # In an enclosing shard_map's body (its mesh in scope, typed Manual over its axes),
        # those axes are manual already: this one maps over some of the others.
        context = current_mesh()
        nested = context is not None and context.same_devices(the_mesh) and context.manual_axes
        already = tuple(context.manual_axes) if nested else ()
        manual_axes = _manual_axes(the_mesh, axis_names, already)
        leaves, in_tree = tree_flatten(args)
        avals = [get_aval(x) for x in leaves]
        if in_specs is None:  # as JAX: each argument is split as its type says
            specs = [
                _check_spec(the_mesh, _typed_spec(a, manual_axes), "shard_map in_specs")
                for a in avals
            ]
        else:
            specs = _spec_leaves(in_specs, args, len(leaves), the_mesh, "shard_map in_specs")
        _check_manual_only(specs, manual_axes, "in_specs")
        name = getattr(f, "__name__", "f")
        per_device = [
            shard_aval(the_mesh, s, a, f"shard_map({name}) argument #{i}", check)
            for i, (s, a) in enumerate(zip(specs, avals))
        ]
        body = flatten_fun(f, in_tree, keep_output=True)
        o_specs: list[PartitionSpec] = []

        def typed_body(*blocks: Any) -> list[Any]:
            outs = body(*blocks)
            o_specs.extend(
                _spec_leaves(out_specs, body.output, len(outs), the_mesh, "shard_map out_specs")
            )
            _check_manual_only(o_specs, manual_axes, "out_specs")
            _check_out_ranks([get_aval(o) for o in outs], o_specs, name)
            if not check:
                return outs
            _check_out_specs([get_aval(o) for o in outs], manual_axes, o_specs)
            return [_varying_as_spec(o, s, the_mesh) for o, s in zip(outs, o_specs)]

        # Inside, the manual axes are Manual: get_abstract_mesh() says so, types split nothing
        # over them; the automatic axes keep their types.
        base = context if nested else the_mesh
        manual = base.update_axis_types(dict.fromkeys(manual_axes, AxisType.Manual))
        with mesh_axes(the_mesh, check, manual_axes), use_mesh(manual):
            closed = trace_to_jaxpr(typed_body, per_device, name=f"shard_map_{name}")
        consts, jaxpr = hoist_consts(closed)
        out_tree = body.out_tree
        outs = shard_map_p.bind(
            *consts,
            *leaves,
            jaxpr=jaxpr,
            mesh=the_mesh,
            in_specs=(PartitionSpec(),) * len(consts) + tuple(specs),
            out_specs=tuple(o_specs),
            check_vma=bool(check),
            manual_axes=manual_axes,
        )
        return tree_unflatten(out_tree, outs)

    # Called eagerly, the mapped function is compiled as one SPMD program over the mesh.
    compiled = jit(traced_call)

    def wrapped(*args: Any) -> Any:
        if core.eval_trace_is_current():
            return compiled(*args)
        return traced_call(*args)

    wrapped.__name__ = f"shard_map_{getattr(f, '__name__', 'f')}"
    return wrapped


def _manual_axes(mesh: Mesh, axis_names: frozenset, already: tuple) -> tuple[str, ...]:
    """The manual axes, in the mesh's order: ``axis_names``, or when it is empty every axis
    not ``already`` manual (in an enclosing shard_map's body)."""
    unknown = [a for a in axis_names if a not in mesh.axis_names]
    if unknown:
        raise ValueError(
            f"shard_map axis_names={sorted(axis_names, key=str)} must be a subset of the mesh's "
            f"axis names {mesh.axis_names}: {', '.join(repr(a) for a in unknown)} "
            f"{'is' if len(unknown) == 1 else 'are'} not one{errors.where()}"
        )
    twice = [a for a in axis_names if a in already]
    if twice:
        raise ValueError(
            f"shard_map axis_names={sorted(axis_names, key=str)} names mesh axes "
            f"{', '.join(repr(a) for a in twice)} that the enclosing shard_map already made "
            f"manual; a nested shard_map maps over other axes{errors.where()}"
        )
    manual = tuple(a for a in mesh.axis_names if a in axis_names or not axis_names)
    manual = tuple(a for a in manual if a not in already)
    if not manual:
        raise ValueError(
            f"shard_map inside a shard_map whose body has every mesh axis manual already "
            f"{already}: there is no axis left to map over{errors.where()}"
        )
    return manual


def _check_manual_only(specs: list[PartitionSpec], manual_axes: tuple, what: str) -> None:
    """A spec may split only over manual axes (the body is not mapped over the others)."""
    for i, spec in enumerate(specs):
        for d in range(len(spec)):
            for a in spec.axes_of(d):
                if a not in manual_axes:
                    raise ValueError(
                        f"shard_map {what} #{i} is {spec}, which names mesh axis {a!r}, but "
                        f"only the manual axes {manual_axes} (axis_names) may be named in "
                        f"{what}{errors.where()}"
                    )


def _typed_spec(aval: Any, manual_axes: tuple) -> PartitionSpec:
    """How an argument's type splits it over the mesh's Explicit manual axes (P() when it
    does not: an array over Auto axes, or one that is not split). Its split over automatic
    axes is left to the partitioner."""
    typed = aval.typed_sharding
    if typed is None:
        return PartitionSpec()
    entries = []
    for d in range(len(typed.spec)):
        kept = tuple(a for a in typed.spec.axes_of(d) if a in manual_axes)
        entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return PartitionSpec(*entries)


def _check_out_ranks(avals: list[Any], specs: list[PartitionSpec], name: str) -> None:
    """An out_spec names at most one entry per dimension of the block it puts together."""
    for i, (aval, spec) in enumerate(zip(avals, specs)):
        if len(spec) > aval.ndim:
            raise ValueError(
                f"shard_map({name}) output #{i}: out_specs {spec} has {len(spec)} entries for a "
                f"block {aval.str_short()} of rank {aval.ndim}{errors.where()}"
            )


def _check_spec(mesh: Mesh, spec: Any, what: str) -> PartitionSpec:
    if not isinstance(spec, PartitionSpec):
        raise errors.EmberTypeError(
            f"{what}: expected a PartitionSpec, got {spec!r}{errors.where()}"
        )
    NamedSharding(mesh, spec)  # names an axis the mesh lacks, or one twice: a clear error
    return spec


def _spec_leaves(specs: Any, values: Any, count: int, mesh: Mesh, what: str) -> list:
    def is_leaf(x: Any) -> bool:
        return x is None or isinstance(x, PartitionSpec)

    if is_leaf(specs):
        spec = PartitionSpec() if specs is None else specs
        return [_check_spec(mesh, spec, what)] * count
    prefix, treedef = tree_flatten(specs, is_leaf=is_leaf)
    try:
        subtrees = flatten_up_to(treedef, values, 1)
    except ValueError as err:
        raise ValueError(f"{what} do not match the values' structure: {err}") from None
    out = []
    for spec, subtree in zip(prefix, subtrees):
        spec = _check_spec(mesh, PartitionSpec() if spec is None else spec, what)
        out.extend([spec] * len(tree_flatten(subtree)[0]))
    if len(out) != count:
        raise ValueError(f"{what}: {len(out)} specs for {count} values{errors.where()}")
    return out


# --------------------------------------------------------------------------------------------
# check_vma: an output may leave out of its spec only the axes it is the same along


def _varying_as_spec(out: Any, spec: PartitionSpec, mesh: Mesh) -> Any:
    """``out`` typed as varying over the axes its spec splits it over (as JAX does): the
    cotangent that comes back through that output differs from device to device."""
    missing = mentioned(mesh, spec) - get_aval(out).vma
    if not missing:
        return out
    return collectives.pvary_p.bind(out, axes=core.ordered_axes(missing))


def _check_out_specs(out_avals, manual_axes: tuple, out_specs) -> None:
    for i, (aval, spec) in enumerate(zip(out_avals, out_specs)):
        missing = [a for a in unmentioned(manual_axes, spec) if a in aval.vma]
        if missing:
            names = ", ".join(repr(a) for a in missing)
            raise ValueError(
                f"shard_map output #{i} has out_specs {spec}, which says it is the same on every "
                f"device along mesh axes {missing}, but its type {aval} says it can differ "
                f"along them. Reduce it over them (psum or pmean over {names}, or "
                f"all_gather(..., to='invarying')), name them in out_specs, or pass "
                f"check_vma=False{errors.where()}"
            )
