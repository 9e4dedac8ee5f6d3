"""Registration of the rules that give a primitive its meaning.

Every primitive registers its rules right beside its definition, through these functions:

- ``def_abstract_eval``: output avals from input avals and params (shape/dtype checking);
- ``def_jvp``: forward-mode differentiation;
- ``def_transpose``: transposition of a primitive that is linear in some inputs;
- ``def_batch``: vectorisation (vmap);
- ``def_lowering``: StableHLO emission, optionally for one platform only (plugins override
  rules for their platform through the ``ember_register_lowerings`` hook);
- ``def_reference``: evaluation with NumPy, used by the built-in ``reference`` backend.

Lookups raise ``NotImplementedError`` naming the primitive and the missing rule, because a
missing rule is a gap in ember, not a user mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._src import errors
from ember._src.core import Primitive

Rule = Callable[..., Any]

_abstract_eval: dict[Primitive, Rule] = {}
_jvp: dict[Primitive, Rule] = {}
_transpose: dict[Primitive, Rule] = {}
_batch: dict[Primitive, Rule] = {}
_lowering: dict[Primitive, dict[str | None, Rule]] = {}
_reference: dict[Primitive, Rule] = {}
_partial_eval: dict[Primitive, Rule] = {}
_collective_batch: dict[Primitive, Rule] = {}
_primitives: dict[str, Primitive] = {}


def _decorator(table: dict[Primitive, Rule], primitive: Primitive):
    _primitives.setdefault(primitive.name, primitive)

    def register(rule: Rule) -> Rule:
        table[primitive] = rule
        return rule

    return register


def def_abstract_eval(primitive: Primitive):
    return _decorator(_abstract_eval, primitive)


def def_jvp(primitive: Primitive):
    return _decorator(_jvp, primitive)


def def_transpose(primitive: Primitive):
    return _decorator(_transpose, primitive)


def def_batch(primitive: Primitive):
    return _decorator(_batch, primitive)


def def_reference(primitive: Primitive):
    return _decorator(_reference, primitive)


def def_partial_eval(primitive: Primitive):
    """A custom partial-evaluation rule (call-like primitives: jit, control flow)."""
    return _decorator(_partial_eval, primitive)


def def_collective_batch(primitive: Primitive):
    """The batching rule of a collective over named axes.

    ``rule(axis_name, axis_size, vals, dims, **params)``: ``axis_name`` and ``axis_size`` are
    those of the vmap doing the batching, which the collective may or may not name.
    """
    return _decorator(_collective_batch, primitive)


def collective_batch_rule(primitive: Primitive) -> Rule | None:
    return _collective_batch.get(primitive)


def def_lowering(primitive: Primitive, platform: str | None = None):
    """Register a StableHLO lowering, for every platform (None) or one platform's override."""
    _primitives.setdefault(primitive.name, primitive)

    def register(rule: Rule) -> Rule:
        _lowering.setdefault(primitive, {})[platform] = rule
        return rule

    return register


def register_lowering(primitive: Primitive, rule: Rule, platform: str | None = None) -> None:
    def_lowering(primitive, platform)(rule)


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


def all_primitives() -> dict[str, Primitive]:
    return dict(_primitives)
