"""grad, value_and_grad, jvp, vjp and linearize against finite differences."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from tests.core.util import assert_close, numerical_gradient

FUNCTIONS = {
    "tanh_sum": lambda x: enp.sum(enp.tanh(x) ** 2),
    "exp_log": lambda x: enp.sum(enp.log1p(enp.exp(x)) * x),
    "trig": lambda x: enp.sum(enp.sin(x) * enp.cos(2.0 * x) + enp.arctan(x)),
    "sqrt_div": lambda x: enp.sum(enp.sqrt(x * x + 1.0) / (x * x + 2.0)),
    "max_min": lambda x: enp.max(x) - enp.min(x) + enp.mean(enp.maximum(x, 0.1)),
    "prod": lambda x: enp.prod(x),
    "power": lambda x: enp.sum(enp.power(enp.abs(x) + 1.0, 1.7)),
    "matmul": lambda x: enp.sum((x.reshape(2, 3) @ x.reshape(3, 2)) ** 2),
    "shape_ops": lambda x: enp.sum(
        enp.concatenate([x[::-1], enp.broadcast_to(x[:2], (3, 2)).ravel()]) ** 3
    ),
    "logistic": lambda x: enp.sum(lax.logistic(x) * enp.arcsinh(x)),
    "where": lambda x: enp.sum(enp.where(x > 0, x**2, -x)),
    "einsum": lambda x: enp.einsum("i,i->", x, enp.cosh(x)),
    "var": lambda x: enp.var(x) + enp.std(x),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_grad_matches_finite_differences(name, rng):
    f = FUNCTIONS[name]
    x = rng.uniform(0.3, 1.2, size=(6,)).astype(np.float32) * rng.choice([-1, 1], 6)
    expected = numerical_gradient(lambda v: f(v.astype(np.float32)), [x])
    assert_close(ember.grad(f)(x), expected, rtol=2e-2, atol=2e-3)
    assert_close(ember.jit(ember.grad(f))(x), expected, rtol=2e-2, atol=2e-3)


def test_grad_of_arrays_on_another_device_stays_there(reference_device):
    # The seed cotangent follows the output's device; it was made on the default device, so an
    # eager grad of arrays committed elsewhere mixed devices (tanh's backward multiplies).
    x = ember.device_put(np.array([0.5, 1.0, 2.0], np.float32), reference_device)
    g = ember.grad(lambda x: enp.tanh(x).sum())(x)
    assert g.devices() == {reference_device}
    np.testing.assert_allclose(np.asarray(g), 1 - np.tanh([0.5, 1.0, 2.0]) ** 2, rtol=1e-6)
    value, g = ember.value_and_grad(lambda x: (x * x).sum())(x)
    assert value.devices() == g.devices() == {reference_device}
    np.testing.assert_allclose(np.asarray(g), [1.0, 2.0, 4.0])
    unused = ember.grad(lambda x, y: x.sum(), argnums=(0, 1))(x, x)[1]  # a zero gradient
    assert unused.devices() == {reference_device}
    np.testing.assert_array_equal(np.asarray(unused), 0.0)
    # and the zero tangents and cotangents of jvp and vjp
    _, tangent = ember.jvp(lax.stop_gradient, (x,), (x,))
    assert tangent.devices() == {reference_device}
    _, pullback = ember.vjp(lambda x, y: x * 2.0, x, x)
    assert [ct.devices() for ct in pullback(x)] == [{reference_device}] * 2


def test_value_and_grad_argnums_and_has_aux(rng):
    w = rng.normal(size=(3, 2)).astype(np.float32)
    x = rng.normal(size=(4, 3)).astype(np.float32)

    def loss(w, x, scale):
        y = x @ w
        return scale * enp.sum(y**2), {"mean": enp.mean(y)}

    (value, aux), (gw, gx) = ember.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, x, 2.0)
    y = x @ w
    assert_close(value, 2 * np.sum(y**2), rtol=1e-5)
    assert_close(aux["mean"], np.mean(y), rtol=1e-5, atol=1e-6)
    assert_close(gw, 4 * x.T @ y, rtol=1e-4, atol=1e-5)
    assert_close(gx, 4 * y @ w.T, rtol=1e-4, atol=1e-5)
    g, aux2 = ember.grad(loss, has_aux=True)(w, x, 2.0)
    assert_close(g, gw, rtol=1e-6)


def test_grad_of_pytree_arguments():
    params = {"a": np.float32(2.0), "b": [np.float32(3.0), np.ones(2, np.float32)]}
    g = ember.grad(lambda p: p["a"] * p["b"][0] + enp.sum(p["b"][1] * p["a"]))(params)
    assert_close(g["a"], 3.0 + 2.0)
    assert_close(g["b"][0], 2.0)
    assert_close(g["b"][1], [2.0, 2.0])


def test_jvp_and_vjp_agree_with_each_other(rng):
    f = lambda x, y: (enp.sin(x) * y, enp.sum(x * y))
    x = rng.normal(size=(5,)).astype(np.float32)
    y = rng.normal(size=(5,)).astype(np.float32)
    tx = rng.normal(size=(5,)).astype(np.float32)
    ty = rng.normal(size=(5,)).astype(np.float32)
    primals, tangents = ember.jvp(f, (x, y), (tx, ty))
    assert_close(primals[0], np.sin(x) * y)
    assert_close(tangents[0], np.cos(x) * tx * y + np.sin(x) * ty, rtol=1e-5, atol=1e-6)
    out, vjp_fun = ember.vjp(f, x, y)
    ct = (rng.normal(size=(5,)).astype(np.float32), np.float32(0.7))
    cx, cy = vjp_fun(ct)
    # <ct, J t> == <J^T ct, t>
    lhs = np.dot(ct[0], tangents[0]) + ct[1] * tangents[1]
    rhs = np.dot(cx, tx) + np.dot(cy, ty)
    assert_close(lhs, rhs, rtol=1e-4, atol=1e-5)


def test_linearize_evaluates_the_jvp_at_a_fixed_point(rng):
    x = rng.normal(size=(4,)).astype(np.float32)
    out, f_jvp = ember.linearize(lambda v: enp.exp(v) * v, x)
    t = np.ones(4, np.float32)
    assert_close(out, np.exp(x) * x)
    assert_close(f_jvp(t), np.exp(x) * x + np.exp(x), rtol=1e-5)


def test_nested_grad_gives_second_derivatives():
    f = lambda x: x**3 + enp.sin(x)
    d2 = ember.grad(ember.grad(f))(np.float32(0.5))
    assert_close(d2, 6 * 0.5 - np.sin(0.5), rtol=1e-5)
    d3 = ember.jit(ember.grad(ember.grad(ember.grad(f))))(np.float32(0.5))
    assert_close(d3, 6 - np.cos(0.5), rtol=1e-5)


def test_grad_through_jit_and_jit_of_grad_agree(rng):
    inner = ember.jit(lambda w, x: enp.tanh(x @ w))
    loss = lambda w, x: enp.sum(inner(w, x) ** 2)
    w = rng.normal(size=(3, 3)).astype(np.float32)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    expected = numerical_gradient(lambda w: loss(w.astype(np.float32), x), [w])
    assert_close(ember.grad(loss)(w, x), expected, rtol=2e-2, atol=2e-3)
    assert_close(ember.jit(ember.grad(loss))(w, x), expected, rtol=2e-2, atol=2e-3)


def test_stop_gradient_blocks_the_derivative():
    g = ember.grad(lambda x: x * lax.stop_gradient(x))(np.float32(3.0))
    assert_close(g, 3.0)


def test_max_splits_ties_evenly():
    g = ember.grad(lambda x, y: enp.maximum(x, y), argnums=(0, 1))(np.float32(2.0), np.float32(2.0))
    assert_close(g, (0.5, 0.5))


def test_grad_rejects_integer_inputs_and_vector_outputs():
    with pytest.raises(TypeError, match="inexact"):
        ember.grad(lambda x: x * 2.0)(np.int32(3))
    with pytest.raises(TypeError, match="scalar-output"):
        ember.grad(lambda x: x * 2.0)(np.ones(3, np.float32))


def test_jvp_checks_tangent_types():
    with pytest.raises(TypeError, match="tangent"):
        ember.jvp(enp.sin, (np.ones(3, np.float32),), (np.ones(4, np.float32),))


def test_reference_and_default_backend_agree_on_a_gradient(rng, reference_device):
    f = ember.grad(lambda x: enp.sum(enp.tanh(x) * enp.exp(-x * x)))
    x = rng.normal(size=(8,)).astype(np.float32)
    on_reference = ember.jit(f, device=reference_device)(x)
    assert on_reference.devices() == {reference_device}
    assert_close(ember.jit(f)(x), on_reference, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Complex and integer inputs


def test_complex_inputs_follow_jax_conventions():
    from ember.test_util import check_grads

    z = np.complex64(3 + 4j)
    # a real-valued function of a complex input: the conjugate of the Wirtinger gradient, x2
    assert complex(ember.grad(lambda z: enp.abs(z) ** 2)(z)) == 6 - 8j
    assert complex(ember.grad(lambda z: enp.real(z * enp.conj(z)))(z)) == 6 - 8j
    assert complex(ember.grad(lambda z: enp.imag(z) * 2.0)(z)) == -2j
    # holomorphic functions: the complex derivative
    assert complex(ember.grad(lambda z: z**2, holomorphic=True)(z)) == 6 + 8j
    jac = ember.jacfwd(lambda v: v**2, holomorphic=True)(np.array([1 + 1j, 2j], np.complex64))
    np.testing.assert_allclose(np.asarray(jac), np.diag([2 + 2j, 4j]))
    check_grads(lambda v: v * enp.exp(v), (np.array([0.3 + 0.2j, -1j], np.complex64),), order=2)
    with pytest.raises(ember.errors.EmberTypeError, match="holomorphic=True"):
        ember.grad(lambda z: z * 2)(z)


def test_integer_inputs_get_float0_tangents():
    g = ember.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(np.float32(2.0), 3)
    assert float(g[0]) == 3.0
    assert g[1].dtype == ember.dtypes.float0
    no_tangent = np.zeros((), ember.dtypes.float0)
    _, tangent = ember.jvp(lambda x, n: x * n, (np.float32(2.0), 3), (np.float32(1.0), no_tangent))
    assert float(tangent) == 3.0
    with pytest.raises(ember.errors.EmberTypeError, match="allow_int=True"):
        ember.grad(lambda n: n * 2.0)(3)


def test_integer_inputs_flowing_into_control_flow_get_float0_tangents():
    def through_cond(x, n):
        return lax.cond(x > 1, lambda v, m: v * m.astype(np.float32), lambda v, m: v, x, n)

    def through_scan(x, ns):
        return lax.scan(lambda c, m: (c * m.astype(np.float32), m), x, ns)[0]

    g = ember.grad(through_cond, argnums=(0, 1), allow_int=True)(np.float32(1.5), 3)
    assert float(g[0]) == 3.0 and g[1].dtype == ember.dtypes.float0
    g = ember.grad(through_scan, argnums=(0, 1), allow_int=True)(np.float32(1.5), np.arange(1, 4))
    assert float(g[0]) == 6.0 and g[1].shape == (3,) and g[1].dtype == ember.dtypes.float0
    switched = lambda x, n: lax.switch(n, [lambda v: v, lambda v: v * 2, enp.sin], x)
    _, pullback = ember.vjp(switched, np.float32(1.5), 1)
    ct_x, ct_n = pullback(np.float32(1.0))
    assert float(ct_x) == 2.0 and ct_n.dtype == ember.dtypes.float0
