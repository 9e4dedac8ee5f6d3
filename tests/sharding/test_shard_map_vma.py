"""Values typed by the mesh axes they vary over (shard_map's check_vma=True) make ``grad``
inside a shard_map body exact: pvary transposes to psum and psum (of a varying value) to
pvary. Expected values are JAX 0.10.2's on the same programs, and NumPy's formulas."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.sharding import PartitionSpec as P

X = np.arange(8.0, dtype=np.float32)
W = np.float32(3.0)


def smap(f, mesh, in_specs, out_specs, **kwargs):
    return ember.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kwargs)


def test_grad_of_a_psum_inside_the_body_is_the_whole_programs(mesh):
    # The case an untyped transpose got wrong: psum's transpose was psum, counting the
    # cotangent once per device (4 * 28 here).
    per_device = smap(
        lambda x, w: ember.grad(lambda w: lax.psum(x * w, "data").sum())(w)[None],
        mesh,
        (P("data"), P()),
        P("data"),
    )
    whole = ember.grad(lambda w: (X * w).sum())(W)
    np.testing.assert_allclose(np.asarray(per_device(X, W)), [28.0] * 4)  # JAX's
    assert float(whole) == 28.0
    for f in (per_device, ember.jit(per_device)):
        np.testing.assert_allclose(np.asarray(f(X, W)), np.full(4, whole))


def test_grad_inside_the_body_matches_finite_differences(mesh):
    def loss(x, w):
        return lax.psum(enp.sin(x * w), "data").sum()

    grads = smap(
        lambda x, w: ember.grad(loss, argnums=1)(x, w)[None], mesh, (P("data"), P()), P("data")
    )(X, W)
    want = float(np.sum(X * np.cos(X * W)))  # JAX 0.10.2: -2.0982711 on every device
    np.testing.assert_allclose(np.asarray(grads), np.full(4, want), rtol=1e-5)
    eps, w64, x64 = 1e-6, float(W), X.astype(np.float64)
    fd = (np.sin(x64 * (w64 + eps)).sum() - np.sin(x64 * (w64 - eps)).sum()) / (2 * eps)
    np.testing.assert_allclose(want, fd, rtol=1e-5)


def test_the_gradient_of_a_replicated_value_is_summed_over_the_devices(mesh):
    # w is the same everywhere: its gradient is too, the sum of every device's part.
    local = smap(lambda x, w: ember.grad(lambda w: (x * w).sum())(w), mesh, (P("data"), P()), P())
    assert float(local(X, W)) == 28.0  # JAX's
    mean = smap(
        lambda x, w: ember.grad(lambda w: lax.pmean((x * w).sum(), "data"))(w),
        mesh,
        (P("data"), P()),
        P(),
    )
    assert float(mean(X, W)) == 7.0  # JAX's
    # Cast to varying first, each device keeps its own block's gradient.
    own = smap(
        lambda x, w: ember.grad(lambda w: (x * w).sum())(lax.pcast(w, "data", to="varying"))[None],
        mesh,
        (P("data"), P()),
        P("data"),
    )
    np.testing.assert_allclose(np.asarray(own(X, W)), X.reshape(4, 2).sum(1))


def test_grad_over_two_mesh_axes(mesh):
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    grads = smap(
        lambda x, w: ember.grad(lambda w: lax.psum(x * w, ("data", "model")).sum())(w)[None, None],
        mesh,
        (P("data", "model"), P()),
        P("data", "model"),
    )(x, W)
    np.testing.assert_allclose(np.asarray(grads), np.full((4, 2), 120.0))  # JAX's


@pytest.mark.parametrize("check_vma", [True, False])
def test_whole_program_gradients_through_shard_map(mesh, check_vma):
    summed = smap(
        lambda x, w: lax.psum(x * w, "data"), mesh, (P("data"), P()), P(), check_vma=check_vma
    )
    gx, gw = ember.grad(lambda x, w: summed(x, w).sum(), argnums=(0, 1))(X, W)
    np.testing.assert_allclose(np.asarray(gx), np.full(8, W))  # JAX's
    assert float(gw) == 28.0
    scaled = smap(lambda x, w: x * w, mesh, (P("data"), P()), P("data"), check_vma=check_vma)
    gx, gw = ember.grad(lambda x, w: (scaled(x, w) ** 2).sum(), argnums=(0, 1))(X, W)
    np.testing.assert_allclose(np.asarray(gx), 2 * X * W * W)  # JAX's: 0, 18, ..., 126
    assert float(gw) == 840.0


def test_an_invariant_all_gather_transposes_to_each_devices_slice(mesh):
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    gathered = smap(
        lambda b: lax.all_gather(b, "data", tiled=True, to="invarying"), mesh, P("data"), P()
    )
    np.testing.assert_allclose(np.asarray(ember.grad(lambda a: (gathered(a) ** 2).sum())(x)), 2 * x)


def test_a_scan_carry_made_varying_runs(mesh):
    f = smap(
        lambda x: lax.scan(lambda c, v: (c + v, None), lax.pcast(0.0, "data", to="varying"), x)[0][
            None
        ],
        mesh,
        P("data"),
        P("data"),
    )
    np.testing.assert_allclose(np.asarray(f(X)), X.reshape(4, 2).sum(1))  # JAX's: 1 5 9 13
