"""``pad`` in every NumPy mode, ``cross``, column-major ``reshape`` and DLPack exchange,
against NumPy (which JAX 0.10 agrees with on all of these), eagerly, under jit and vmap."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.dlpack
import ember.numpy as enp
from tests.core.util import assert_close, assert_matches_numpy, skip_without_ml_dtypes

A = np.array([[1, 5, 2], [7, 3, 4]], np.int32)
F = np.array([1.0, 5.0, 2.0, 8.0], np.float32)
WIDTHS_2D = [((1, 2), (2, 3)), 2, ((3, 1), (0, 0)), 7]
WIDTHS_1D = [(2, 3), (0, 5), 7, 1]
MODES = [
    ("constant", {}),
    ("edge", {}),
    ("wrap", {}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (10, -3)}),
    ("maximum", {}),
    ("minimum", {"stat_length": 1}),
    ("mean", {}),
    ("mean", {"stat_length": 2}),
    ("median", {}),
    ("median", {"stat_length": (2, 1)}),
    ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {"reflect_type": "even"}),
    ("symmetric", {"reflect_type": "odd"}),
]


@pytest.mark.slow
@pytest.mark.parametrize("mode,kwargs", MODES, ids=lambda v: str(v))
@pytest.mark.parametrize("x", [A, A.astype(np.float32), F], ids=["int", "float2d", "float1d"])
def test_pad_modes_match_numpy(x, mode, kwargs):
    widths = WIDTHS_2D if x.ndim == 2 else WIDTHS_1D
    for width in widths:
        expected = np.pad(x, width, mode, **kwargs)
        got = enp.pad(x, width, mode, **kwargs)
        assert got.dtype == x.dtype
        assert_close(got, expected, atol=1e-5)
    # Compiled: the widest padding (several reflection periods, ramps of many steps).
    jitted = ember.jit(lambda v: enp.pad(v, widths[-2], mode, **kwargs))(x)
    assert_close(jitted, np.pad(x, widths[-2], mode, **kwargs), atol=1e-5)


def test_pad_per_axis_constants_and_empty():
    expected = np.pad(A, ((1, 1), (2, 1)), constant_values=((1, 2), (3, 4)))
    assert_close(enp.pad(A, ((1, 1), (2, 1)), constant_values=((1, 2), (3, 4))), expected)
    # JAX fills 'empty' padding with zeros.
    assert enp.pad(A, ((1, 2), (2, 3)), "empty").tolist() == np.pad(A, ((1, 2), (2, 3))).tolist()


def test_pad_with_a_function_maps_each_slice_like_jax():
    def fill(vector, width, axis, kwargs):
        return (
            vector.at[: width[0]].set(kwargs.get("val", 9)).at[vector.shape[0] - width[1] :].set(-1)
        )

    # JAX 0.10.2's answer.
    expected = [[3, 3, 3, 3, -1], [3, 1, 5, 2, -1], [3, 7, 3, 4, -1], [3, -1, -1, -1, -1]]
    assert enp.pad(A, 1, fill, val=3).tolist() == expected
    assert ember.jit(lambda a: enp.pad(a, 1, fill, val=3))(A).tolist() == expected


def test_pad_gradients_and_vmap():
    # d/dx of sum(pad(x, (2, 3), 'mean')): every pad value is the mean, so each x gets 1 + 5/4.
    assert_close(ember.grad(lambda v: enp.pad(v, (2, 3), "mean").sum())(F), np.full(4, 2.25))
    # linear_ramp from 0: the ramp values 0, x0/2 on the left and x3*2/3, x3/3 on the right.
    assert_close(
        ember.grad(lambda v: enp.pad(v, (2, 3), "linear_ramp").sum())(F), [1.5, 1.0, 1.0, 2.0]
    )
    odd = ember.vmap(lambda r: enp.pad(r, (2, 1), "reflect", reflect_type="odd"))(A)
    assert_close(odd, np.stack([np.pad(r, (2, 1), "reflect", reflect_type="odd") for r in A]))


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [
        ((A, 1, "linear_ramp"), {"foo": 1}, ValueError, "unsupported keyword"),
        ((A, 1, "bogus"), {}, NotImplementedError, "bogus"),
        ((np.zeros((0, 3)), 1, "maximum"), {}, ValueError, "empty axis"),
        ((A, 1, "reflect"), {"reflect_type": "x"}, ValueError, "reflect_type"),
        ((A, 1, "mean"), {"stat_length": 0}, ValueError, "stat_length of 0"),
        ((A, -1), {}, ValueError, "negative"),
    ],
)
def test_pad_bad_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        enp.pad(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# cross


def test_cross_matches_numpy_with_2_and_3_vectors_and_axes():
    two = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    three = np.array([[5.0, 6.0, 7.0], [1.0, 2.0, 3.0]], np.float32)
    for a, b in [(two, two), (two, three), (three, two), (three, three[::-1])]:
        with warnings.catch_warnings():  # NumPy 2 deprecates 2-vectors; JAX keeps them
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = np.cross(a, b)
        assert_close(enp.cross(a, b), expected)
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    y = x[::-1] + 1
    expected = np.cross(x, y, axisa=1, axisb=1, axisc=0)
    assert_close(enp.cross(x, y, axisa=1, axisb=1, axisc=0), expected)
    assert_close(ember.jit(lambda a, b: enp.cross(a, b, axis=1))(x, y), np.cross(x, y, axis=1))
    assert enp.cross(np.arange(3), np.array([1, 5, 2])).dtype == np.int32
    # d/da sum(a x b) = b x (1, 1, 1)
    assert_close(ember.grad(lambda a: enp.cross(a, three[0]).sum())(np.ones(3, np.float32)),
                 np.cross(three[0], np.ones(3)))  # fmt: skip
    with pytest.raises(ValueError, match="must be 2 or 3"):
        enp.cross(np.ones(4), np.ones(3))


# --------------------------------------------------------------------------------------------
# reshape order


def test_reshape_and_ravel_in_fortran_order():
    a = np.arange(24).reshape(2, 3, 4)
    assert_close(enp.reshape(a, (4, 6), order="F"), a.reshape((4, 6), order="F"))
    assert_close(enp.reshape(a, -1, order="F"), a.reshape(-1, order="F"))
    assert_close(enp.ravel(a, "F"), a.ravel("F"))
    assert_close(enp.asarray(a).reshape(6, 4, order="F"), a.reshape(6, 4, order="F"))
    jitted = ember.jit(lambda v: v.reshape((3, 8), order="F"))(a)
    assert_close(jitted, a.reshape((3, 8), order="F"))
    mapped = ember.vmap(lambda r: enp.reshape(r, (4, 3), order="F"))(a)
    assert_close(mapped, np.stack([r.reshape((4, 3), order="F") for r in a]))
    grads = ember.grad(lambda v: (enp.ravel(v, "F") * np.arange(24.0)).sum())(a.astype(float))
    assert_close(grads, np.arange(24.0).reshape(a.shape, order="F"))


def test_reshape_orders_jax_refuses():
    with pytest.raises(NotImplementedError, match="order='A'"):
        enp.reshape(np.ones(4), (2, 2), order="A")
    with pytest.raises(NotImplementedError, match="order='K'"):
        enp.ravel(np.ones(4), order="K")
    with pytest.raises(ValueError, match="'order'"):
        enp.reshape(np.ones(4), (2, 2), order="X")


# --------------------------------------------------------------------------------------------
# DLPack


def test_dlpack_round_trips_with_numpy():
    x = enp.arange(6.0).reshape(2, 3)
    host = np.from_dlpack(x)
    assert_close(host, np.arange(6.0).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    source = np.arange(5, dtype=np.int16)
    for back in (enp.from_dlpack(source), ember.dlpack.from_dlpack(source)):
        assert isinstance(back, ember.Array) and back.dtype == np.int16
        assert back.tolist() == source.tolist()
    assert enp.from_dlpack(x) is x
    assert_close(ember.jit(lambda v: v * 2)(ember.dlpack.from_dlpack(np.ones(3))), np.full(3, 2.0))
    assert_close(np.from_dlpack(enp.from_dlpack(np.from_dlpack(x))), host)


def test_dlpack_supported_dtypes_and_errors():
    assert ember.dlpack.is_supported_dtype(np.float32)
    assert ember.dlpack.is_supported_dtype("bool")

    class OnAGpu:
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be read")

        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    # a GPU producer's memory is taken over by that platform's backend: absent here
    with pytest.raises(BufferError, match="on a cuda device, but ember's cuda platform is not"):
        enp.from_dlpack(OnAGpu())
    with pytest.raises(TypeError, match="no __dlpack__"):
        enp.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="host CPU"):
        enp.ones(3).__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    skip_without_ml_dtypes("float8_e4m3fn")
    assert not ember.dlpack.is_supported_dtype("float8_e4m3fn")


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = enp.from_dlpack(t)
    assert x.tolist() == t.tolist()
    assert torch.from_dlpack(x * 2).tolist() == (t * 2).tolist()


_X34 = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
PAD_CASES = {
    f"pad_{mode}": lambda m, mode=mode: m.pad(_X34, ((1, 2), (3, 1)), mode=mode)
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap")
}


@pytest.mark.parametrize("name", sorted(PAD_CASES))
def test_pad_of_a_random_matrix_matches_numpy(name):
    assert_matches_numpy(PAD_CASES[name])
