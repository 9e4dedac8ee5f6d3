"""``lax.with_sharding_constraint``: pin an intermediate value's layout inside a jitted program.

The partitioner chooses layouts for every value it is not told about; a constraint tells it
one (lowered to Shardy's ``sdy.sharding_constraint``). Called outside any trace, the public
function is a ``device_put``; bound eagerly by a rule (the known half of a linearisation), the
primitive's layout rule fixes its result's layout, so it runs as a one-equation program whose
result is laid out as asked. Differentiation constrains the tangent and the cotangent alike;
under vmap the batch dimension is left unsplit.
"""

from __future__ import annotations

from typing import Any

from ember._src import core, rules
from ember._src.core import Zero
from ember._src.execution import placement
from ember._src.interpreters.batching import not_mapped
from ember._src.runtime.array import Array
from ember._src.runtime.mesh import Mesh, current_mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.tree.util import tree_flatten, tree_unflatten


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``x`` (a pytree), each leaf laid out as ``shardings`` (a Sharding, a PartitionSpec
    inside ``with mesh:``, or a pytree prefix of them) says."""
    leaves, treedef = tree_flatten(x)
    index_tree = tree_unflatten(treedef, range(len(leaves)))
    prefix = tuple(shardings) if isinstance(shardings, list) else shardings
    targets = placement.broadcast_prefix(
        prefix, index_tree, len(leaves), "with_sharding_constraint shardings"
    )
    out = []
    for leaf, target in zip(leaves, targets):
        if target is None:
            out.append(leaf)
        elif not isinstance(target, NamedSharding):
            raise TypeError(
                f"with_sharding_constraint needs NamedShardings (or PartitionSpecs inside "
                f"`with mesh:`), got {target!r}"
            )
        elif core.eval_trace_is_current():  # outside any trace: a device_put
            out.append(placement.put(leaf, target, "with_sharding_constraint"))
        else:
            out.append(sharding_constraint_p.bind(leaf, sharding=target))
    return tree_unflatten(treedef, out)


def laid_out(result: Any, out_sharding: Any) -> Any:
    """``result`` laid out by JAX's ``out_sharding=`` keyword (a NamedSharding, or a
    PartitionSpec under ``with mesh:``), as a sharding constraint; None leaves it as it is."""
    return result if out_sharding is None else with_sharding_constraint(result, out_sharding)


def retype(value: Any, want: Any, like: Any = None) -> Any:
    """``value`` typed ``want`` (a typed sharding, or None: split over no Explicit axis),
    resharded when its own type differs: what ``zeros_like`` and cotangents, which must be
    typed as the array they stand beside, need. The devices come from ``like`` or ``value``
    (Arrays), else the mesh in scope; with none to name, the type stays as it is."""
    have = core.get_aval(value).typed_sharding
    if have == want:
        return value
    abstract = (want if want is not None else have).mesh
    mesh = devices_for(abstract, like, value)
    if mesh is None:
        return value
    spec = want.spec if want is not None else PartitionSpec()
    return with_sharding_constraint(value, NamedSharding(mesh, spec))


def devices_for(abstract: Any, *arrays: Any) -> Mesh | None:
    """A mesh of devices with the names, sizes and axis types of ``abstract``."""
    meshes = [
        a.sharding.mesh for a in arrays if type(a) is Array and type(a.sharding) is NamedSharding
    ]
    in_scope = current_mesh()
    for mesh in [*meshes, in_scope] if in_scope is not None else meshes:
        if mesh.shape_tuple == abstract.shape_tuple:
            types = dict(zip(mesh.axis_names, abstract.axis_types))
            return mesh if mesh.abstract_mesh == abstract else mesh.update_axis_types(types)
    return None


def typed_out_sharding(out_sharding: Any, ndim: int, what: str, operands: Any = ()) -> Any:
    """The typed sharding (over Explicit axes) of a result of rank ``ndim`` that JAX's
    ``out_sharding=`` keyword asks for (a NamedSharding, or a PartitionSpec under a mesh),
    for primitives that take it as a parameter; None when it names no Explicit axis. Where
    an operand is typed, one that splits over no Explicit axis is kept (its spec all None):
    it decides that the result is whole, where the primitive's sharding rule, which runs for
    typed operands, might find the result ambiguous."""
    if out_sharding is None:
        return None
    sharding = placement.resolve(out_sharding, what)
    if not isinstance(sharding, NamedSharding):
        return None
    typed = sharding.typed(ndim)
    if typed is None and any(core.get_aval(x).typed_sharding is not None for x in operands):
        return NamedSharding(sharding.mesh.abstract_mesh, PartitionSpec(*[None] * ndim))
    return typed


def _abstract_eval(x, *, sharding):
    sharding.shard_shape(x.shape)  # an indivisible dimension fails here, naming the sizes
    # Typed as the constraint says over Explicit axes (``reshard``), whatever x's type was.
    return x.update(sharding=sharding.typed(x.ndim))


def _reference(x, *, sharding):
    return x  # a layout, not a value: nothing to compute without a partitioner


def _lowering(ctx, x, *, sharding):
    ctx.module.require_mesh(sharding.mesh, "with_sharding_constraint")
    aval = ctx.avals_in[0]
    attrs = {"sharding": sharding.sdy_sharding(aval.ndim)}
    return ctx.op("sdy.sharding_constraint", [x], ctx.avals_out[0], attrs)


def _jvp(primals, tangents, *, sharding):
    (x,), (t,) = primals, tangents
    out = sharding_constraint_p.bind(x, sharding=sharding)
    return out, t if type(t) is Zero else sharding_constraint_p.bind(t, sharding=sharding)


def _transpose(ct, x, *, sharding):
    return [ct if type(ct) is Zero else sharding_constraint_p.bind(ct, sharding=sharding)]


def _batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is not_mapped:
        return sharding_constraint_p.bind(x, sharding=sharding), d
    entries = list(sharding.spec) + [None] * (core.get_aval(x).ndim - 1 - len(sharding.spec))
    entries.insert(d, _batch_entry(core.get_aval(x), d, sharding))
    batched = NamedSharding(sharding.mesh, PartitionSpec(*entries))
    return sharding_constraint_p.bind(x, sharding=batched), d


def _batch_entry(aval: Any, d: int, sharding: NamedSharding) -> Any:
    """How the batch dimension is split under the constraint: as the batched value's type
    splits it over Explicit axes (vmap of a batch split over X keeps it split over X) unless
    the constraint itself uses those axes; else whole on every device."""
    typed = aval.typed_sharding
    if typed is None or typed.mesh != sharding.mesh.abstract_mesh or d >= len(typed.spec):
        return None
    axes = typed.spec.axes_of(d)
    used = {a for dim in range(len(sharding.spec)) for a in sharding.spec.axes_of(dim)}
    return typed.spec[d] if axes and not used.intersection(axes) else None


def _layouts(*, sharding):
    """Run eagerly: the operand and the result laid out as the constraint says."""
    return [sharding], [sharding]


def _sharding_rule(x, *, sharding):
    """The result is typed as the constraint says over Explicit axes: ``reshard``."""
    return sharding.typed(x.ndim)


sharding_constraint_p = rules.define_primitive(
    "sharding_constraint",
    sharding=_sharding_rule,
    abstract_eval=_abstract_eval,
    jvp=_jvp,
    transpose=_transpose,
    batch=_batch,
    lowering=_lowering,
    reference=_reference,
    eager_layouts=_layouts,
)
