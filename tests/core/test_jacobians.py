"""jacfwd, jacrev, hessian: shapes and values against finite differences and each other."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp

from .util import assert_close, numerical_gradient


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
