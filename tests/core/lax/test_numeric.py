"""The rest of jax.lax: dot and convolution conveniences, generic reductions, more elementwise
and special functions, implicitly differentiated solvers (gather/scatter and slicing are in
lax/test_slicing.py).

Answers are checked against NumPy/SciPy (or, where JAX's conventions decide, against values
pinned from JAX 0.10.2 in data/lax_numeric_known_answers.json); gradients with check_grads or
finite differences; vmap against a Python loop; jit against eager.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close, numerical_gradient, skip_without_ml_dtypes


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, str):
        return float(value)
    return value


_DATA = json.loads(
    (pathlib.Path(__file__).parents[1] / "data" / "lax_numeric_known_answers.json").read_text()
)
KNOWN = {k: _decode(v) if not isinstance(v, dict) else v for k, v in _DATA.items()}


def _pinned(entry, key):
    return np.asarray(_decode(entry[key]), np.float32)


# --------------------------------------------------------------------------------------------
# Products and convolutions


def test_dot_and_batch_matmul(rng):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(4, 2)).astype(np.float32)
    v = rng.normal(size=4).astype(np.float32)
    assert_close(lax.dot(a, b), a @ b)
    assert_close(lax.dot(a, v, precision=lax.Precision.HIGHEST), a @ v)
    assert_close(lax.dot(v, v, precision="highest"), v @ v)
    assert_close(lax.dot(a, b, precision=(lax.Precision.HIGH, None)), a @ b)
    numbers = (((0,), (0,)), ((), ()))
    assert_close(lax.dot(a, a, dimension_numbers=numbers), a.T @ a)
    ints = lax.dot(
        np.ones((2, 3), np.int8), np.ones((3,), np.int8), preferred_element_type=np.int32
    )
    assert ints.dtype == np.int32
    with pytest.raises(ValueError, match="dimension_numbers must be specified"):
        lax.dot(np.ones((2, 3, 4)), np.ones((4, 2)))
    batch_a = rng.normal(size=(5, 3, 4)).astype(np.float32)
    batch_b = rng.normal(size=(5, 4, 2)).astype(np.float32)
    assert_close(lax.batch_matmul(batch_a, batch_b), batch_a @ batch_b, rtol=1e-5)
    with pytest.raises(ValueError, match="same ndim"):
        lax.batch_matmul(batch_a, b)
    check_grads(lambda x, y: lax.batch_matmul(x, y), (batch_a, batch_b), order=2)
    assert lax.Precision("bfloat16") is lax.Precision.DEFAULT
    assert str(lax.Precision.HIGHEST) == "HIGHEST"


def _numpy_conv(x, w, strides, pads):
    """NC.../OI... cross-correlation with explicit padding, in float64."""
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0), *pads])
    spatial = w.shape[2:]
    out_sizes = [(n - k) // s + 1 for n, k, s in zip(x.shape[2:], spatial, strides)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sizes))
    flat_w = w.reshape(len(w), -1).astype(np.float64)
    for position in np.ndindex(*out_sizes):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(position, strides, spatial))
        patch = x[(slice(None), slice(None), *window)]
        out[(slice(None), slice(None), *position)] = patch.reshape(len(patch), -1) @ flat_w.T
    return out


def test_conv_and_general_padding(rng):
    x = rng.normal(size=(2, 3, 7, 6)).astype(np.float32)
    w = rng.normal(size=(4, 3, 3, 2)).astype(np.float32)
    pads = lax.padtype_to_pads(x.shape[2:], w.shape[2:], (2, 1), "SAME")
    assert pads == [(1, 1), (0, 1)]
    assert_close(lax.conv(x, w, (2, 1), "SAME"), _numpy_conv(x, w, (2, 1), pads), rtol=1e-4)
    assert_close(
        lax.conv(x, w, (1, 1), "VALID"), _numpy_conv(x, w, (1, 1), [(0, 0)] * 2), rtol=1e-4
    )
    general = lax.conv_with_general_padding(x, w, (1, 2), [(2, 0), (1, 1)], None, None)
    assert_close(general, _numpy_conv(x, w, (1, 2), [(2, 0), (1, 1)]), rtol=1e-4)
    dilated = lax.conv_with_general_padding(x, w, (1, 1), "VALID", (1, 1), (2, 1))
    w_dilated = np.zeros((4, 3, 5, 2), np.float32)
    w_dilated[:, :, ::2] = w
    assert_close(dilated, _numpy_conv(x, w_dilated, (1, 1), [(0, 0)] * 2), rtol=1e-4)
    assert lax.padtype_to_pads((5,), (3,), (2,), "VALID") == [(0, 0)]
    assert lax.padtype_to_pads((5, 6), (3, 3), (2, 2), "SAME") == [(1, 1), (0, 1)]


def test_conv_dimension_numbers():
    dn = lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_dimension_numbers((1, 2, 3), (4, 2, 1), None) == ((0, 1, 2),) * 3
    with pytest.raises(TypeError, match="ndim"):
        lax.conv_dimension_numbers((1, 2, 3), (4, 2), None)
    with pytest.raises(TypeError, match="length 4"):
        lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHC", "HWIO", "NHWC"))


@pytest.mark.parametrize("case", range(len(_DATA["conv_transpose"]["cases"])))
def test_conv_transpose_matches_jax(case):
    data = _DATA["conv_transpose"]
    spec = data["cases"][case]
    rhs = _pinned(data, "rhs_t" if spec["transpose_kernel"] else "rhs")
    padding = (
        spec["padding"] if isinstance(spec["padding"], str) else [tuple(p) for p in spec["padding"]]
    )
    got = lax.conv_transpose(
        _pinned(data, "lhs"),
        rhs,
        tuple(spec["strides"]),
        padding,
        rhs_dilation=spec["rhs_dilation"],
        transpose_kernel=spec["transpose_kernel"],
        use_consistent_padding=spec["consistent"],
    )
    assert_close(got, np.asarray(spec["out"], np.float32), rtol=1e-5, atol=1e-5)


def test_conv_transpose_2d_and_as_gradient(rng):
    data = _DATA["conv_transpose_2d"]
    got = lax.conv_transpose(_pinned(data, "lhs"), _pinned(data, "rhs"), (2, 1), "SAME")
    assert_close(got, _pinned(data, "out"), rtol=1e-5, atol=1e-5)
    # With the kernel transposed, it is the input gradient of the strided convolution.
    x = rng.normal(size=(1, 6, 2)).astype(np.float32)
    w = rng.normal(size=(3, 2, 4)).astype(np.float32)
    dn = ("NHC", "HIO", "NHC")
    forward = lambda x: lax.conv_general_dilated(x, w, (2,), [(1, 1)], dimension_numbers=dn)
    ct = rng.normal(size=forward(x).shape).astype(np.float32)
    (want,) = ember.vjp(forward, x)[1](ct)
    got = lax.conv_transpose(ct, w, (2,), [(1, 2)], dimension_numbers=dn, transpose_kernel=True)
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def _numpy_patches(x, filter_shape, strides):
    n, c, h, w = x.shape
    kh, kw = filter_shape
    oh, ow = (h - kh) // strides[0] + 1, (w - kw) // strides[1] + 1
    out = np.zeros((n, c * kh * kw, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            patch = x[
                :, :, i * strides[0] : i * strides[0] + kh, j * strides[1] : j * strides[1] + kw
            ]
            out[:, :, i, j] = patch.reshape(n, -1)
    return out


def test_conv_general_dilated_patches(rng):
    x = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)
    got = lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")
    assert_close(got, _numpy_patches(x, (2, 3), (1, 1)))
    strided = lax.conv_general_dilated_patches(x, (3, 2), (2, 2), "VALID")
    assert_close(strided, _numpy_patches(x, (3, 2), (2, 2)))
    nhwc = np.moveaxis(x, 1, -1)
    layout = lax.conv_general_dilated_patches(
        nhwc, (2, 3), (1, 1), "VALID", dimension_numbers=("NHWC", "OIHW", "NHWC")
    )
    assert_close(np.moveaxis(np.asarray(layout), -1, 1), _numpy_patches(x, (2, 3), (1, 1)))
    check_grads(
        lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "SAME"), (x,), order=1
    )


def test_conv_general_dilated_local(rng):
    """Each output position has its own kernel over its (channel-major) patch."""
    x = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)
    w = rng.normal(size=(6, 12, 4, 3)).astype(np.float32)
    got = lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2))
    want = np.einsum("npij,opij->noij", _numpy_patches(x, (2, 2), (1, 1)), w)
    assert_close(got, want, rtol=1e-4, atol=1e-5)
    # Channels-last layouts with strides: the same computation, laid out differently.
    w_strided = rng.normal(size=(6, 12, 2, 2)).astype(np.float32)
    want = np.einsum("npij,opij->noij", _numpy_patches(x, (2, 2), (2, 2)), w_strided)
    nhwc = lax.conv_general_dilated_local(
        np.moveaxis(x, 1, -1),
        np.transpose(w_strided, (2, 3, 1, 0)),
        (2, 2),
        "VALID",
        (2, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    assert_close(np.moveaxis(np.asarray(nhwc), -1, 1), want, rtol=1e-4, atol=1e-5)
    check_grads(
        lambda x, w: lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2)),
        (x, w),
        order=1,
    )


# --------------------------------------------------------------------------------------------
# Reductions


@pytest.mark.parametrize(
    "computation,init,numpy_fn",
    [
        (lax.add, 0.0, np.sum),
        (lax.mul, 1.0, np.prod),
        (lax.max, -np.inf, np.max),
        (lax.min, np.inf, np.min),
        (lambda a, b: a + b, 0.0, np.sum),  # not recognised: reduced by halving
        (lambda a, b: lax.max(a, b), -np.inf, np.max),
    ],
)
@pytest.mark.parametrize("dims", [(0,), (1,), (0, 2), (0, 1, 2), ()])
def test_reduce_monoids_and_generic(rng, computation, init, numpy_fn, dims):
    x = rng.normal(size=(3, 5, 2)).astype(np.float32)
    got = lax.reduce(x, np.float32(init), computation, dims)
    assert_close(got, numpy_fn(x, axis=dims) if dims else x, rtol=2e-5)


def test_reduce_non_identity_init_and_empty(rng):
    x = rng.normal(size=(4, 3)).astype(np.float32)
    assert_close(lax.reduce(x, np.float32(5), lax.add, (0,)), x.sum(0) + 5, rtol=1e-5)
    assert_close(lax.reduce(x, np.float32(5), lambda a, b: a + b, (0,)), x.sum(0) + 5, rtol=1e-5)
    empty = np.zeros((0, 3), np.float32)
    assert_close(lax.reduce(empty, np.float32(2), lambda a, b: a * b, (0,)), [2, 2, 2])


def test_reduce_tuples_argmax(rng):
    """A two-operand reduction: the maximum and where it is."""
    x = rng.normal(size=(4, 7)).astype(np.float32)
    idx = np.broadcast_to(np.arange(7, dtype=np.int32), x.shape)

    def pick(a, b):
        take_b = lax.gt(b[0], a[0])
        return lax.select(take_b, b[0], a[0]), lax.select(take_b, b[1], a[1])

    values, where = lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), pick, (1,))
    assert_close(values, x.max(1))
    np.testing.assert_array_equal(np.asarray(where), x.argmax(1))
    with pytest.raises(ValueError, match="same structure"):
        lax.reduce((x, idx), np.float32(0), pick, (1,))


def test_reduce_grad_vmap_jit(rng):
    x = rng.uniform(0.5, 1.5, size=(3, 5)).astype(np.float32)
    product = lambda x: lax.reduce(x, np.float32(1), lambda a, b: a * b, (1,))
    check_grads(product, (x,), order=2)
    looped = np.stack([np.asarray(product(x[i : i + 1]))[0] for i in range(3)])
    assert_close(ember.vmap(lambda r: product(r[None])[0])(x), looped, rtol=1e-5)
    assert_close(ember.jit(product)(x), x.prod(1), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.bool_])
def test_reduce_xor(rng, dtype):
    if dtype == np.bool_:
        x = rng.random((4, 5)) < 0.5
        want = np.logical_xor.reduce(x, axis=1)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(4, 5), dtype=dtype)
        want = np.bitwise_xor.reduce(x, axis=1)
    np.testing.assert_array_equal(np.asarray(lax.reduce_xor(x, (1,))), want)
    with pytest.raises(TypeError, match="integer or boolean"):
        lax.reduce_xor(np.ones(3, np.float32), (0,))


# --------------------------------------------------------------------------------------------
# Elementwise


def test_reciprocal_square_exp2(rng):
    x = rng.uniform(0.2, 3.0, size=(4, 3)).astype(np.float32)
    assert_close(lax.reciprocal(x), 1 / x)
    assert_close(lax.square(x), x * x)
    assert_close(lax.square(np.int32(7)), 49)
    assert_close(lax.exp2(x), np.exp2(x), rtol=2e-6)
    assert_close(lax.exp2(np.array([-np.inf, np.inf, 0.0], np.float32)), [0, np.inf, 1])
    for f in (lax.reciprocal, lax.square, lax.exp2):
        check_grads(f, (x,), order=2)
    with pytest.raises(TypeError, match="floating-point"):
        lax.exp2(np.int32(2))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32])
def test_clz(rng, dtype):
    info = np.iinfo(dtype)
    x = np.concatenate(
        [
            rng.integers(info.min, info.max, 20, dtype=dtype),
            np.array([0, 1, info.max, info.min], dtype),
        ]
    )
    bits = info.bits
    want = [bits - int(v).bit_length() if v >= 0 else 0 for v in x.astype(object)]
    got = lax.clz(x)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want)


def test_round_methods():
    x = np.array(
        [-2.5, -1.5, -0.5, -0.4, -0.0, 0.0, 0.5, 1.5, 2.5, 2.4999998, np.inf, np.nan], np.float32
    )
    away = np.sign(x) * np.floor(np.abs(x.astype(np.float64)) + 0.5)
    np.testing.assert_array_equal(np.asarray(lax.round(x)), away.astype(np.float32))
    np.testing.assert_array_equal(np.signbit(np.asarray(lax.round(x))), np.signbit(x))
    even = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    np.testing.assert_array_equal(np.asarray(even), np.round(x))
    assert_close(ember.grad(lambda v: lax.round(v))(np.float32(1.3)), 0.0)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumlogsumexp(rng, reverse, axis):
    x = rng.normal(size=(5, 4)).astype(np.float32) * 3
    x[1, 2] = -np.inf
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    want = flip(np.logaddexp.accumulate(flip(x.astype(np.float64)), axis=axis))
    assert_close(lax.cumlogsumexp(x, axis=axis, reverse=reverse), want, rtol=1e-5)
    if axis == 0:
        check_grads(lambda v: lax.cumlogsumexp(v, axis, reverse), (x[:, :2] + 0,), order=1)


def test_fft_type_enum_and_names():
    x = np.array([1.0, 2.0, 0.5, -1.0], np.complex64)
    assert_close(lax.fft(x, lax.FftType.FFT, (4,)), np.fft.fft(x), rtol=1e-6)
    assert_close(lax.fft(x, "ifft", (4,)), np.fft.ifft(x), rtol=1e-6)
    assert int(lax.FftType.IRFFT) == 3


def test_optimization_barrier():
    tree = (np.ones(2, np.float32), {"b": np.arange(3)})
    out = lax.optimization_barrier(tree)
    assert_close(out[0], tree[0])
    np.testing.assert_array_equal(np.asarray(out[1]["b"]), tree[1]["b"])
    f = ember.jit(lambda x: lax.optimization_barrier(enp.sin(x)) + enp.sin(x))
    assert_close(f(np.float32(0.5)), 2 * np.sin(0.5))
    assert "optimization_barrier" in str(ember.jit(f).lower(np.float32(0.5)).as_text())
    assert_close(ember.grad(lambda x: lax.optimization_barrier(x * x))(np.float32(3)), 6)
    assert_close(
        ember.vmap(lambda x: lax.optimization_barrier((x, 2 * x))[1])(np.ones(3)), [2, 2, 2]
    )


# --------------------------------------------------------------------------------------------
# Special functions


@pytest.mark.parametrize("name,reference", [("bessel_i0e", sp.i0e), ("bessel_i1e", sp.i1e)])
def test_bessel_against_scipy(rng, name, reference):
    fn = getattr(lax, name)
    x = np.concatenate(
        [rng.normal(size=40) * 8, rng.uniform(-60, 60, 40), [0.0, -0.0, 19.999, 20.001, 25.5]]
    ).astype(np.float32)
    assert_close(fn(x), reference(x.astype(np.float64)), rtol=3e-6, atol=1e-7)
    special = np.array([np.inf, -np.inf, np.nan], np.float32)
    got = np.asarray(fn(special))
    assert got[0] == 0 and got[1] == 0 and np.isnan(got[2])
    check_grads(fn, (np.array([0.3, -2.0, 7.0, 30.0], np.float32),), order=1, rtol=2e-2)
    assert_close(ember.vmap(fn)(x[:5]), fn(x[:5]))


def test_bessel_gradients_at_zero_and_formulas():
    assert_close(ember.grad(lax.bessel_i0e)(np.float32(0)), 0.0)
    assert_close(ember.grad(lax.bessel_i1e)(np.float32(0)), 0.5)
    x = np.array([0.7, -3.0, 12.0], np.float32)
    i0, i1 = sp.i0e(x.astype(np.float64)), sp.i1e(x.astype(np.float64))
    d0 = ember.vmap(ember.grad(lax.bessel_i0e))(x)
    assert_close(d0, i1 - np.sign(x) * i0, rtol=1e-5)
    d1 = ember.vmap(ember.grad(lax.bessel_i1e))(x)
    assert_close(d1, i0 - (np.sign(x) + 1 / x) * i1, rtol=1e-5)


def test_zeta_against_scipy_and_jax(rng):
    x = rng.uniform(1.1, 8.0, 50).astype(np.float32)
    q = rng.uniform(0.05, 20.0, 50).astype(np.float32)
    assert_close(lax.zeta(x, q), sp.zeta(x.astype(np.float64), q.astype(np.float64)), rtol=2e-5)
    data = _DATA["zeta"]
    got = lax.zeta(_pinned(data, "x"), _pinned(data, "q"))
    assert_close(got, _pinned(data, "out"), rtol=2e-5)
    # Differentiable in q: d/dq zeta(x, q) = -x zeta(x + 1, q).
    dq = ember.grad(lax.zeta, argnums=1)(np.float32(2.5), np.float32(1.5))
    assert_close(dq, -2.5 * sp.zeta(3.5, 1.5), rtol=1e-4)
    assert_close(ember.jit(ember.vmap(lax.zeta))(x[:4], q[:4]), lax.zeta(x[:4], q[:4]))


def test_betainc_against_scipy_and_jax(rng):
    a = rng.uniform(0.1, 20.0, 60).astype(np.float32)
    b = rng.uniform(0.1, 20.0, 60).astype(np.float32)
    x = rng.uniform(0.0, 1.0, 60).astype(np.float32)
    want = sp.betainc(a.astype(np.float64), b.astype(np.float64), x.astype(np.float64))
    assert_close(lax.betainc(a, b, x), want, rtol=1e-4, atol=2e-6)
    data = _DATA["betainc"]
    got = lax.betainc(_pinned(data, "a"), _pinned(data, "b"), _pinned(data, "x"))
    assert_close(got, _pinned(data, "out"), rtol=1e-4, atol=1e-6)
    assert_close(lax.betainc(2.0, 3.0, np.float32(0.25)), sp.betainc(2, 3, 0.25), rtol=1e-5)


def test_betainc_gradients():
    a, b, x = np.float32(2.5), np.float32(3.5), np.float32(0.3)
    da, db, dx = ember.grad(lax.betainc, argnums=(0, 1, 2))(a, b, x)
    density = x ** (a - 1) * (1 - x) ** (b - 1) / sp.beta(a, b)
    assert_close(dx, density, rtol=1e-4)
    # In a and b the continued fraction differentiates to the true derivative.
    for argnum, got in ((0, da), (1, db)):
        want = numerical_gradient(lambda *v: sp.betainc(*v), (a, b, x), argnum, eps=1e-5)
        assert_close(got, want, rtol=2e-3, atol=1e-5)
    xs = np.array([0.1, 0.5, 0.9], np.float32)
    assert_close(ember.vmap(lambda v: lax.betainc(a, b, v))(xs), sp.betainc(a, b, xs), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_mulhi(rng, dtype):
    info = np.iinfo(dtype)
    x = np.concatenate([rng.integers(info.min, info.max, 30, dtype=dtype), [info.min, info.max]])
    y = np.concatenate([rng.integers(info.min, info.max, 30, dtype=dtype), [info.max, info.min]])
    x, y = x.astype(dtype), y.astype(dtype)
    got = np.asarray(lax.mulhi(x, y))
    assert got.dtype == np.dtype(dtype)
    want = [(int(a) * int(b)) >> info.bits for a, b in zip(x, y)]
    np.testing.assert_array_equal(got.astype(np.int64), np.array(want, np.int64))


@pytest.mark.parametrize("sizes", [[2, 0, 3], [4, 3, 0], [0, 0, 0], [1, 1, 1]])
def test_ragged_dot(rng, sizes):
    lhs = rng.normal(size=(7, 3)).astype(np.float32)
    rhs = rng.normal(size=(3, 3, 2)).astype(np.float32)
    group_sizes = np.array(sizes, np.int32)
    want = np.zeros((7, 2))
    start = 0
    for g, size in enumerate(sizes):
        want[start : start + size] = lhs[start : start + size] @ rhs[g]
        start += size
    assert_close(lax.ragged_dot(lhs, rhs, group_sizes), want, rtol=1e-5)
    jitted = ember.jit(lax.ragged_dot)(lhs, rhs, group_sizes)
    assert_close(jitted, want, rtol=1e-5)
    if sizes == [2, 0, 3]:
        check_grads(lambda a, b: lax.ragged_dot(a, b, group_sizes), (lhs, rhs), order=2)
        batched = ember.vmap(lambda a: lax.ragged_dot(a, rhs, group_sizes))(
            np.stack([lhs, 2 * lhs])
        )
        assert_close(batched[1], 2 * want, rtol=1e-5)
        ints = lax.ragged_dot(
            np.ones((7, 3), np.int8), np.ones((3, 3, 2), np.int8), group_sizes,
            preferred_element_type=np.int32,
        )  # fmt: skip
        assert ints.dtype == np.int32


def test_approx_max_min_k_are_exact(rng):
    x = rng.normal(size=(4, 9)).astype(np.float32)
    values, indices = lax.approx_max_k(x, 3)
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(np.asarray(indices), order)
    assert_close(values, np.take_along_axis(x, order, 1))
    values, indices = lax.approx_min_k(x, 2, reduction_dimension=0)
    order = np.argsort(x, axis=0, kind="stable")[:2]
    np.testing.assert_array_equal(np.asarray(indices), order)
    assert_close(values, np.take_along_axis(x, order, 0))
    with pytest.raises(ValueError, match="k=10"):
        lax.approx_max_k(x, 10)


def test_shape_tuples(rng):
    # Pinned from JAX, and equal to the shapes the operations produce.
    assert lax.conv_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), "SAME") == (1, 4, 8, 8)
    nhwc = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 4), (2, 2), "SAME", nhwc) == (
        1, 4, 4, 4,
    )  # fmt: skip
    shape = lax.conv_transpose_shape_tuple((1, 8, 8, 3), (3, 3, 3, 4), (2, 2), "SAME", nhwc)
    assert shape == (1, 16, 16, 4)
    x = rng.normal(size=(1, 8, 8, 3)).astype(np.float32)
    w = rng.normal(size=(3, 3, 3, 4)).astype(np.float32)
    assert lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=nhwc).shape == shape
    window = lax.reduce_window_shape_tuple((5, 6), (2, 2), (1, 2), [(0, 0), (1, 1)])
    assert window == (4, 4)
    assert lax.conv_general_permutations(nhwc) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        lax.broadcast_shapes((2,), (3,))


# --------------------------------------------------------------------------------------------
# Implicitly differentiated solvers


def _newton(f, x0):
    def body(i, x):
        fx, slope = ember.jvp(f, (x,), (enp.ones_like(x),))
        return x - fx / slope

    return lax.fori_loop(0, 25, body, x0)


def _root_sqrt(a):
    """sqrt(a) as the root of x**2 - a, by Newton's method."""
    return lax.custom_root(
        lambda x: x * x - a, enp.ones_like(a), _newton, lambda g, y: y / g(enp.ones_like(y))
    )


