"""The one way to define a primitive: ``define_primitive`` makes it together with its rules.

    clamp_p = rules.define_primitive(
        "clamp",
        abstract_eval=_clamp_abstract_eval,  # output avals from input avals and params
        jvp=_clamp_jvp,                      # forward-mode differentiation
        batch=_clamp_batch,                  # vectorisation (vmap)
        lowering=_clamp_lowering,            # StableHLO emission
        reference=_clamp_reference,          # NumPy evaluation (the reference backend)
        sharding=rules.per_primitive(sharding_rules.elementwise),  # types over Explicit axes
    )

Rules are written above the call that registers them; a rule that binds its own primitive
names it as a module global (``clamp_p``), looked up when the rule runs. Optional rules:
``transpose`` (for primitives linear in some operands), ``partial_eval`` (call-like
primitives: jit, control flow), ``collective_batch`` (collectives over named axes),
``eager_layouts`` (primitives that decide where their operands and results live when run
eagerly: shard_map, the sharding constraint), ``eager`` (primitives that run eagerly as Python
on the host instead of as a compiled program: the host callbacks, ``rule(*args, **params)``),
``effects`` (primitives with side effects, the host callbacks: ``effects(**params)`` gives the
equation's ``Effect``s), ``discharge`` (primitives that take Refs: how the discharge pass turns
them into functions of values, ``rule(in_avals, out_avals, *args, **params) -> (new values of
each input or None, outputs)``, see ``interpreters/discharge.py``). Only primitives with a
discharge rule accept Ref operands; any other refuses them with a TypeError.

Inside a ``shard_map`` body typed by its manual axes (``check_vma=True``), results vary over
every axis an operand varies over, and ``bind`` first pvaries the operands that vary over
fewer (``core.Primitive.bind``): the standard rule, which ``abstract_eval`` below applies.
``own_vma=True`` says the primitive's abstract evaluation types that itself (the
collectives, ``pvary``, and the primitives that run a jaxpr, typed by it).

``sharding`` is the primitive's *sharding rule*, used when an operand's type is split over
Explicit mesh axes: ``rule(*avals_in, **params)`` gives the result's typed sharding (a list
for several results; None: split over nothing), or raises ``ShardingTypeError`` when the
result's sharding is ambiguous. ``sharding=NOT_SHARDABLE`` says the primitive has none: its
operands must then be unsplit (the error says how: ``reshard`` them, or ``auto_axes``). A
primitive with an ``out_sharding`` parameter takes its result's typed sharding from it when
given. ``abstract_eval`` below applies the rules; every primitive has one or the marker.
``lowering`` is one rule for every platform, or ``{None: rule, "cpu": override}``.

A family of similar primitives (the elementwise ones, the comparisons) calls the same form
once per member, sharing rules that need to know their primitive through ``per_primitive``:
``batch=per_primitive(elementwise_batch)`` registers ``elementwise_batch(the_primitive)``.

Plugins override lowerings for their platform through the ``ember_register_lowerings`` hook,
which calls ``register_lowering``. Lookups raise ``NotImplementedError`` naming the primitive
and the missing rule, because a missing rule is a gap in ember, not a user mistake.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.core import NO_AXES, Primitive, ShapedArray
from ember._src.state_types import AbstractRef

Rule = Callable[..., Any]

_abstract_eval: dict[Primitive, Rule] = {}
_jvp: dict[Primitive, Rule] = {}
_transpose: dict[Primitive, Rule] = {}
_batch: dict[Primitive, Rule] = {}
_lowering: dict[Primitive, dict[str | None, Rule]] = {}
_reference: dict[Primitive, Rule] = {}
_partial_eval: dict[Primitive, Rule] = {}
_collective_batch: dict[Primitive, Rule] = {}
_eager_layouts: dict[Primitive, Rule] = {}
_eager: dict[Primitive, Rule] = {}
_sharding: dict[Primitive, Rule | None] = {}
_discharge: dict[Primitive, Rule] = {}
_primitives: dict[str, Primitive] = {}
# Platform overrides registered by name before their primitive was defined (a plugin loads
# before ember imports the module that defines, e.g., the linear algebra primitives): applied
# by ``define_primitive``.
_pending_lowerings: dict[str, dict[str, Rule]] = {}

# ``define_primitive(..., sharding=NOT_SHARDABLE)``: the primitive has no sharding rule.
NOT_SHARDABLE: Any = object()


class per_primitive:  # noqa: N801 - used like a function, in define_primitive's arguments
    """A rule shared by a family of primitives that needs to know which one it serves:
    ``define_primitive`` registers ``build(primitive)``."""

    __slots__ = ("build",)

    def __init__(self, build: Callable[[Primitive], Rule]):
        self.build = build


def define_primitive(
    name: str,
    *,
    abstract_eval: Rule | per_primitive,
    jvp: Rule | per_primitive | None = None,
    transpose: Rule | per_primitive | None = None,
    batch: Rule | per_primitive | None = None,
    lowering: Rule | per_primitive | dict[str | None, Rule | per_primitive] | None = None,
    reference: Rule | per_primitive | None = None,
    partial_eval: Rule | per_primitive | None = None,
    collective_batch: Rule | per_primitive | None = None,
    eager_layouts: Rule | per_primitive | None = None,
    eager: Rule | per_primitive | None = None,
    sharding: Rule | per_primitive | None = None,
    effects: Rule | None = None,
    discharge: Rule | per_primitive | None = None,
    multiple_results: bool = False,
    own_vma: bool = False,
) -> Primitive:
    """A new primitive named ``name``, with its rules registered (see the module docstring)."""
    if name in _primitives:
        raise ValueError(f"internal error: a primitive named {name!r} is already defined")
    primitive = Primitive(name, multiple_results=multiple_results, effects=effects, own_vma=own_vma)
    _primitives[name] = primitive

    def built(rule: Rule | per_primitive) -> Rule:
        return rule.build(primitive) if isinstance(rule, per_primitive) else rule

    for table, rule in (
        (_abstract_eval, abstract_eval),
        (_jvp, jvp),
        (_transpose, transpose),
        (_batch, batch),
        (_reference, reference),
        (_partial_eval, partial_eval),
        (_collective_batch, collective_batch),
        (_eager_layouts, eager_layouts),
        (_eager, eager),
        (_discharge, discharge),
    ):
        if rule is not None:
            table[primitive] = built(rule)
    if sharding is not None:
        _sharding[primitive] = None if sharding is NOT_SHARDABLE else built(sharding)
    if lowering is not None:
        per_platform = lowering if isinstance(lowering, dict) else {None: lowering}
        _lowering[primitive] = {platform: built(r) for platform, r in per_platform.items()}
    for platform, rule in _pending_lowerings.pop(name, {}).items():
        _lowering.setdefault(primitive, {})[platform] = rule
    return primitive


def register_lowering(primitive: Primitive, rule: Rule, platform: str | None = None) -> None:
    """A plugin's lowering for ``platform`` (through the ``ember_register_lowerings`` hook),
    used there instead of the primitive's own."""
    _lowering.setdefault(primitive, {})[platform] = rule


