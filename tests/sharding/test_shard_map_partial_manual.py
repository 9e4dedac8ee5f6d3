"""Partial-manual shard_map (``axis_names=``) on a 2 x 4 mesh ("x", "y"): only the named axes
are manual, the others stay automatic. Values against NumPy (and JAX 0.10.2's answers on the
same programs, pinned), gradients, vmap, nesting, and the module it lowers to."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.experimental import checkify
from ember.sharding import AxisType, NamedSharding, PartitionSpec as P

RNG = np.random.default_rng(0)
A = RNG.standard_normal((8, 16)).astype(np.float32)
W = RNG.standard_normal((16, 6)).astype(np.float32)
X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


@pytest.fixture(scope="module")
def mesh():
    if ember.device_count() < 8:
        pytest.skip("the default backend was started with fewer than 8 devices")
    return ember.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def smap(f, mesh, in_specs, out_specs, axis_names, **kwargs):
    return ember.shard_map(
        f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, axis_names=axis_names, **kwargs
    )


def _row_parallel_matmul(mesh, **kwargs):
    """Features split over the manual axis "y"; the batch left to the automatic axis "x"."""
    return smap(
        lambda a, w: lax.psum(a @ w, "y"),
        mesh,
        (P(None, "y"), P("y")),
        P(),
        {"y"},
        **kwargs,
    )


def test_psum_over_the_manual_axis_only(mesh):
    f = smap(lambda a: lax.psum(a, "x"), mesh, P("x"), P(), {"x"})
    # JAX 0.10.2 prints this result for the same program.
    want = [[16, 18, 20, 22], [24, 26, 28, 30], [32, 34, 36, 38], [40, 42, 44, 46]]
    for g in (f, ember.jit(f)):
        out = g(X)
        np.testing.assert_array_equal(np.asarray(out), want)
        np.testing.assert_array_equal(np.asarray(out), X[:4] + X[4:])


def test_the_body_sees_blocks_split_along_the_manual_axes_alone(mesh):
    seen = []

    def body(a):
        seen.append((ember.typeof(a), ember.sharding.get_abstract_mesh()))
        return a

    smap(body, mesh, P("x"), P("x"), {"x"})(X)
    aval, inside = seen[0]
    assert str(aval) == "float32[4,4]{V:x}"  # JAX 0.10.2's
    assert inside.axis_types == (AxisType.Manual, AxisType.Auto)
    assert dict(inside.shape_tuple) == {"x": 2, "y": 4}


def test_a_matmul_whose_batch_the_automatic_axis_splits(mesh):
    f = _row_parallel_matmul(mesh)
    laid_out = ember.device_put(A, NamedSharding(mesh, P("x", "y")))
    for g in (f, ember.jit(f)):
        np.testing.assert_allclose(np.asarray(g(laid_out, W)), A @ W, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("check_vma", [True, False])
def test_grad_through_a_partial_manual_shard_map(mesh, check_vma):
    f = _row_parallel_matmul(mesh, check_vma=check_vma)

    def loss(a, w):
        return (f(a, w) ** 2).sum()

    want_a, want_w = 2 * (A @ W) @ W.T, 2 * A.T @ (A @ W)
    for g in (ember.grad(loss, argnums=(0, 1)), ember.jit(ember.grad(loss, argnums=(0, 1)))):
        grad_a, grad_w = g(A, W)
        np.testing.assert_allclose(np.asarray(grad_a), want_a, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(grad_w), want_w, rtol=1e-4, atol=1e-4)


def test_vmap_of_a_partial_manual_shard_map(mesh):
    batch = RNG.standard_normal((3, 8, 16)).astype(np.float32)
    out = ember.vmap(_row_parallel_matmul(mesh), in_axes=(0, None))(batch, W)
    np.testing.assert_allclose(np.asarray(out), batch @ W, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", ["x", "y"])
def test_axis_index_counts_along_the_manual_axis(mesh, axis):
    size = mesh.shape[axis]
    f = smap(lambda a: a + lax.axis_index(axis), mesh, P(axis), P(axis), {axis})
    out = f(np.zeros(2 * size, np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.repeat(np.arange(size), 2))


def test_all_gather_over_the_manual_axis(mesh):
    f = smap(lambda a: lax.all_gather(a, "y", tiled=True), mesh, P("y"), P("y"), {"y"})
    # each of the 4 devices along "y" holds the whole 8, stacked along the out_spec's "y"
    out = f(np.arange(8.0, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.tile(np.arange(8.0), 4))


def test_nested_inner_manual_over_the_outer_automatic_axis(mesh):
    a = np.arange(32.0, dtype=np.float32).reshape(4, 8)

    def outer(block):
        inner = smap(
            lambda b: lax.psum(b, "y") + lax.axis_index("x"), mesh, P(None, "y"), P(), {"y"}
        )
        return inner(block)

    f = smap(outer, mesh, P("x"), P("x"), {"x"})
    halves = [a[:2].reshape(2, 4, 2).sum(1), a[2:].reshape(2, 4, 2).sum(1) + 1]
    for g in (f, ember.jit(f)):
        np.testing.assert_array_equal(np.asarray(g(a)), np.concatenate(halves))


def test_lowers_to_a_manual_computation_over_the_manual_axes_only(mesh):
    text = ember.jit(smap(lambda a: lax.psum(a, "x"), mesh, P("x"), P(), {"x"})).lower(X)
    text = text.as_text()
    # JAX 0.10.2 writes the same shardings, axes and device groups for this program.
    assert '<@mesh, [{"x", ?}, {?}]>' in text  # in_shardings: open to the automatic axis
    assert "out_shardings = #sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>" in text
    assert 'manual_axes = #sdy<manual_axes{"x"}>' in text
    assert "replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]>" in text


def test_full_manual_lowering_keeps_closed_shardings(mesh):
    f = smap(lambda a: lax.psum(a, "x"), mesh, P("x"), P(), ())
    text = ember.jit(f).lower(X).as_text()
    assert 'manual_axes = #sdy<manual_axes{"x", "y"}>' in text
    assert '<@mesh, [{"x"}, {}]>' in text and "?" not in text


@pytest.mark.parametrize("check_vma", [True, False])
def test_grad_of_nested_shard_maps_manual_over_each_axis(mesh, check_vma):
    a = RNG.standard_normal((4, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 3)).astype(np.float32)

    def rows(a_block, w):  # "x" manual here; the inner one makes "y" manual too
        inner = smap(
            lambda b, wb: lax.psum(b @ wb, "y"),
            mesh,
            (P(None, "y"), P("y")),
            P(),
            {"y"},
            check_vma=check_vma,
        )
        return inner(a_block, w)

    f = smap(rows, mesh, (P("x"), P()), P("x"), {"x"}, check_vma=check_vma)

    def loss(a, w):
        return (f(a, w) ** 2).sum()

    np.testing.assert_allclose(np.asarray(f(a, w)), a @ w, rtol=1e-5, atol=1e-5)
    for g in (ember.grad(loss, argnums=(0, 1)), ember.jit(ember.grad(loss, argnums=(0, 1)))):
        grad_a, grad_w = g(a, w)
        np.testing.assert_allclose(np.asarray(grad_a), 2 * (a @ w) @ w.T, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(grad_w), 2 * a.T @ (a @ w), rtol=1e-4, atol=1e-4)


def test_a_nested_body_varies_over_both_shard_maps_axes(mesh):
    seen = []

    def inner_body(b):
        seen.append(str(ember.typeof(b)))
        return b

    def outer(block):
        return smap(inner_body, mesh, P(None, "y"), P(None, "y"), {"y"})(block)

    ember.make_jaxpr(smap(outer, mesh, P("x"), P("x"), {"x"}))(np.zeros((4, 8), np.float32))
    assert seen == ["float32[2,2]{V:(x,y)}"]


@pytest.mark.parametrize("inner_mesh", ["given", "in scope"])
def test_a_nested_shard_map_maps_over_the_axes_not_yet_manual(mesh, inner_mesh):
    seen = []

    def inner_body(b):
        seen.append((str(ember.typeof(b)), ember.sharding.get_abstract_mesh().axis_types))
        return lax.psum(b, "y")

    def outer(block):  # no axis_names: every axis the outer one left automatic
        given = mesh if inner_mesh == "given" else None
        return ember.shard_map(inner_body, mesh=given, in_specs=P(None, "y"), out_specs=P())(block)

    a = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    out = smap(outer, mesh, P("x"), P("x"), {"x"})(a)
    np.testing.assert_array_equal(np.asarray(out), a.reshape(4, 4, 2).sum(1))
    # JAX 0.10.2 prints float32[2,2]{V:(x,y)} and (Manual, Manual) for the same program.
    assert seen[0] == ("float32[2,2]{V:(x,y)}", (AxisType.Manual, AxisType.Manual))


def test_a_nested_shard_map_may_not_remap_an_axis_already_manual(mesh):
    def outer(block):
        return smap(lambda b: b, mesh, P("x"), P("x"), {"x", "y"})(block)

    with pytest.raises(ValueError, match=r"names mesh axes 'x' that the enclosing shard_map"):
        smap(outer, mesh, P("x"), P("x"), {"x"})(X)


def test_ppermute_and_psum_scatter_over_the_manual_axis(mesh):
    x = np.arange(8.0, dtype=np.float32)
    ring = [(i, (i + 1) % 4) for i in range(4)]
    shifted = smap(lambda a: lax.ppermute(a, "y", ring), mesh, P("y"), P("y"), {"y"})(x)
    np.testing.assert_array_equal(np.asarray(shifted), np.roll(x, 2))
    scattered = smap(lambda a: lax.psum_scatter(a, "y", tiled=True), mesh, P(), P("y"), {"y"})
    np.testing.assert_array_equal(np.asarray(scattered(x)), 4 * x)


def test_a_scan_in_the_body_sums_over_the_manual_axis(mesh):
    def body(a):
        def step(carry, _):
            return carry + lax.psum(a, "x"), None

        return lax.scan(step, ember.numpy.zeros_like(a), None, length=3)[0]

    x = np.arange(8.0, dtype=np.float32)
    out = smap(body, mesh, P("x"), P("x"), {"x"})(x)
    np.testing.assert_array_equal(np.asarray(out), np.tile(3 * (x[:4] + x[4:]), 2))


def test_checkify_of_a_partial_manual_shard_map(mesh):
    def body(a):
        checkify.check(ember.numpy.all(a < 6), "too big")
        return a

    f = checkify.checkify(smap(body, mesh, P("x"), P("x"), {"x"}))
    for g in (f, ember.jit(f)):
        err, out = g(np.arange(8.0, dtype=np.float32))
        assert err.get().startswith("too big")
        np.testing.assert_array_equal(np.asarray(out), np.arange(8.0))
