"""custom_jvp and custom_vjp: the user's rules are used, under jit, vmap and nesting."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close


@ember.custom_jvp
def log1pexp(x):
    return enp.log1p(enp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + enp.exp(x)))


def test_custom_jvp_rule_is_used_where_autodiff_would_overflow():
    x = np.float32(100.0)
    assert float(ember.grad(log1pexp)(x)) == 1.0  # naive autodiff gives nan here
    assert float(ember.jit(ember.grad(log1pexp))(x)) == 1.0


def test_custom_jvp_higher_order_and_transforms():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    sigmoid = 1.0 / (1.0 + np.exp(-x))
    assert_close(ember.vmap(ember.grad(log1pexp))(x), sigmoid, rtol=1e-6)
    assert_close(
        ember.vmap(ember.grad(ember.grad(log1pexp)))(x), sigmoid * (1 - sigmoid), rtol=1e-5
    )
    assert_close(ember.grad(lambda v: ember.vmap(log1pexp)(v).sum())(x), sigmoid, rtol=1e-6)
    check_grads(log1pexp, (x,), order=2)


def test_defjvps_and_nondiff_argnums():
    @ember.custom_jvp
    def scale(x, y):
        return x * y

    scale.defjvps(lambda t, ans, x, y: t * y * 3.0, lambda t, ans, x, y: t * x)
    g = ember.grad(scale, argnums=(0, 1))(np.float32(2.0), np.float32(5.0))
    assert [float(v) for v in g] == [15.0, 2.0]

    @ember.custom_jvp
    def power(n, x):
        return x**n

    power = ember.custom_jvp(power.fun, nondiff_argnums=(0,))

    @power.defjvp
    def _power_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return x**n, n * x ** (n - 1) * t

    assert float(ember.grad(lambda x: power(3, x))(np.float32(2.0))) == 12.0


def test_custom_jvp_rule_with_wrong_shapes_is_reported():
    @ember.custom_jvp
    def f(x):
        return x * 2

    f.defjvp(lambda p, t: (f(p[0]), enp.ones(7)))
    with pytest.raises(ember.errors.EmberTypeError, match=r"shape \(7,\)"):
        ember.jvp(f, (np.ones(3, np.float32),), (np.ones(3, np.float32),))


@ember.custom_vjp
def clip_gradient(x, bound):
    return x


def _clip_fwd(x, bound):
    return x, bound


def _clip_bwd(bound, ct):
    return enp.clip(ct, -bound, bound), None


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_rule_is_used():
    f = lambda x: enp.sum(clip_gradient(x, 0.5) * 3.0)
    x = np.ones(3, np.float32)
    assert_close(ember.grad(f)(x), [0.5, 0.5, 0.5])
    assert_close(ember.jit(ember.grad(f))(x), [0.5, 0.5, 0.5])
    assert_close(ember.grad(ember.jit(f))(x), [0.5, 0.5, 0.5])


def test_custom_vjp_with_pytree_residuals_under_vmap():
    @ember.custom_vjp
    def f(x, y):
        return enp.sin(x) * y

    def fwd(x, y):
        return f(x, y), {"cos": enp.cos(x), "both": (enp.sin(x), y)}

    def bwd(res, ct):
        sin_x, y = res["both"]
        return res["cos"] * y * ct, sin_x * ct

    f.defvjp(fwd, bwd)
    xs = np.array([0.1, 0.7, 1.3], np.float32)
    y = np.float32(2.0)
    expected = np.cos(xs) * 2.0
    assert_close(ember.vmap(ember.grad(f), in_axes=(0, None))(xs, y), expected, rtol=1e-6)
    assert_close(ember.grad(lambda v: ember.vmap(f, in_axes=(0, None))(v, y).sum())(xs), expected)
    assert_close(ember.vmap(f, in_axes=(0, None))(xs, y), np.sin(xs) * 2.0)
    # reverse mode through a scan whose body calls the custom_vjp function
    g = ember.grad(lambda x: lax.scan(lambda c, _: (f(c, y), None), x, None, length=2)[0])
    x0 = np.float32(0.4)
    inner = np.sin(x0) * 2.0
    assert_close(g(x0), np.cos(inner) * 2.0 * np.cos(x0) * 2.0, rtol=1e-5)


def test_forward_mode_through_custom_vjp_is_an_error():
    with pytest.raises(TypeError, match="forward-mode"):
        ember.jvp(lambda x: clip_gradient(x, 1.0), (np.float32(1.0),), (np.float32(1.0),))


def test_custom_vjp_bwd_must_return_one_cotangent_per_argument():
    @ember.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct * res[1],))
    with pytest.raises(ember.errors.EmberTypeError, match="tuple of 2 cotangents"):
        ember.grad(f)(np.float32(1.0), np.float32(2.0))


def test_custom_jvp_python_control_flow_on_concrete_values_under_grad():
    # As JAX's: under grad the rule runs at once on the concrete primals (the function is not
    # traced first), and the rule's call of the function runs it eagerly.
    @ember.custom_jvp
    def f(x):
        return enp.sin(x) if x > 0 else enp.cos(x)

    @f.defjvp
    def _f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), (2 * t if x > 0 else 3 * t)

    assert float(ember.grad(f)(1.0)) == 2.0
    assert float(ember.grad(f)(-1.0)) == 3.0
    assert float(f(-1.0)) == pytest.approx(np.cos(-1.0))
    with pytest.raises(ember.errors.TracerBoolConversionError):
        ember.jit(f)(1.0)  # traced: the value is not known, as in JAX


def test_custom_functions_run_python_when_and_as_often_as_jax_does():
    calls = []

    @ember.custom_jvp
    def f(x):
        calls.append("f")
        return enp.sin(x)

    @f.defjvp
    def _f_jvp(primals, tangents):
        calls.append("f_jvp")
        (x,), (t,) = primals, tangents
        return f(x), enp.cos(x) * t

    def run(fn, *args):
        calls.clear()
        fn(*args)
        return list(calls)

    # JAX 0.10.2's calls, from its custom-derivatives tutorial
    assert run(f, 3.0) == run(f, 3.0) == ["f"]  # every eager call runs the function
    assert run(ember.vmap(f), enp.arange(3.0)) == ["f"]
    assert run(ember.jit(f), 3.0) == ["f"]
    assert run(ember.jvp, f, (3.0,), (1.0,)) == ["f_jvp", "f"]
    assert run(ember.grad(f), 3.0) == ["f_jvp", "f"]
    assert run(ember.grad(ember.grad(f)), 3.0) == ["f_jvp", "f_jvp", "f"]

    @ember.custom_vjp
    def g(x):
        calls.append("g")
        return enp.sin(x)

    def g_fwd(x):
        calls.append("g_fwd")
        return g(x), enp.cos(x)

    def g_bwd(cos_x, ct):
        calls.append("g_bwd")
        return (cos_x * ct,)

    g.defvjp(g_fwd, g_bwd)
    assert run(g, 3.0) == ["g"]
    assert run(ember.grad(g), 3.0) == ["g_fwd", "g", "g_bwd"]
    assert run(ember.vjp, g, 3.0) == ["g_fwd", "g"]
    assert float(ember.grad(g)(3.0)) == pytest.approx(np.cos(3.0))


def test_custom_jvp_closing_over_a_differentiated_value_is_an_error():
    def outer(y):
        @ember.custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda primals, tangents: (f(*primals), 100.0 * tangents[0]))
        return f(2.0)  # an argument no trace carries, a closure over y that grad carries

    with pytest.raises(ember.errors.CustomDerivativeError, match="closes over a value"):
        ember.grad(outer)(3.0)
    assert float(ember.jit(outer)(3.0)) == 6.0