def register_lowering_by_name(name: str, rule: Rule, platform: str) -> None:
    """``register_lowering`` for the primitive named ``name``, now if it is defined, else as
    soon as ``define_primitive`` defines it."""
    primitive = _primitives.get(name)
    if primitive is None:
        _pending_lowerings.setdefault(name, {})[platform] = rule
    else:
        register_lowering(primitive, rule, platform)


def generic_lowering_rule(primitive: Primitive) -> Rule:
    """The primitive's own lowering, for every platform: what a platform override falls back
    to for the cases it does not handle (a dtype its library lacks)."""
    rule = _lowering.get(primitive, {}).get(None)
    if rule is None:
        raise _missing(primitive, "generic StableHLO lowering", "jit or eager execution")
    return rule


def remove_lowering(primitive: Primitive, platform: str) -> Rule | None:
    """Drop ``platform``'s override of ``primitive``'s lowering (the generic rule applies there
    again); returns the removed rule, if there was one, for ``register_lowering`` to restore."""
    return _lowering.get(primitive, {}).pop(platform, None)


def _missing(primitive: Primitive, what: str, transformation: str) -> NotImplementedError:
    return NotImplementedError(
        f"ember has no {what} rule for the primitive '{primitive.name}', so it cannot be used "
        f"under {transformation}{errors.where()}"
    )


