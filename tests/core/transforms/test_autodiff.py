"""grad, value_and_grad, jvp, vjp: the values they hand back."""

import numpy as np

import ember


def test_derivatives_are_ember_arrays_weakly_typed_where_their_primal_is():
    # as JAX's: the gradient at a Python float is weakly typed, even through the identity
    for g in (ember.grad(lambda x: x)(2.0), ember.grad(lambda x: 3.0 * x**2)(2.0)):
        assert type(g) is ember.Array and g.weak_type and g.dtype == np.float32
    assert float(ember.grad(lambda x: 3.0 * x**2)(2.0)) == 12.0
    _, tangent = ember.jvp(lambda x: x * 2.0, (2.0,), (1.0,))
    assert tangent.weak_type
    (cotangent,) = ember.vjp(lambda x: x * 2.0, 2.0)[1](1.0)
    assert cotangent.weak_type
    # an array primal gives a strongly typed derivative
    g = ember.grad(lambda x: x)(np.float32(2.0))
    assert type(g) is ember.Array and not g.weak_type
