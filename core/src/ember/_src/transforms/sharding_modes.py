"""Moving between sharding modes: ``reshard``, ``auto_axes`` and ``explicit_axes``.

Under ``Explicit`` mesh axes an array's split is part of its type. ``reshard(x, spec)``
changes it (the partitioner moves the data); ``auto_axes(f, out_sharding=...)`` runs ``f``
with some axes ``Auto`` (types forget them, the partitioner decides, as without explicit
sharding) and types ``f``'s results as ``out_sharding`` says; ``explicit_axes(f,
in_sharding=...)`` is the converse, for code written in automatic mode. All three are the
sharding constraint primitive: a constraint over a mesh whose axis types differ from the
array's is a *cast* between modes, which moves no data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import get_aval, is_arraylike
from ember._src.execution import placement
from ember._src.primitives.sharding_constraint import with_sharding_constraint
from ember._src.runtime.mesh import AxisType, Mesh, current_mesh, use_mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.tree.util import tree_flatten, tree_map, tree_unflatten


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``xs`` (a pytree of arrays) laid out and typed as ``out_shardings`` says: a
    ``NamedSharding``, or a ``PartitionSpec`` over the mesh in scope (or a pytree prefix of
    them)."""
    leaves, treedef = tree_flatten(xs)
    index_tree = tree_unflatten(treedef, range(len(leaves)))
    prefix = tuple(out_shardings) if isinstance(out_shardings, list) else out_shardings
    try:
        targets = placement.broadcast_prefix(prefix, index_tree, len(leaves), "reshard")
    except ValueError as err:  # the message names reshard already
        raise errors.ShardingTypeError(str(err)) from None
    out = []
    for i, (leaf, target) in enumerate(zip(leaves, targets)):
        aval = get_aval(leaf)
        if not isinstance(target, NamedSharding):
            raise errors.ShardingTypeError(
                f"reshard needs NamedShardings or PartitionSpecs, got {target!r}{errors.where()}"
            )
        _check_fits(aval, target, f"reshard of argument #{i} ({aval.str_short()})")
        out.append(with_sharding_constraint(leaf, target))
    return tree_unflatten(treedef, out)


def _check_fits(aval: Any, sharding: NamedSharding, what: str) -> None:
    spec = sharding.spec
    if len(spec) > aval.ndim:
        raise errors.ShardingTypeError(
            f"{what}: {spec} has {len(spec)} entries for an array of rank {aval.ndim}"
            f"{errors.where()}"
        )
    for d in range(len(spec)):
        axes = spec.axes_of(d)
        parts = 1
        for a in axes:
            parts *= sharding.mesh.axis_size(a)
        if aval.shape[d] % parts:
            raise errors.ShardingTypeError(
                f"{what}: dimension {d} (size {aval.shape[d]}) cannot be split over mesh axes "
                f"{axes} ({parts} parts); choose axes whose sizes divide it, or pad the array"
                f"{errors.where()}"
            )


def _mode_mesh(what: str, axes: Any, kind: AxisType) -> tuple[Mesh, Mesh, tuple[str, ...]]:
    mesh = current_mesh()
    if mesh is None:
        raise errors.ShardingTypeError(
            f"{what} needs a mesh in scope: ember.set_mesh(mesh) or `with "
            f"ember.sharding.use_mesh(mesh):`{errors.where()}"
        )
    if axes is None:
        other = AxisType.Explicit if kind is AxisType.Auto else AxisType.Auto
        names = tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types) if t is other)
    else:
        names = (axes,) if isinstance(axes, str) else tuple(axes)
    missing = [n for n in names if n not in mesh.axis_names]
    if missing:
        raise errors.ShardingTypeError(
            f"{what}: the mesh in scope has no axes {missing} (its axes are "
            f"{mesh.axis_names}){errors.where()}"
        )
    return mesh, mesh.update_axis_types(dict.fromkeys(names, kind)), names


def _cast(x: Any, mesh: Mesh) -> Any:
    """``x`` as an array over ``mesh`` (the same devices, other axis types), split as its
    type says: the change of mode moves no data."""
    if not is_arraylike(x):
        return x
    typed = get_aval(x).typed_sharding
    if typed is None:
        return x
    return with_sharding_constraint(x, NamedSharding(mesh, typed.spec))


def auto_axes(
    fun: Callable[..., Any] | None = None,
    *,
    axes: str | Sequence[str] | None = None,
    out_sharding: Any = None,
) -> Any:
    """``fun`` run with mesh ``axes`` (default: every Explicit one) made ``Auto``: types
    forget them and the partitioner lays values out. Its results are typed as
    ``out_sharding`` says (given here or when calling, as ``out_sharding=``)."""
    if fun is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    @functools.wraps(fun)
    def run_with_auto_axes(*args: Any, out_sharding: Any = out_sharding, **kwargs: Any) -> Any:
        what = f"auto_axes({_name(fun)})"
        out_sharding = _given(
            what, "out_sharding", out_sharding, kwargs, "its results are split once the axes "
            "are Explicit again"
        )  # fmt: skip
        mesh, auto_mesh, _ = _mode_mesh(what, axes, AxisType.Auto)
        args, kwargs = tree_map(lambda x: _cast(x, auto_mesh), (args, kwargs))
        with use_mesh(auto_mesh):
            out = fun(*args, **kwargs)
        with use_mesh(mesh):
            return reshard(out, out_sharding)

    return run_with_auto_axes


def explicit_axes(
    fun: Callable[..., Any] | None = None,
    *,
    axes: str | Sequence[str] | None = None,
    in_sharding: Any = None,
) -> Any:
    """``fun`` run with mesh ``axes`` (default: every Auto one) made ``Explicit``, its
    arguments typed as ``in_sharding`` says (given here or when calling, as
    ``in_sharding=``); its results go back to the caller's mode."""
    if fun is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    @functools.wraps(fun)
    def run_with_explicit_axes(*args: Any, in_sharding: Any = in_sharding, **kwargs: Any) -> Any:
        what = f"explicit_axes({_name(fun)})"
        in_sharding = _given(
            what, "in_sharding", in_sharding, kwargs, "its arguments are split once the axes "
            "are Explicit"
        )  # fmt: skip
        mesh, explicit_mesh, _ = _mode_mesh(what, axes, AxisType.Explicit)
        with use_mesh(explicit_mesh):
            args = reshard(args, _on_mesh(in_sharding, explicit_mesh))
            out = fun(*args, **kwargs)
        return tree_map(lambda x: _cast(x, mesh), out)

    return run_with_explicit_axes


def _given(what: str, name: str, value: Any, kwargs: dict, meaning: str) -> Any:
    """The sharding argument ``name`` of a call (or its older plural spelling, which JAX's
    tutorials still use, taken out of ``kwargs``); it must be given."""
    value = kwargs.pop(name + "s", value)
    if value is None:
        raise errors.ShardingTypeError(f"{what} needs {name}=: how {meaning}{errors.where()}")
    return value


def _on_mesh(shardings: Any, mesh: Mesh) -> Any:
    """PartitionSpecs (or NamedShardings) as NamedShardings over ``mesh``."""

    def one(s: Any) -> Any:
        if isinstance(s, NamedSharding):
            return NamedSharding(mesh, s.spec)
        return NamedSharding(mesh, s) if isinstance(s, PartitionSpec) else s

    return tree_map(one, shardings, is_leaf=lambda s: isinstance(s, (NamedSharding, PartitionSpec)))


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)