def abstract_eval_rule(primitive: Primitive) -> Rule:
    try:
        return _abstract_eval[primitive]
    except KeyError:
        raise _missing(primitive, "abstract evaluation", "tracing (jit, make_jaxpr)") from None


def abstract_eval(primitive: Primitive, avals: Sequence[ShapedArray], params: dict) -> Any:
    """The result avals of ``primitive`` applied to ``avals``: its abstract evaluation, with
    typed shardings from its sharding rule when an operand is split over Explicit axes."""
    split = False
    varying = NO_AXES
    for aval in avals:  # one pass: typed shardings, varying axes, Refs given to array primitives
        if aval.typed_sharding is not None:
            split = True
        elif type(aval) is AbstractRef:
            if primitive not in _discharge:
                raise _ref_operand_error(primitive, aval)
            continue
        if aval.vma:
            varying = varying | aval.vma
    out = abstract_eval_rule(primitive)(*avals, **params)
    if split or params.get("out_sharding") is not None:
        out = _with_shardings(primitive, avals, out, params)
    if varying and not primitive.own_vma:
        out = _varying(primitive, out, varying)
    return out


def _varying(primitive: Primitive, out: Any, vma: frozenset) -> Any:
    """The standard rule of varying manual axes: results vary over every axis an operand
    varies over (``bind`` has already cast the operands to vary alike)."""
    if not primitive.multiple_results:
        return out if out.vma == vma else out.update(vma=vma)
    return [a if a.vma == vma else a.update(vma=vma) for a in out]


def _with_shardings(
    primitive: Primitive, avals: Sequence[ShapedArray], out: Any, params: dict
) -> Any:
    given = params.get("out_sharding")
    if given is not None:  # a chosen sharding that splits nothing types the result unsplit
        shardings = given if any(e is not None for e in given.spec) else None
    else:
        try:
            rule = _sharding[primitive]
        except KeyError:
            raise _missing(primitive, "sharding", "explicit mesh axes") from None
        if rule is None:
            raise _not_shardable(primitive, avals)
        shardings = rule(*avals, **params)
    if not primitive.multiple_results:
        return _typed(out, shardings)
    return [_typed(a, s) for a, s in zip(out, shardings)]


# Typed avals, interned: a trace under Explicit axes makes the same few types over and over.
_typed_avals: dict[tuple, ShapedArray] = {}


def _typed(aval: ShapedArray, sharding: Any) -> ShapedArray:
    if aval.typed_sharding is sharding:
        return aval
    key = (aval, sharding)
    found = _typed_avals.get(key)
    if found is None:
        found = aval.update(sharding=sharding)
        if len(_typed_avals) < 4096:
            _typed_avals[key] = found
    return found


def _not_shardable(primitive: Primitive, avals: Sequence[ShapedArray]) -> errors.EmberError:
    operands = ", ".join(a.str_short() for a in avals)
    return errors.ShardingTypeError(
        f"{primitive.name} has no sharding rule, and its operands ({operands}) are split over "
        f"Explicit mesh axes. Make them whole first (ember.sharding.reshard(x, P())), or run "
        f"this part with the partitioner choosing layouts (ember.sharding.auto_axes)"
        f"{errors.where()}"
    )


