"""Comparisons (eq, ne, lt, le, gt, ge) and the ``is_finite`` test: elementwise, bool results,
zero derivative.

XLA orders complex numbers in no documented way (and NumPy's order is lexicographic), so, as
in JAX, only eq and ne accept them; ember.numpy orders them itself (``arithmetic.lexicographic``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, rules
from ember._src.primitives.elementwise import (
    _ANY,
    _ORDERED,
    _REAL_FLOAT,
    broadcast_operands,
    coerce_scalars,
    elementwise_rules,
    zero_jvp,
)
from ember._src.primitives.shape import compare_type


def _comparison_lowering(direction: str):
    def lowering(ctx, x, y):
        x, y = broadcast_operands(ctx, [x, y])
        return ctx.op(
            "stablehlo.compare",
            [x, y],
            ctx.avals_out[0],
            {
                "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                "compare_type": compare_type(ctx.avals_in[0].dtype),
            },
        )

    return lowering


def _comparison_rules(numpy_fn, direction: str, kinds: str) -> dict[str, Any]:
    lowering = _comparison_lowering(direction)
    return {
        **elementwise_rules(numpy_fn, lowering, kinds, result_dtype=dtypes.bool_),
        "jvp": zero_jvp,
    }


eq_p = rules.define_primitive("eq", **_comparison_rules(np.equal, "EQ", _ANY))


def eq(x: Any, y: Any) -> Any:
    return eq_p.bind(*coerce_scalars(x, y))


ne_p = rules.define_primitive("ne", **_comparison_rules(np.not_equal, "NE", _ANY))


def ne(x: Any, y: Any) -> Any:
    return ne_p.bind(*coerce_scalars(x, y))


lt_p = rules.define_primitive("lt", **_comparison_rules(np.less, "LT", _ORDERED))


def lt(x: Any, y: Any) -> Any:
    return lt_p.bind(*coerce_scalars(x, y))


le_p = rules.define_primitive("le", **_comparison_rules(np.less_equal, "LE", _ORDERED))


def le(x: Any, y: Any) -> Any:
    return le_p.bind(*coerce_scalars(x, y))


gt_p = rules.define_primitive("gt", **_comparison_rules(np.greater, "GT", _ORDERED))


def gt(x: Any, y: Any) -> Any:
    return gt_p.bind(*coerce_scalars(x, y))


ge_p = rules.define_primitive("ge", **_comparison_rules(np.greater_equal, "GE", _ORDERED))


def ge(x: Any, y: Any) -> Any:
    return ge_p.bind(*coerce_scalars(x, y))


# --------------------------------------------------------------------------------------------
# is_finite: neither infinite nor nan

is_finite_p = rules.define_primitive(
    "is_finite",
    **elementwise_rules(np.isfinite, "stablehlo.is_finite", _REAL_FLOAT, result_dtype=dtypes.bool_),
    jvp=zero_jvp,
)


def is_finite(x: Any) -> Any:
    return is_finite_p.bind(x)