def test_custom_root_values_and_derivatives():
    a = np.float32(2.0)
    assert_close(_root_sqrt(a), np.sqrt(2.0))
    assert_close(ember.grad(_root_sqrt)(a), 0.5 / np.sqrt(2.0))
    _, tangent = ember.jvp(_root_sqrt, (a,), (np.float32(3.0),))
    assert_close(tangent, 1.5 / np.sqrt(2.0))
    values = np.array([1.0, 4.0, 9.0], np.float32)
    assert_close(ember.vmap(_root_sqrt)(values), np.sqrt(values))
    assert_close(ember.jit(ember.vmap(ember.grad(_root_sqrt)))(values), 0.5 / np.sqrt(values))
    check_grads(_root_sqrt, (np.float32(3.0),), order=1, modes=("rev",))


def test_custom_root_has_aux():
    def solve(f, x0):
        return _newton(f, x0), np.int32(25)

    a = np.float32(5.0)
    root, steps = lax.custom_root(
        lambda x: x * x * x - a, np.float32(1.0), solve, lambda g, y: y / g(1.0), has_aux=True
    )
    assert_close(root, 5.0 ** (1 / 3))
    assert int(steps) == 25
    grad = ember.grad(
        lambda a: lax.custom_root(
            lambda x: x * x * x - a, np.float32(1.0), solve, lambda g, y: y / g(1.0), True
        )[0]
    )(a)
    assert_close(grad, (1 / 3) * 5.0 ** (-2 / 3), rtol=1e-5)


