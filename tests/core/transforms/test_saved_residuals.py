"""saved_residuals / print_saved_residuals: what vjp keeps for the backward pass, and where
each value comes from, printed as JAX prints it (JAX 0.10.2's lines pinned)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.ad_checkpoint import checkpoint_name, print_saved_residuals, saved_residuals
from ember.tree_util import tree_flatten, tree_unflatten
from tests.core.util import assert_close

HERE = __file__


def g(W, x):
    y = enp.dot(W, x)
    return enp.sin(y)


def f(W1, W2, x):
    return g(W2, g(W1, x))


def _line_of(text):
    """The 1-based line of this file holding ``text`` (locations are printed with it)."""
    with open(HERE) as source:
        return next(i for i, line in enumerate(source, 1) if text in line)


def test_print_saved_residuals_names_arguments_and_the_lines_that_made_each_value(capsys):
    W1, W2, x = np.ones((5, 4), np.float32), np.ones((6, 5), np.float32), np.ones(4, np.float32)
    print_saved_residuals(f, W1, W2, x)
    sin_line = _line_of("return enp.sin(y)")
    # JAX 0.10.2 prints these lines for the same program (its file and line)
    assert capsys.readouterr().out.splitlines() == [
        "f32[5,4] from the argument W1",
        "f32[6,5] from the argument W2",
        "f32[4] from the argument x",
        f"f32[5] output of sin from {HERE}:{sin_line}:11 (g)",
        f"f32[5] output of cos from {HERE}:{sin_line}:11 (g)",
        f"f32[6] output of cos from {HERE}:{sin_line}:11 (g)",
    ]


def test_argument_names_follow_the_signature_and_key_paths():
    def loss(params, batch, *, scale=1.0):
        return enp.sum(enp.sin(params["w"] @ batch[0]) * scale) + enp.sum(params["b"] * params["b"])

    params = {"w": np.ones((2, 3), np.float32), "b": np.ones(2, np.float32)}
    batch = [np.ones(3, np.float32)]
    sources = [s for _, s in saved_residuals(loss, params, batch, scale=np.float32(2.0))]
    assert "from the argument params['b']" in sources
    assert "from the argument params['w']" in sources
    assert "from the argument batch[0]" in sources
    assert "from the argument scale" in sources
    sources = [s for _, s in saved_residuals(lambda *xs: enp.sum(xs[0] * xs[1]), 1.0, 2.0)]
    assert sources == ["from the argument xs[0]", "from the argument xs[1]"]


def test_named_values_jitted_functions_and_constants():
    table = np.arange(4.0, dtype=np.float32)

    def h(x):
        y = checkpoint_name(enp.sin(x), "y")
        z = ember.jit(lambda v: enp.exp(v) * 2.0)(y)
        return enp.sum(z * y * table)

    sources = [s for _, s in saved_residuals(h, np.ones(4, np.float32))]
    assert any(s.startswith("named 'y' from ") for s in sources)
    assert any(s.startswith("output of jitted function '<lambda>' from ") for s in sources)
    assert "from a constant" in sources


def test_a_scan_saves_its_xs_and_invariants_as_they_are():
    def net(Ws, bs, x):
        def layer(h, Wb):
            W, b = Wb
            return enp.maximum(h @ W + b, 0.0), None

        return enp.sum(lax.scan(layer, x, (Ws, bs))[0] ** 2)

    Ws, bs = np.ones((3, 2, 2), np.float32) * 0.5, np.ones((3, 2), np.float32)
    x = np.array([1.0, -2.0], np.float32)
    residuals = saved_residuals(net, Ws, bs, x)
    sources = [s for _, s in residuals]
    # the stacked Ws are the argument itself, not a copy stacked by the forward scan
    assert "from the argument Ws" in sources
    assert not any(a.shape == (3, 2, 2) and s.startswith("output") for a, s in residuals)
    expected = ember.grad(net)(Ws, bs, x)
    assert_close(ember.jit(ember.grad(net))(Ws, bs, x), expected)


def test_the_vjp_function_is_a_pytree_of_its_residuals():
    x = np.linspace(0.0, 1.0, 4).astype(np.float32)
    y, f_vjp = ember.vjp(lambda v: enp.sin(v) * v, x)
    residuals, tree = tree_flatten(f_vjp)
    assert len(residuals) >= 1
    assert any(np.allclose(np.asarray(r), np.cos(x)) for r in residuals)
    ct = np.ones(4, np.float32)
    expected = np.cos(x) * x + np.sin(x)
    assert_close(f_vjp(ct)[0], expected, rtol=1e-6)
    # through jit, as a pytree argument
    assert_close(ember.jit(lambda fn, c: fn(c))(f_vjp, ct)[0], expected, rtol=1e-6)
    rebuilt = tree_unflatten(tree, residuals)
    assert_close(rebuilt(ct)[0], expected, rtol=1e-6)
    jaxpr = ember.make_jaxpr(lambda *args: tree_unflatten(tree, args[:-1])(args[-1]))(
        *residuals, ct
    )
    assert "sin" not in str(jaxpr) and "cos" not in str(jaxpr)  # only the linear part


def test_bad_input_is_refused_clearly():
    with pytest.raises(TypeError, match="argument leaf #0"):
        saved_residuals(lambda s: s, "text")
