"""The cumulative primitives: one equation each in a jaxpr (JAX's names and parameters), and
the reference backend's NumPy rules counting in the operand's dtype as XLA does."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_each_is_one_equation_with_jax_parameters(name):
    text = str(ember.make_jaxpr(lambda x: getattr(lax, name)(x, 1, reverse=True))(enp.ones((2, 3))))
    assert f"{name}[axis=1 reverse=True]" in text
    assert text.count(" = ") == 1  # no expansion into slices and concatenations


def test_numpy_cumsum_binds_the_primitive_in_its_dtype():
    text = str(ember.make_jaxpr(lambda x: enp.cumsum(x, dtype=enp.float32))(np.arange(4)))
    assert "convert_element_type" in text and "cumsum[axis=0 reverse=False]" in text


def test_int32_sums_wrap_in_their_dtype_on_every_backend():
    x = np.full(3, 2**30, np.int32)
    out = np.asarray(lax.cumsum(x))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(
        out, np.array([2**30, 2**31, 3 * 2**30], np.int64).astype(np.int32)
    )


def test_reverse_and_grad_against_numpy():
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    np.testing.assert_allclose(
        np.asarray(lax.cumprod(x, 1, reverse=True)), np.cumprod(x[:, ::-1], 1)[:, ::-1], rtol=1e-6
    )
    # d/dx_j sum_i cumsum(x)_i = number of prefixes holding x_j
    np.testing.assert_allclose(
        np.asarray(ember.grad(lambda v: lax.cumsum(v, 1).sum())(x)), [[3, 2, 1], [3, 2, 1]]
    )
    got = ember.grad(lambda v: lax.cummax(v, 1).sum())(x)
    np.testing.assert_allclose(np.asarray(got), [[2, 0, 1], [3, 0, 0]])