def _ref_operand_error(primitive: Primitive, aval: AbstractRef) -> errors.EmberTypeError:
    return errors.EmberTypeError(
        f"{primitive.name} was applied to a Ref ({aval.str_short()}), which is not an array: "
        f"read it first (x_ref[...]){errors.where()}"
    )


def has_sharding_rule(primitive: Primitive) -> bool:
    """Whether ``primitive`` has a sharding rule or says it has none (``NOT_SHARDABLE``)."""
    return primitive in _sharding


def jvp_rule(primitive: Primitive) -> Rule:
    try:
        return _jvp[primitive]
    except KeyError:
        raise _missing(primitive, "differentiation (jvp)", "jvp/grad") from None


def transpose_rule(primitive: Primitive) -> Rule:
    try:
        return _transpose[primitive]
    except KeyError:
        raise _missing(primitive, "transpose", "reverse-mode differentiation (grad/vjp)") from None


def batch_rule(primitive: Primitive) -> Rule:
    try:
        return _batch[primitive]
    except KeyError:
        raise _missing(primitive, "batching", "vmap") from None


def reference_rule(primitive: Primitive) -> Rule:
    try:
        return _reference[primitive]
    except KeyError:
        raise _missing(primitive, "reference (NumPy) evaluation", "the reference backend") from None


def collective_batch_rule(primitive: Primitive) -> Rule | None:
    """The batching rule of a collective over named axes, if ``primitive`` is one:
    ``rule(axis_name, axis_size, vals, dims, **params)``, where ``axis_name`` and ``axis_size``
    are those of the vmap doing the batching, which the collective may or may not name."""
    return _collective_batch.get(primitive)


def eager_layouts_rule(primitive: Primitive) -> Rule | None:
    """``rule(**params) -> (operand shardings, result shardings)`` (None: as it is / as the
    partitioner decides) for running ``primitive`` eagerly, if it decides them."""
    return _eager_layouts.get(primitive)


def eager_rule(primitive: Primitive) -> Rule | None:
    """``rule(*args, **params)``: how ``primitive`` runs eagerly, if not as a program."""
    return _eager.get(primitive)


def discharge_rule(primitive: Primitive) -> Rule | None:
    """How ``primitive`` is discharged (see ``interpreters/discharge.py``), if it takes Refs."""
    return _discharge.get(primitive)


def partial_eval_rule(primitive: Primitive) -> Rule | None:
    return _partial_eval.get(primitive)


def lowering_rule(primitive: Primitive, platform: str) -> Rule:
    rules = _lowering.get(primitive)
    if rules is not None:
        rule = rules.get(platform) or rules.get(None)
        if rule is not None:
            return rule
    raise _missing(
        primitive, f"StableHLO lowering (platform {platform!r})", "jit or eager execution"
    )


def has_lowering(primitive: Primitive, platform: str | None = None) -> bool:
    rules = _lowering.get(primitive, {})
    return platform in rules or None in rules


def has_reference(primitive: Primitive) -> bool:
    return primitive in _reference


def has_transpose(primitive: Primitive) -> bool:
    return primitive in _transpose


def primitive_named(name: str) -> Primitive:
    """The primitive called ``name``: for the few rules of a low layer that must bind a
    primitive defined higher up (see ``interpreters/ad_util.py``)."""
    try:
        return _primitives[name]
    except KeyError:
        raise NotImplementedError(f"internal error: no primitive named {name!r}") from None


def all_primitives() -> dict[str, Primitive]:
    return dict(_primitives)


def expansion(primitive: Primitive) -> Rule | None:
    """The expression of other primitives that ``primitive``'s own lowering lowers (see
    ``lower_via``), or None when it emits StableHLO directly."""
    return getattr(_lowering.get(primitive, {}).get(None), "expansion", None)
