"""``log_add_exp`` (NumPy's ``logaddexp`` and ``logaddexp2``, ``nn.softplus``,
``lax.cumlogsumexp``): its derivative is its own rule, ``exp(x - out)``, as JAX's.

Differentiating the stable formula instead split the tangent wrongly where both operands are
equal (``softplus'(0)`` was 0, not 1/2), which stalled the Gaussian-process example's training
(tests/ports). Values pinned from JAX 0.10.2.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close


@pytest.mark.parametrize("value", [0.0, 3.0, -7.5])
def test_logaddexp_splits_the_slope_in_halves_where_the_operands_are_equal(value):
    slopes = ember.grad(enp.logaddexp, argnums=(0, 1))(value, value)
    assert_close(slopes, (0.5, 0.5))


def test_softplus_and_logaddexp2_have_slope_one_half_at_zero():
    assert_close(ember.grad(ember.nn.softplus)(0.0), 0.5)
    assert_close(ember.grad(lambda x: enp.logaddexp2(x, 0.0))(0.0), 0.5)
    # an array of zeros, as the Gaussian-process example's hyperparameters start
    assert_close(ember.grad(lambda p: enp.sum(ember.nn.softplus(p)))(enp.zeros((1, 1))), [[0.5]])


def test_cumlogsumexp_gradient_of_equal_entries():
    # d/dx_j sum_i log(sum_{k<=i} exp(x_k)) at x = 0 is sum_{i>=j} 1/(i+1)
    got = ember.grad(lambda x: enp.sum(lax.cumlogsumexp(x)))(enp.zeros(3))
    assert_close(got, [11 / 6, 5 / 6, 1 / 3], rtol=1e-6)


def test_logaddexp_jvp_and_gradients_away_from_ties(rng):
    x = rng.standard_normal(5).astype(np.float32)
    y = rng.standard_normal(5).astype(np.float32)
    ones, zeros = np.ones(5, np.float32), np.zeros(5, np.float32)
    out, tangent = ember.jvp(enp.logaddexp, (x, y), (ones, zeros))
    assert_close(out, np.logaddexp(x, y), rtol=1e-6)
    assert_close(tangent, 1 / (1 + np.exp(y - x)), rtol=1e-5)
    check_grads(enp.logaddexp, (x.astype(np.float64), y.astype(np.float64)), order=2)


def test_complex_logaddexp_gradient():
    got = ember.grad(lambda x: enp.logaddexp(x, 0.5 + 1j).real)(0.5 + 0j)
    assert_close(got, 0.5 - 0.27315125j, rtol=1e-6)  # JAX 0.10.2
