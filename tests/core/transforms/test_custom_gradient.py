"""ember.custom_gradient, linear_transpose, closure_convert, typeof, jacobian, and the
submodules reachable as attributes of ``ember``."""

from __future__ import annotations

import functools
import inspect
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.errors import EmberTypeError

# --------------------------------------------------------------------------------------------
# top-level names


@pytest.mark.slow
def test_submodules_are_attributes_after_plain_import():
    code = (
        "import ember, sys\n"
        "assert 'ember.random' not in sys.modules and 'ember.nn' not in sys.modules\n"
        "assert ember.random.normal and ember.nn.relu and ember.numpy.sin and ember.lax.add\n"
        "assert ember.nn.initializers.zeros and ember.tree_util.tree_map\n"
        "from ember import random\n"
        "assert random is ember.random and 'random' in dir(ember)\n"
        "try:\n"
        "    ember.no_such_name\n"
        "except AttributeError as e:\n"
        "    assert 'no_such_name' in str(e)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _params(fun):
    """Names, kinds and defaults of ``fun``'s parameters (annotations aside)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fun).parameters.values()]


def test_new_names_have_jax_signatures():
    assert ember.jacobian is ember.jacrev
    empty, var = inspect.Parameter.empty, inspect.Parameter.VAR_POSITIONAL
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert _params(ember.linear_transpose) == [
        ("fun", positional, empty),
        ("primals", var, empty),
        ("reduce_axes", inspect.Parameter.KEYWORD_ONLY, ()),
    ]
    assert _params(ember.closure_convert) == [
        ("fun", positional, empty),
        ("example_args", var, empty),
    ]
    assert _params(ember.custom_gradient) == [("fun", positional, empty)]
    assert _params(ember.typeof) == [("x", positional, empty)]


def test_jacobian_is_reverse_mode_jacobian():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    jac = ember.jacobian(lambda x: jnp.tanh(a @ x))(jnp.array([0.1, -0.2]))
    expected = (1 - np.tanh(a @ np.array([0.1, -0.2])) ** 2)[:, None] * a
    np.testing.assert_allclose(jac, expected, rtol=1e-5)


# --------------------------------------------------------------------------------------------
# typeof


def test_typeof():
    aval = ember.typeof(jnp.ones((2, 3)))
    assert aval.shape == (2, 3) and aval.dtype == np.float32 and not aval.weak_type
    assert ember.typeof(1.0).weak_type and ember.typeof(1.0).dtype == np.float32
    assert ember.typeof(3).dtype == np.int32 and ember.typeof(3).weak_type
    assert ember.typeof(True).dtype == np.bool_ and not ember.typeof(True).weak_type
    # NumPy's float64 is canonicalised, as every ember input is.
    assert ember.typeof(np.ones(3)).dtype == np.float32
    seen = []
    ember.jit(lambda x: seen.append(ember.typeof(x)) or x)(jnp.ones((4,), jnp.int32))
    assert seen[0].shape == (4,) and seen[0].dtype == np.int32
    with pytest.raises(TypeError, match="str"):
        ember.typeof("a")


# --------------------------------------------------------------------------------------------
# custom_gradient


@ember.custom_gradient
def _square_with_scaled_grad(x):
    return x**2, lambda g: (g * x,)  # deliberately half the true derivative


@ember.custom_gradient
def _product(x, y):
    return x * y, lambda ct: (ct * y * 10, ct * x * 100)


@ember.custom_gradient
def _sin_single(x):
    return jnp.sin(x), lambda ct: ct * x  # a single cotangent, not a tuple


def test_custom_gradient_value_and_rule():
    assert float(_square_with_scaled_grad(3.0)) == 9.0
    assert float(ember.grad(_square_with_scaled_grad)(3.0)) == 3.0
    assert float(ember.jit(ember.grad(_square_with_scaled_grad))(3.0)) == 3.0
    np.testing.assert_allclose(
        ember.vmap(ember.grad(_square_with_scaled_grad))(jnp.arange(3.0)), [0.0, 1.0, 2.0]
    )
    gx, gy = ember.grad(_product, argnums=(0, 1))(2.0, 3.0)
    assert (float(gx), float(gy)) == (30.0, 200.0)
    assert float(ember.grad(_sin_single)(2.0)) == 2.0


def test_custom_gradient_rule_sees_forward_values_under_jit_and_vmap():
    @ember.custom_gradient
    def log1pexp(x):
        # A stable softplus with its analytic gradient sigmoid(x), computed in the forward pass.
        e = jnp.exp(-jnp.abs(x))
        value = jnp.maximum(x, 0.0) + jnp.log1p(e)
        sig = jnp.where(x >= 0, 1 / (1 + e), e / (1 + e))
        return value, lambda g: (g * sig,)

    xs = jnp.array([-50.0, -1.0, 0.0, 2.0, 100.0])
    sigmoid = 1 / (1 + np.exp(-np.asarray(xs, np.float64)))
    grad = ember.grad(lambda x: jnp.sum(log1pexp(x)))
    np.testing.assert_allclose(grad(xs), sigmoid, rtol=1e-6)
    np.testing.assert_allclose(ember.jit(grad)(xs), sigmoid, rtol=1e-6)
    np.testing.assert_allclose(ember.vmap(ember.grad(log1pexp))(xs), sigmoid, rtol=1e-6)
    np.testing.assert_allclose(ember.jit(ember.vmap(ember.grad(log1pexp)))(xs), sigmoid, rtol=1e-6)


def test_custom_gradient_with_pytrees_and_keywords():
    @ember.custom_gradient
    def weighted(params, x, scale=1.0):
        value = {"out": scale * params["w"] * x}
        return value, lambda ct: ({"w": ct["out"] * x * 2}, ct["out"] * 0.0, 0.0)

    grads = ember.grad(lambda p: weighted(p, 3.0, scale=2.0)["out"])({"w": jnp.array(1.5)})
    assert float(grads["w"]) == 6.0


def test_custom_gradient_under_an_outer_transformation_closing_over_tracers():
    def outer(a):
        @ember.custom_gradient
        def f(x):
            return a * x, lambda g: (g * a * 3,)

        return f(2.0) + a

    # Closing over a value being differentiated is an error (JAX's is a leaked tracer);
    # closure_convert is the way to pass such values explicitly.
    with pytest.raises(EmberTypeError, match="closes over a value that is being differentiated"):
        ember.grad(outer)(5.0)
    # A closed-over value that is staged (jit) but not differentiated is fine.
    assert float(ember.grad(lambda x: ember.jit(outer)(4.0) * x)(1.0)) == 12.0
    assert float(ember.jit(ember.grad(lambda x, a: outer(a) * x))(1.0, 4.0)) == 12.0


def test_custom_gradient_forward_mode_is_an_error():
    with pytest.raises(ember.errors.EmberError, match="custom_vjp"):
        ember.jvp(_square_with_scaled_grad, (1.0,), (1.0,))


def test_custom_gradient_bad_return_is_a_clear_error():
    @ember.custom_gradient
    def bad(x):
        return x

    with pytest.raises(EmberTypeError, match=r"must return a pair \(value, vjp_fn\)"):
        bad(1.0)


# --------------------------------------------------------------------------------------------
# linear_transpose


def test_linear_transpose_of_a_matrix_product_is_the_transposed_matrix():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3) + 1
    f_t = ember.linear_transpose(lambda x: jnp.asarray(a) @ x, jnp.zeros(3))
    (out,) = f_t(jnp.array([1.0, -2.0]))
    np.testing.assert_allclose(out, a.T @ np.array([1.0, -2.0]), rtol=1e-6)
    # Column by column, the transpose rebuilds a.T.
    cols = ember.vmap(lambda e: f_t(e)[0])(jnp.eye(2))
    np.testing.assert_allclose(cols, a, rtol=1e-6)


def test_linear_transpose_pytrees_shape_dtype_structs_and_jit():
    scalar = ember.ShapeDtypeStruct((), np.float32)
    f_t = ember.linear_transpose(lambda x, y: {"s": x + 2 * y, "d": x}, 1.0, scalar)
    cx, cy = f_t({"s": 1.0, "d": 3.0})
    assert (float(cx), float(cy)) == (4.0, 2.0)
    # The docs' example.
    g_t = ember.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y, scalar, scalar)
    assert [float(v) for v in g_t(1.0)] == [0.5, -0.5]
    # cumsum's transpose is the reversed cumsum; the transposed function is a pytree, so it can
    # be passed to jit as an argument.
    c_t = ember.linear_transpose(jnp.cumsum, jnp.ones(3))
    out = ember.jit(lambda f, v: f(v))(c_t, jnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(out[0], [6.0, 5.0, 3.0])


def test_linear_transpose_drops_constants_and_handles_integers_and_zeros():
    (out,) = ember.linear_transpose(lambda x: x + 1.0, 1.0)(2.0)
    assert float(out) == 2.0
    (out,) = ember.linear_transpose(lambda x: jnp.zeros(2), 1.0)(jnp.ones(2))
    assert float(out) == 0.0
    (out,) = ember.linear_transpose(lambda x: 2 * x, jnp.int32(1))(jnp.int32(3))
    assert int(out) == 6 and out.dtype == np.int32


def test_linear_transpose_errors():
    with pytest.raises(EmberTypeError, match="not linear"):
        ember.linear_transpose(lambda x: x * x, 1.0)(1.0)
    with pytest.raises(EmberTypeError, match="not linear.*sin"):
        ember.linear_transpose(jnp.sin, 1.0)
    with pytest.raises(EmberTypeError, match="float or complex"):
        ember.linear_transpose(lambda x: (x.astype(jnp.int32), x), 1.0)
    f_t = ember.linear_transpose(lambda x: x, 1.0)
    with pytest.raises(EmberTypeError, match="cotangent type does not match"):
        f_t(jnp.ones(2))
    with pytest.raises(EmberTypeError, match="cotangent type does not match"):
        f_t(jnp.float16(1.0))
    with pytest.raises(EmberTypeError, match="cotangent tree does not match"):
        f_t((1.0, 2.0))
    with pytest.raises(NotImplementedError, match="reduce_axes"):
        ember.linear_transpose(lambda x: x, 1.0, reduce_axes=("i",))


# --------------------------------------------------------------------------------------------
# closure_convert


@functools.partial(ember.custom_vjp, nondiff_argnums=(0,))
def _apply(f, y, *consts):
    return f(y, *consts)


def _apply_fwd(f, y, *consts):
    return f(y, *consts), (y, consts)


def _apply_bwd(f, res, ct):
    y, consts = res
    _, pullback = ember.vjp(f, y, *consts)
    return pullback(ct)


_apply.defvjp(_apply_fwd, _apply_bwd)


def test_closure_convert_hoists_closed_over_tracers_for_custom_vjp():
    def outer(x):
        def f(y):
            return jnp.sin(x * y)  # closes over x, a tracer under grad

        f_conv, consts = ember.closure_convert(f, 1.0)
        assert len(consts) == 1 and isinstance(consts[0], ember._src.core.Tracer)
        return _apply(f_conv, 2.0, *consts)

    expected = 2 * np.cos(2 * 0.3)  # d/dx sin(2x)
    np.testing.assert_allclose(ember.grad(outer)(0.3), expected, rtol=1e-6)
    np.testing.assert_allclose(ember.jit(ember.grad(outer))(0.3), expected, rtol=1e-6)
    np.testing.assert_allclose(ember.vmap(ember.grad(outer))(jnp.array([0.3, 0.3]))[1], expected,
                               rtol=1e-6)  # fmt: skip


def test_closure_convert_matches_jax_on_its_docs_example():
    def outer(x):
        def f(y):
            return x * y

        f_conv, consts = ember.closure_convert(f, x)
        return f_conv(x, *consts)

    assert float(ember.grad(outer)(3.0)) == 6.0
    assert float(outer(3.0)) == 9.0


def test_closure_convert_keeps_constants_that_cannot_carry_tangents():
    c = jnp.array([1.0, 2.0])
    f_conv, consts = ember.closure_convert(lambda y: y * c, jnp.ones(2))
    assert consts == []
    np.testing.assert_allclose(f_conv(jnp.array([3.0, 4.0])), [3.0, 8.0])

    seen = []

    def outer(x):
        n = jnp.int32(3)
        f_conv, consts = ember.closure_convert(lambda y: (y * x, y * n), x)
        seen.append([ember.typeof(c) for c in consts])
        return f_conv(x, *consts)[0]

    ember.jit(outer)(1.0)  # a staged float is hoisted, the concrete int is not
    assert len(seen[-1]) == 1 and seen[-1][0].dtype == np.float32
    np.testing.assert_allclose(ember.vmap(outer)(jnp.array([1.0, 2.0])), [1.0, 4.0])
    assert seen[-1] == []  # vmap's tracer of a concrete value carries no tangent


def test_closure_convert_checks_the_argument_structure():
    f_conv, _ = ember.closure_convert(lambda t: t[0] + t[1], (1.0, 2.0))
    assert float(f_conv((1.0, 2.0))) == 3.0
    with pytest.raises(EmberTypeError, match="same pytree structure"):
        f_conv([1.0, 2.0])
