"""``stop_gradient(x)``: the identity, with a zero derivative."""

from __future__ import annotations

from typing import Any

from ember._src import rules
from ember._src.primitives import sharding_rules
from ember._src.primitives.elementwise import zero_jvp


def _stop_gradient_batch(vals, dims):
    return stop_gradient_p.bind(vals[0]), dims[0]


stop_gradient_p = rules.define_primitive(
    "stop_gradient",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=lambda x: x,
    jvp=zero_jvp,
    batch=_stop_gradient_batch,
    lowering=lambda ctx, x: x,
    reference=lambda x: x,
)


def stop_gradient(x: Any) -> Any:
    """``x`` itself, but treated as a constant by differentiation."""
    return stop_gradient_p.bind(x)
