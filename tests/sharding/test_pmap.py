"""pmap on 8 devices: values, collectives by axis name, in/out axes, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember._src.transforms.pmap import _call_checked


def test_pmap_with_collectives(mesh, rng):
    x = rng.normal(size=(8, 3)).astype(np.float32)
    out = ember.pmap(lambda v: v - lax.pmean(v, "i"), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(out), x - x.mean(0), rtol=1e-5, atol=1e-6)
    assert out.shape == (8, 3) and len(out.addressable_shards) == 8
    idx = ember.pmap(lambda v: v * lax.axis_index("i"), axis_name="i")(np.ones(4, np.int32))
    np.testing.assert_array_equal(np.asarray(idx), np.arange(4))


def test_pmap_in_and_out_axes_and_statics(mesh, rng):
    x = rng.normal(size=(3, 8)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)
    f = ember.pmap(lambda v, w: v * w, in_axes=(1, None), out_axes=1)
    np.testing.assert_allclose(np.asarray(f(x, w)), x * w[:, None], rtol=1e-6)
    g = ember.pmap(lambda v, k: v**k, static_broadcasted_argnums=1)
    np.testing.assert_allclose(np.asarray(g(x.T, 2)), x.T**2, rtol=1e-6)


def test_pmap_gradients(mesh, rng):
    x = rng.normal(size=(8, 3)).astype(np.float32)

    def loss(x):
        per = ember.pmap(lambda v: lax.psum((v**2).sum(), "i"), axis_name="i")(x)
        return per[0]

    np.testing.assert_allclose(np.asarray(ember.grad(loss)(x)), 2 * x, rtol=1e-5)


def test_pmap_errors(mesh):
    with pytest.raises(ValueError, match="only 8 devices"):
        ember.pmap(lambda v: v)(np.zeros((9, 2), np.float32))
    with pytest.raises(ValueError, match="must all be equal"):
        ember.pmap(lambda a, b: a + b)(np.zeros(4, np.float32), enp.zeros(2))


# -- debug_nans / debug_infs ------------------------------------------------------------------


def _log_times_sum(v):
    total = lax.psum(v, "i")
    return enp.log(v) * total  # line checked: the log of device 3's negative slice


def test_debug_nans_names_the_primitive_the_line_and_the_devices(mesh):
    x = np.array([1.0, 2.0, 3.0, -4.0, 5.0, 6.0, 7.0, 8.0], np.float32)
    f = ember.pmap(_log_times_sum, axis_name="i")
    with ember.debug_nans(), pytest.raises(FloatingPointError) as info:
        f(x)
    assert str(info.value).startswith("invalid value (nan) encountered in log (at ")
    assert "in _log_times_sum)" in str(info.value)
    assert info.value.__notes__ == [
        "pmap(_log_times_sum): the outputs of device(s) [3] (by index along the mapped axis) "
        "held it"
    ]
    with ember.debug_nans():  # clean values pass, with their collectives
        out = f(np.abs(x))
    np.testing.assert_allclose(np.asarray(out), np.log(np.abs(x)) * 36.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x))[:3], np.log(x[:3]) * 28.0, rtol=1e-6)  # off


def test_debug_infs_with_statics_unmapped_args_and_donation(mesh):
    x = enp.asarray(np.array([[1.0, 0.0], [2.0, 3.0]], np.float32))
    f = ember.pmap(
        lambda v, d, k: (v * k) / d,
        in_axes=(0, None),
        static_broadcasted_argnums=2,
        donate_argnums=0,
    )
    with ember.debug_infs(), pytest.raises(FloatingPointError) as info:
        f(x, np.float32(0.0), 2)
    assert str(info.value).startswith("invalid value (inf) encountered in div")
    assert "device(s) [0, 1]" in info.value.__notes__[0]
    with ember.debug_infs():
        np.testing.assert_array_equal(np.asarray(f(x, np.float32(2.0), 3)), [[1.5, 0], [3, 4.5]])


def test_debug_nans_names_pmap_when_op_by_op_produces_none(mesh):
    # As from XLA's rewrites: the compiled program's outputs hold a NaN the re-run does not.
    compiled = ember.pmap(lambda v: enp.where(lax.axis_index("i") == 2, np.nan, v), "i")
    with ember.debug_nans(), pytest.raises(FloatingPointError) as info:
        _call_checked(compiled, lambda *args: None, (np.ones(4, np.float32),), 0, "f")
    assert str(info.value).startswith(
        "invalid value (nan) encountered in pmap(f), in the outputs of device(s) [2] (by index "
        "along the mapped axis)"
    )
    assert "run op by op (as vmap) the function produced none" in str(info.value)
