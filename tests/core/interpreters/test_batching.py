"""vmap: in_axes/out_axes (pytrees, None, negative), nesting with jit and grad."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src.interpreters.ad_util import add_any_p
from tests.core.util import assert_close


def test_vmap_matches_a_python_loop(rng):
    x = rng.normal(size=(5, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2)).astype(np.float32)
    f = lambda row: enp.tanh(row @ w) * enp.sum(row)
    expected = np.stack([np.tanh(r @ w) * r.sum() for r in x])
    assert_close(ember.vmap(f)(x), expected, rtol=1e-5, atol=1e-6)
    assert_close(ember.jit(ember.vmap(f))(x), expected, rtol=1e-5, atol=1e-6)


def test_in_axes_pytrees_none_and_negative(rng):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    params = {"scale": np.float32(2.0), "shift": rng.normal(size=(4, 3)).astype(np.float32)}
    f = lambda p, x, y: p["scale"] * x + y + p["shift"]
    out = ember.vmap(f, in_axes=({"scale": None, "shift": -1}, 0, None))(params, a, b)
    expected = np.stack([2.0 * a[i] + b + params["shift"][:, i] for i in range(3)])
    assert_close(out, expected, rtol=1e-6)


def test_out_axes_and_unbatched_outputs(rng):
    x = rng.normal(size=(4, 2)).astype(np.float32)
    out = ember.vmap(lambda r: (r * 2, np.float32(1.0)), out_axes=(1, 0))(x)
    assert_close(out[0], (x * 2).T)
    assert_close(out[1], np.ones(4))
    with pytest.raises(ValueError, match="out_axes=None"):
        ember.vmap(lambda r: r, out_axes=None)(x)


def test_nested_vmap_is_an_outer_product(rng):
    a = rng.normal(size=(3,)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    out = ember.vmap(ember.vmap(lambda x, y: x * y, (None, 0)), (0, None))(a, b)
    assert_close(out, np.outer(a, b))


def test_per_example_gradients(rng):
    w = rng.normal(size=(3,)).astype(np.float32)
    xs = rng.normal(size=(6, 3)).astype(np.float32)
    ys = rng.normal(size=(6,)).astype(np.float32)
    loss = lambda w, x, y: (enp.dot(x, w) - y) ** 2
    per_example = ember.jit(ember.vmap(ember.grad(loss), in_axes=(None, 0, 0)))(w, xs, ys)
    expected = np.stack([2 * (x @ w - y) * x for x, y in zip(xs, ys)])
    assert_close(per_example, expected, rtol=1e-5, atol=1e-5)


def test_per_example_gradients_of_scalar_functions():
    # the two cotangents of s (from sin and from the sum) meet as one batched, one unbatched
    xs = np.arange(3.0, dtype=np.float32)
    assert_close(ember.vmap(ember.grad(lambda s: enp.sin(s) + s))(xs), np.cos(xs) + 1)
    assert_close(ember.vmap(ember.grad(lambda s: s * 2.0 + s * s))(xs), 2 + 2 * xs)
    assert_close(ember.jit(ember.vmap(ember.grad(lambda s: enp.exp(s) + s)))(xs), np.exp(xs) + 1)


def test_add_any_batches_a_batched_and_an_unbatched_operand():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = ember.vmap(lambda a: add_any_p.bind(a, np.float32(1.0)))(x[0])
    assert_close(out, x[0] + 1)
    out = ember.vmap(lambda a, b: add_any_p.bind(a, b), in_axes=(1, None))(x, x[:, 0])
    assert_close(out, x.T + x[:, 0])
    out = ember.vmap(lambda a, b: add_any_p.bind(a, b), in_axes=(1, 0))(x, x.T)
    assert_close(out, 2 * x.T)


def test_vmap_of_reductions_indexing_and_argmax(rng):
    x = rng.normal(size=(4, 5, 6)).astype(np.float32)
    assert_close(ember.vmap(lambda m: enp.max(m, axis=1))(x), x.max(axis=2))
    assert_close(ember.vmap(lambda m: m[1:, ::-2])(x), x[:, 1:, ::-2])
    np.testing.assert_array_equal(
        ember.vmap(lambda m: enp.argmax(m, 0), in_axes=2)(x), x.argmax(0).T
    )
    assert_close(
        ember.vmap(lambda m: m.T @ m)(x), np.einsum("bij,bik->bjk", x, x), rtol=1e-4, atol=1e-4
    )


def test_inconsistent_sizes_are_reported():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        ember.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="out of range"):
        ember.vmap(lambda a: a, in_axes=2)(np.ones((3, 4)))
