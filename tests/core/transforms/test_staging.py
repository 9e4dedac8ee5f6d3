"""make_jaxpr, eval_shape and ShapeDtypeStruct (the rest of staging is exercised through jit)."""

from __future__ import annotations

import numpy as np

import ember
import ember.numpy as enp


def test_shape_dtype_struct_like_takes_shape_dtype_and_weak_type():
    # JAX 0.10.2's answers
    like = ember.ShapeDtypeStruct.like
    assert like(enp.arange(3.0)) == ember.ShapeDtypeStruct((3,), np.float32)
    assert like(np.zeros(2, np.int8)) == ember.ShapeDtypeStruct((2,), np.int8)
    scalar = like(2.0)
    assert (scalar.shape, scalar.dtype, scalar.weak_type) == ((), np.float32, True)
    assert like(ember.ShapeDtypeStruct((2,), np.float32)) == ember.ShapeDtypeStruct((2,), "f4")


def test_shape_dtype_struct_like_of_a_traced_value():
    def f(x):
        return ember.pure_callback(np.sin, ember.ShapeDtypeStruct.like(x), x)

    x = enp.arange(4.0)
    np.testing.assert_allclose(ember.jit(f)(x), np.sin(np.arange(4.0)), rtol=1e-6)
    assert ember.eval_shape(f, x) == ember.ShapeDtypeStruct((4,), np.float32)
