"""``dot_general``'s batching rule: the mapped axis stays where it is in each operand (no
transposes), and the result equals a loop over the mapped axis."""

import numpy as np
import pytest

import ember
from ember import lax

F32 = np.dtype(np.float32)

# (lhs shape, rhs shape, dimension numbers): a batched matmul, a plain one, a contraction of
# several axes, and one whose batch and contracting axes are out of order.
CASES = [
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 4, 2), (2, 5, 4), (((1, 2), (2, 0)), ((), ()))),
    ((4, 3, 2), (5, 2, 4), (((0,), (2,)), ((2,), (1,)))),
]


def _loop(lhs, rhs, numbers, lhs_axis, rhs_axis, size):
    """The contraction of each slice along the mapped axes, stacked along ``out_axis`` 0."""
    results = []
    for k in range(size):
        x = lhs if lhs_axis is None else np.take(lhs, k, axis=lhs_axis)
        y = rhs if rhs_axis is None else np.take(rhs, k, axis=rhs_axis)
        results.append(np.asarray(lax.dot_general(x, y, numbers)))
    return np.stack(results)


def _mapped(rng, shape, axis, size):
    if axis is None:
        return rng.standard_normal(shape).astype(F32)
    return rng.standard_normal((*shape[:axis], size, *shape[axis:])).astype(F32)


@pytest.mark.parametrize(("lhs_shape", "rhs_shape", "numbers"), CASES)
@pytest.mark.parametrize(
    ("lhs_axis", "rhs_axis"), [(0, 0), (1, 2), (2, None), (None, 1), (None, 0), (0, None)]
)
def test_vmap_equals_a_loop_wherever_the_mapped_axes_are(
    rng, lhs_shape, rhs_shape, numbers, lhs_axis, rhs_axis
):
    lhs_axis = None if lhs_axis is None else min(lhs_axis, len(lhs_shape))
    rhs_axis = None if rhs_axis is None else min(rhs_axis, len(rhs_shape))
    size = 3
    lhs = _mapped(rng, lhs_shape, lhs_axis, size)
    rhs = _mapped(rng, rhs_shape, rhs_axis, size)
    f = ember.vmap(lambda x, y: lax.dot_general(x, y, numbers), in_axes=(lhs_axis, rhs_axis))
    expected = _loop(lhs, rhs, numbers, lhs_axis, rhs_axis, size)
    np.testing.assert_allclose(np.asarray(f(lhs, rhs)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ember.jit(f)(lhs, rhs)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("lhs_axis", "rhs_axis"), [(1, 2), (2, None), (None, 1)])
def test_the_batching_rule_moves_no_operand(rng, lhs_axis, rhs_axis):
    # The mapped axis becomes a batch or free axis of the contraction where it is: the only
    # equation is the dot_general (a transpose of the result, if any, comes from out_axes).
    numbers = (((2,), (1,)), ((0,), (0,)))
    lhs = _mapped(rng, (2, 3, 4), lhs_axis, 5)
    rhs = _mapped(rng, (2, 4, 6), rhs_axis, 5)
    f = ember.vmap(
        lambda x, y: lax.dot_general(x, y, numbers), in_axes=(lhs_axis, rhs_axis), out_axes=0
    )
    names = [e.primitive.name for e in ember.make_jaxpr(f)(lhs, rhs).jaxpr.eqns]
    assert names.count("dot_general") == 1
    assert "transpose" not in names[: names.index("dot_general")]
