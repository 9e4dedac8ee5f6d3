"""jacfwd, jacrev, hessian: shapes and values against finite differences and each other."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close, numerical_gradient


def f(x, y):
    return enp.sin(x) * enp.sum(y) + x**2


def test_jacobians_agree_and_have_jax_shapes(rng):
    x = rng.normal(size=3).astype(np.float32)
    y = rng.normal(size=(2, 2)).astype(np.float32)
    jf = ember.jacfwd(f, argnums=(0, 1))(x, y)
    jr = ember.jacrev(f, argnums=(0, 1))(x, y)
    assert [j.shape for j in jf] == [(3, 3), (3, 2, 2)]
    for a, b in zip(jf, jr):
        assert_close(a, b, rtol=1e-5)
    expected = np.diag(np.cos(x) * y.sum() + 2 * x)
    assert_close(jf[0], expected, rtol=1e-5)


def test_jacobian_of_pytrees():
    x = {"w": np.arange(3.0, dtype=np.float32)}
    jac = ember.jacrev(lambda d: {"a": d["w"] * 2, "b": d["w"].sum()})(x)
    assert_close(jac["a"]["w"], 2 * np.eye(3))
    assert_close(jac["b"]["w"], np.ones(3))


def test_hessian_against_finite_differences(rng):
    x = rng.normal(size=3).astype(np.float32)

    def g(v):
        return enp.sum(enp.tanh(v) * v[::-1]) + v[0] ** 3

    hess = np.asarray(ember.hessian(g)(x))
    for i in range(3):

        def grad_i(v, i=i):
            return np.asarray(ember.grad(g)(v.astype(np.float32)))[i]

        row = numerical_gradient(grad_i, [x])
        assert_close(hess[i], row, rtol=1e-2, atol=1e-2)
    assert_close(hess, hess.T, rtol=1e-5)


def test_jacfwd_of_jacrev_equals_jacrev_of_jacfwd(rng):
    x = rng.normal(size=4).astype(np.float32)
    g = lambda v: enp.sum(enp.exp(v) * enp.sin(v))
    assert_close(ember.jacfwd(ember.jacrev(g))(x), ember.jacrev(ember.jacfwd(g))(x), rtol=1e-5)


def test_jacobian_has_aux():
    jac, aux = ember.jacrev(lambda v: (v * 2, "note"), has_aux=True)(np.ones(2, np.float32))
    assert aux == "note"
    assert_close(jac, 2 * np.eye(2))


def test_integer_inputs_are_rejected():
    with pytest.raises(ember.errors.EmberTypeError, match="floating-point"):
        ember.jacfwd(lambda v: v * 2)(np.arange(3))


def test_jacfwd_calls_the_function_once_on_arrays():
    calls = []

    def g(x):
        calls.append(type(x).__name__)
        return (x > 1).astype(np.float32) * x * x  # .astype needs an array, not a float

    assert_close(ember.jacfwd(ember.jacfwd(g))(1.3), 2.0)
    assert len(calls) == 1
    assert_close(ember.jacfwd(g)(0.5), 0.0)


def test_jacfwd_of_integer_outputs_is_zero_of_their_dtype():
    # JAX: zeros of the output's dtype, shaped out_shape + in_shape.
    jac = ember.jacfwd(lambda x: ((x > 1).astype(np.int32), x * 2))(np.ones(2, np.float32))
    assert jac[0].dtype == np.int32 and jac[0].shape == (2, 2) and not np.asarray(jac[0]).any()
    assert_close(jac[1], 2 * np.eye(2))
    second = ember.jacfwd(ember.jacfwd(lambda x: (x > 1).astype(np.int32)))(1.3)
    assert second.dtype == np.int32 and int(second) == 0


def test_jacfwd_has_aux_keeps_arrays_and_other_values():
    x = np.array([1.0, 2.0], np.float32)
    jac, aux = ember.jacfwd(lambda v: (v * 2, {"s": v.sum(), "note": "n"}), has_aux=True)(x)
    assert_close(jac, 2 * np.eye(2))
    assert aux["note"] == "n" and float(aux["s"]) == 3.0
    hess, aux = ember.hessian(lambda v: ((v**3).sum(), v + 1), has_aux=True)(x)
    assert_close(hess, np.diag(6 * x))
    assert_close(aux, x + 1)


def test_forward_mode_jacobians_of_a_custom_vjp_function_are_a_clear_error():
    @ember.custom_vjp
    def f(x):
        return enp.sin(x)

    f.defvjp(lambda x: (enp.sin(x), x), lambda x, g: (g * enp.cos(x),))
    assert_close(ember.vmap(ember.grad(f))(np.array([0.0, 1.0], np.float32)), np.cos([0, 1]))
    with pytest.raises(TypeError, match="forward-mode differentiation.*custom_vjp function f"):
        ember.jacfwd(f)(np.float32(0.5))
    with pytest.raises(TypeError, match="forward-mode differentiation"):
        ember.vmap(ember.jacfwd(f))(np.ones(2, np.float32))
    # Its bwd is made of differentiable operations, so forward mode over reverse works (JAX too).
    assert_close(ember.hessian(f)(np.float32(0.5)), -np.sin(0.5))