def _dense_solve(matvec, b):
    return enp.linalg.solve(ember.jacfwd(matvec)(b), b)


def _linear(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, _dense_solve)


def test_custom_linear_solve_values_and_derivatives(rng):
    a = (rng.normal(size=(3, 3)) + 3 * np.eye(3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    x = np.linalg.solve(a.astype(np.float64), b)
    assert_close(_linear(a, b), x, rtol=1e-5)
    grad_a, grad_b = ember.grad(lambda a, b: _linear(a, b).sum(), argnums=(0, 1))(a, b)
    adjoint = np.linalg.solve(a.T.astype(np.float64), np.ones(3))
    assert_close(grad_b, adjoint, rtol=1e-5)
    assert_close(grad_a, -np.outer(adjoint, x), rtol=1e-4, atol=1e-6)
    da, db = rng.normal(size=(3, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    _, tangent = ember.jvp(_linear, (a, b), (da, db))
    assert_close(tangent, np.linalg.solve(a.astype(np.float64), db - da @ x), rtol=1e-4, atol=1e-6)
    batch = rng.normal(size=(4, 3)).astype(np.float32)
    want = np.linalg.solve(a.astype(np.float64), batch.T).T
    assert_close(ember.jit(ember.vmap(lambda r: _linear(a, r)))(batch), want, rtol=1e-4)


def test_custom_linear_solve_pytrees_and_aux(rng):
    scale = np.array([2.0, 4.0], np.float32)

    def matvec(v):
        return {"p": v["p"] * scale, "q": 3 * v["q"]}

    def solve(matvec, b):
        return {"p": b["p"] / scale, "q": b["q"] / 3}, np.int32(1)

    b = {"p": np.array([1.0, 1.0], np.float32), "q": np.float32(6.0)}
    x, aux = lax.custom_linear_solve(matvec, b, solve, symmetric=True, has_aux=True)
    assert_close(x["p"], [0.5, 0.25])
    assert_close(x["q"], 2.0)
    assert int(aux) == 1
    grad = ember.grad(
        lambda q: lax.custom_linear_solve(matvec, {"p": b["p"], "q": q}, solve, has_aux=True)[0][
            "q"
        ]
    )(np.float32(6.0))
    assert_close(grad, 1 / 3)


# --------------------------------------------------------------------------------------------
# The namespace

NEW_NAMES = """
gather scatter scatter_add scatter_sub scatter_mul scatter_min scatter_max scatter_apply
GatherDimensionNumbers ScatterDimensionNumbers GatherScatterMode broadcasted_iota
broadcast_to_rank collapse dot batch_matmul conv conv_with_general_padding conv_transpose
conv_dimension_numbers conv_general_dilated_patches padtype_to_pads dynamic_slice_in_dim
dynamic_index_in_dim dynamic_update_slice_in_dim dynamic_update_index_in_dim slice_in_dim
index_in_dim index_take full full_like empty reduce reduce_xor reciprocal square exp2 clz
cumlogsumexp bessel_i0e bessel_i1e zeta betainc optimization_barrier split tile stack unstack
custom_linear_solve custom_root mulhi approx_max_k approx_min_k broadcast_shapes conv_shape_tuple
conv_general_shape_tuple conv_transpose_shape_tuple reduce_window_shape_tuple
conv_general_permutations
Precision RoundingMethod DotDimensionNumbers PrecisionLike ConvGeneralDilatedDimensionNumbers
""".split()


def test_namespace_has_the_new_names():
    missing = [name for name in NEW_NAMES if not hasattr(lax, name)]
    assert not missing
    assert not [name for name in dir(lax) if name.endswith("_p")]


@pytest.mark.parametrize(
    "dtype,preferred,expected,out_dtype",
    [  # JAX 0.10.2's answers: the products are taken in the preferred (wider) type
        (np.int8, np.int32, 20000, np.int32),
        (np.int8, np.float32, 20000.0, np.float32),
        (np.int8, None, 32, np.int8),  # wraps, as int8 does
    ],
)
def test_dot_widens_to_preferred_element_type(dtype, preferred, expected, out_dtype):
    x = ember.numpy.full((2, 2), 100, dtype)
    out = lax.dot(x, x, preferred_element_type=preferred)
    assert out.dtype == out_dtype
    np.testing.assert_array_equal(out, np.full((2, 2), expected, out_dtype))
    np.testing.assert_array_equal(ember.numpy.matmul(x, x, preferred_element_type=preferred), out)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_contractions(dtype):
    skip_without_ml_dtypes(dtype)
    enp = ember.numpy
    a = enp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype)
    expected = np.array([[7.0, 10.0], [15.0, 22.0]], np.float32)
    for out in (enp.matmul(a, a), enp.dot(a, a), enp.einsum("ij,jk->ik", a, a), a @ a):
        assert out.dtype == np.dtype(a.dtype)
        np.testing.assert_array_equal(np.asarray(out, np.float32), expected)
    cov = enp.cov(enp.asarray([[1.0, 2.0, 4.0], [0.0, 1.0, 1.0]], dtype))
    assert cov.dtype == np.dtype(a.dtype)
    np.testing.assert_allclose(
        np.asarray(cov, np.float32), [[2.333, 0.6667], [0.6667, 0.3333]], rtol=2e-2
    )
