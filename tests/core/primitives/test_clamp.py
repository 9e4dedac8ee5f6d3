"""``clamp`` (primitives/clamp.py): the worked example of docs/architecture.md.

Values against NumPy on both backends, derivatives against finite differences and by hand,
vmap against a loop over the batch, and bad input named by the abstract evaluation.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.test_util import check_grads

BACKENDS = ["default", "reference"]


def _device(which):
    return ember.devices()[0] if which == "default" else ember.devices("reference")[0]


@pytest.mark.parametrize("which", BACKENDS)
def test_clamp_with_scalar_and_array_bounds(which):
    x = np.arange(-2.0, 5.0, dtype=np.float32)
    run = ember.jit(lax.clamp, device=_device(which))
    np.testing.assert_array_equal(np.asarray(run(np.float32(0), x, np.float32(2.5))),
                                  np.clip(x, 0, 2.5))  # fmt: skip
    lo, hi = x - 1, x * 0 + 1
    np.testing.assert_array_equal(np.asarray(run(lo, x, hi)), np.minimum(np.maximum(x, lo), hi))


def test_clamp_derivatives_pass_to_the_active_operand():
    x = np.array([-1.0, 0.0, 1.0, 2.5, 3.0], np.float32)
    np.testing.assert_array_equal(
        np.asarray(ember.grad(lambda x: lax.clamp(0.0, x, 2.5).sum())(x)), [0, 0, 1, 0, 0]
    )
    assert float(ember.grad(lambda m: lax.clamp(m, 1.0, 2.5))(1.5)) == 1.0
    assert float(ember.grad(lambda m: lax.clamp(0.0, 3.0, m))(2.5)) == 1.0
    assert float(ember.grad(lambda m: lax.clamp(0.0, 1.0, m))(2.5)) == 0.0


def test_clamp_gradients_match_finite_differences():
    # Points away from the kinks (where x meets a bound), where clamp is differentiable.
    lo = np.array([0.0, 0.5, -1.0], np.float32)
    x = np.array([-0.5, 1.0, 3.0], np.float32)
    hi = np.array([1.0, 2.0, 2.0], np.float32)
    check_grads(lax.clamp, (lo, x, hi), order=2, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def test_clamp_under_vmap_matches_a_loop():
    rng = np.random.default_rng(0)
    lo, x, hi = (rng.normal(size=(5, 4)).astype(np.float32) for _ in range(3))
    hi = np.maximum(lo, hi)
    got = ember.vmap(lax.clamp)(lo, x, hi)
    expected = np.stack([np.asarray(lax.clamp(lo[i], x[i], hi[i])) for i in range(5)])
    np.testing.assert_array_equal(np.asarray(got), expected)
    # An unbatched scalar bound stays a scalar.
    got = ember.vmap(lambda x: lax.clamp(np.float32(0), x, np.float32(0.5)))(x)
    np.testing.assert_array_equal(np.asarray(got), np.clip(x, 0, 0.5))


def test_clamp_under_vmap():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    lo = np.array([1.0, 2.0, 3.0], np.float32)
    got = ember.vmap(lambda lo, x: lax.clamp(lo, x, 6.0))(lo, x)
    np.testing.assert_array_equal(np.asarray(got), np.clip(x, lo[:, None], 6.0))


def test_clamp_reports_bad_shapes_and_dtypes():
    with pytest.raises(ember.errors.EmberTypeError, match="min.shape"):
        lax.clamp(np.zeros(2, np.float32), np.zeros(3, np.float32), np.float32(1))
    with pytest.raises(ember.errors.EmberTypeError, match="one dtype"):
        lax.clamp(np.int32(0), np.zeros(3, np.float32), np.float32(1))
