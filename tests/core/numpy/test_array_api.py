"""ember.numpy as a Python array API (2024.12) namespace: every name the standard lists, the
standard's own spellings and functions, checked against NumPy (whose 2.x namespace follows the
standard too)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close

# The standard's names (2024.12), namespace by namespace.
STANDARD = {
    "": """abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
        bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos
        cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite
        isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not
        logical_or logical_xor maximum minimum multiply negative nextafter not_equal positive pow
        real reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc
        arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones
        ones_like tril triu zeros zeros_like astype can_cast finfo iinfo isdtype result_type
        broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat
        reshape roll squeeze stack tile unstack argmax argmin count_nonzero nonzero searchsorted
        where unique_all unique_counts unique_inverse unique_values argsort sort cumulative_sum
        cumulative_prod max mean min prod std sum var all any diff take take_along_axis matmul
        matrix_transpose tensordot vecdot bool int8 int16 int32 int64 uint8 uint16 uint32 uint64
        float32 float64 complex64 complex128 e inf nan newaxis pi __array_namespace_info__""",
    "linalg": """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power
        matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace
        vecdot vector_norm""",
    "fft": """fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift
        ifftshift""",
}
ARRAY_ATTRIBUTES = """__abs__ __add__ __and__ __array_namespace__ __bool__ __complex__ __dlpack__
    __dlpack_device__ __eq__ __float__ __floordiv__ __ge__ __getitem__ __gt__ __index__ __int__
    __invert__ __le__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ __or__ __pos__
    __pow__ __rshift__ __setitem__ __sub__ __truediv__ __xor__ to_device dtype device mT ndim
    shape size T""".split()


@pytest.mark.parametrize("namespace", sorted(STANDARD))
def test_every_standard_name_exists(namespace):
    module = getattr(enp, namespace) if namespace else enp
    missing = [name for name in STANDARD[namespace].split() if not hasattr(module, name)]
    assert not missing, f"ember.numpy{'.' + namespace if namespace else ''} lacks {missing}"


def test_array_object_and_namespace():
    x = enp.ones((2, 3))
    assert [a for a in ARRAY_ATTRIBUTES if not hasattr(x, a)] == []
    assert x.__array_namespace__() is enp and enp.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="version"):
        x.__array_namespace__(api_version="1999.01")
    with pytest.raises(TypeError, match=r"immutable.*\.at\[index\]\.set"):
        x[0] = 1.0
    assert x.to_device(x.device).device == x.device
    assert_close(enp.asarray([1, 2, 3], dtype=enp.int8) << 2, np.array([4, 8, 12], np.int8))
    assert_close(1 << enp.arange(3), [1, 2, 4])
    assert_close(enp.arange(-8, 0, 3) >> 1, np.arange(-8, 0, 3) >> 1)


def test_shifts_follow_numpy():
    values = np.array([-7, -1, 0, 3, 100], np.int32)
    shifts = np.array([0, 1, 3, 31, 40], np.int32)
    # NumPy (like C) leaves shifts by the bit width or more undefined; the standard says
    # nothing either. ember gives XLA's answer: 0, or -1 for negative arithmetic shifts.
    legal = shifts < 32
    assert_close(
        np.asarray(enp.bitwise_left_shift(values, shifts))[legal], (values << shifts)[legal]
    )
    assert_close(np.asarray(enp.right_shift(values, shifts))[legal], (values >> shifts)[legal])
    unsigned = values.astype(np.uint32)
    assert_close(enp.bitwise_right_shift(unsigned, 3), unsigned >> 3)
    assert_close(enp.bitwise_left_shift(np.array([True, False]), 1), [2, 0])
    with pytest.raises(TypeError, match="integer"):
        enp.bitwise_left_shift(np.ones(2, np.float32), 1)


def test_standard_spellings_match_numpy():
    x = np.linspace(-0.9, 0.9, 7).astype(np.float32)
    for name in ("acos", "asin", "atan", "asinh", "atanh"):
        assert_close(getattr(enp, name)(x), getattr(np, name)(x), rtol=1e-5, atol=1e-6)
    assert_close(enp.acosh(1.0 + np.abs(x)), np.acosh(1.0 + np.abs(x)), rtol=1e-5)
    assert_close(enp.atan2(x, x[::-1]), np.atan2(x, x[::-1]), rtol=1e-5)
    assert_close(enp.bitwise_invert(np.arange(4, dtype=np.uint8)), ~np.arange(4, dtype=np.uint8))
    towards = np.array([np.inf, -np.inf, 0.0, 1.0, 0.0, -0.0, 0.0], np.float32)
    got = np.asarray(enp.nextafter(x, towards))
    np.testing.assert_array_equal(got, np.nextafter(x, towards))
    with pytest.raises(TypeError, match="complex"):
        enp.nextafter(np.ones(2, np.complex64), 0.0)


def test_isdtype():
    assert enp.isdtype(enp.float32, "real floating")
    assert not enp.isdtype(enp.float32, "integral")
    assert enp.isdtype(enp.uint8, ("signed integer", "unsigned integer"))
    assert enp.isdtype(enp.complex64, "numeric") and not enp.isdtype(enp.bool, "numeric")
    if hasattr(enp, "bfloat16"):  # with ml_dtypes installed
        assert enp.isdtype(enp.bfloat16, "real floating")
    assert enp.isdtype(enp.int16, enp.int16) and not enp.isdtype(enp.int16, enp.int32)
    with pytest.raises(ValueError, match="unknown kind"):
        enp.isdtype(enp.int8, "integer")
    with pytest.raises(TypeError, match="not a data type"):
        enp.isdtype("nope", "bool")


def test_namespace_info():
    info = enp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.capabilities()["data-dependent shapes"] is False
    defaults = info.default_dtypes()
    assert defaults["real floating"] == np.float32 and defaults["indexing"] == np.int32
    assert set(info.dtypes(kind="complex floating")) == {"complex64"}  # x64 is off
    assert "int16" in info.dtypes(kind="integral") and "float32" not in info.dtypes(kind="integral")
    assert info.default_device() in info.devices()


def test_unstack_and_cumulative():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for axis in (0, 1, -1):
        parts = enp.unstack(x, axis=axis)
        expected = [np.take(x, i, axis=axis) for i in range(x.shape[axis])]
        assert len(parts) == len(expected)
        for got, want in zip(parts, expected):
            assert_close(got, want)
    with pytest.raises(ValueError, match="rank 1"):
        enp.unstack(np.float32(1.0))
    small = np.array([1, 2, 3, 4], np.int8)
    total = enp.cumulative_sum(small, include_initial=True)
    assert_close(total, [0, 1, 3, 6, 10])
    assert total.dtype == np.int32  # narrow integers accumulate in the default integer
    assert_close(enp.cumulative_prod(x, axis=1), np.cumprod(x, axis=1))
    assert_close(
        enp.cumulative_prod(x, axis=2, include_initial=True),
        np.cumulative_prod(x, axis=2, include_initial=True),
    )
    with pytest.raises(ValueError, match="axis="):
        enp.cumulative_sum(x)
    # differentiable and batchable like the rest
    grad = ember.grad(lambda v: enp.cumulative_sum(v, include_initial=True).sum())(x[0, 0])
    assert_close(grad, [4.0, 3.0, 2.0, 1.0])
    batched = ember.vmap(lambda v: enp.cumulative_prod(v))(x[0])
    assert_close(batched, np.cumprod(x[0], axis=1))


def test_unique_functions():
    x = np.array([3.0, 1.0, 3.0, np.nan, -0.0, 0.0, 1.0, np.nan], np.float32)
    values, indices, inverse, counts = enp.unique_all(x)
    want = np.unique_all(x)
    for got, expected in zip((values, indices, inverse, counts), want):
        np.testing.assert_array_equal(np.asarray(got), expected)
    assert_close(enp.unique_values(x), np.unique_values(x))
    got = enp.unique_counts(np.array([2, 2, 5], np.int32))
    assert_close(got.values, [2, 5])
    assert_close(got.counts, [2, 1])
    inverse = enp.unique_inverse(np.array([[4, 1], [1, 4]], np.int32)).inverse_indices
    assert_close(inverse, [[1, 0], [0, 1]])
    # under jit the output length must be static
    padded = ember.jit(lambda v: enp.unique_values(v, size=4, fill_value=-1))(
        np.array([5, 5, 7], np.int32)
    )
    assert_close(padded, [5, 7, -1, -1])
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.unique_counts)(np.array([1, 2], np.int32))


def test_creation_device_keyword():
    device = ember.devices()[0]
    for made in (
        enp.zeros(3, device=device),
        enp.ones_like(np.ones(2), device=device),
        enp.arange(4, device=device),
        enp.linspace(0, 1, 5, device=device),
        enp.eye(2, device=device),
        enp.full((2,), 7, device=device),
        enp.asarray([1.0], device=device),
        enp.fft.fftfreq(4, device=device),
        enp.astype(enp.arange(3), enp.float32, device=device),
        enp.from_dlpack(np.arange(3.0)),
    ):
        assert made.device == device
    assert_close(enp.from_dlpack(np.arange(3.0, dtype=np.float32)), [0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="__dlpack__"):
        enp.from_dlpack([1, 2])


def test_default_arguments_follow_the_standard():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert enp.expand_dims(x).shape == (1, 2, 3)
    assert_close(enp.take_along_axis(x, np.array([[2], [0]]), axis=-1), [[2.0], [3.0]])
    assert enp.reshape(x, (3, 2), copy=False).shape == (3, 2)


@pytest.mark.parametrize("k", [2**31, -(2**31) - 5, 2**40])
def test_diagonal_offsets_beyond_int32_select_nothing(k):
    # Offsets past the matrix used to overflow the int32 index arithmetic.
    expected_tri = np.ones((2, 3)) if k > 0 else np.zeros((2, 3))
    assert_close(enp.eye(3, 2, k=k), np.zeros((3, 2)))
    assert enp.eye(0, None, k=k).shape == (0, 0)
    assert_close(enp.tri(2, 3, k=k), expected_tri)
    x = np.arange(6.0).reshape(2, 3)
    assert_close(enp.tril(x, k), x * expected_tri)
    assert_close(enp.triu(x, k), x * (1 - expected_tri))


def test_eye_offsets_and_negative_sizes():
    assert_close(enp.eye(3, 2, k=-1), [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert_close(enp.eye(2, 3, k=2), [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="negative dimensions"):
        enp.eye(-1)


class _LegacyDLPackConsumer:
    """Asks an array for a pre-1.0 (unversioned) DLPack capsule, as old consumers do."""

    def __init__(self, array, **kwargs):
        self.array, self.kwargs = array, kwargs

    def __dlpack__(self, **ignored):
        return self.array.__dlpack__(max_version=(0, 0), **self.kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_export_to_pre_1_0_consumers():
    x = enp.arange(4.0)
    # An unversioned capsule can't flag the buffer read-only: the consumer gets its own copy.
    exported = np.from_dlpack(_LegacyDLPackConsumer(x))
    assert exported.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not np.shares_memory(exported, np.from_dlpack(x, copy=False))
    assert np.from_dlpack(_LegacyDLPackConsumer(x, copy=True)).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(max_version=(0, 0), copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)
    # DLPack 1.0 consumers see the read-only buffer itself, without a copy.
    shared = np.from_dlpack(x, copy=False)
    assert shared.tolist() == [0.0, 1.0, 2.0, 3.0] and not shared.flags.writeable
    # The standard's keywords are named in the signature (dl_device reaches the export).
    assert np.from_dlpack(x, device="cpu", copy=True).tolist() == [0.0, 1.0, 2.0, 3.0]
    parameters = inspect.signature(x.__dlpack__).parameters
    assert list(parameters) == ["stream", "max_version", "dl_device", "copy"]


def test_linalg_tolerance_arrays_hold_one_value_per_matrix():
    # An rtol/tol array broadcasts against the batch axes (one tolerance per matrix), not
    # against the singular values of each matrix; values pinned from JAX.
    a = np.array([[[1.0, 0.0], [0.0, 1e-3]], [[2.0, 0.0], [0.0, 1e-6]]])
    per_matrix = np.array([1e-4, 1e-2])
    assert enp.linalg.matrix_rank(a, rtol=per_matrix).tolist() == [2, 1]
    assert enp.linalg.matrix_rank(a, tol=per_matrix).tolist() == [2, 1]
    assert_close(enp.linalg.pinv(a, rtol=per_matrix), [[[1, 0], [0, 1000]], [[0.5, 0], [0, 0]]])
    stacks = np.zeros((3, 2, 2, 2))
    stacks[:, 0, 0, 0] = 1.0
    stacks[:, 1] = np.eye(2)
    stacks[2, 0] = [[1.0, 0.0], [0.0, 1e-3]]
    assert enp.linalg.matrix_rank(stacks, rtol=np.array([0.01, 1e-5])).tolist() == [
        [1, 2],
        [1, 2],
        [1, 2],
    ]
    assert enp.linalg.matrix_rank(np.zeros((0, 2, 2, 1)), rtol=np.zeros((0, 2))).shape == (0, 2)


def test_eager_integer_indexing_compiles_once_per_shape(capsys):
    # Reading element after element (as array-building strategies do) must not compile a
    # program per index value: the index is an operand of one program.
    values = np.arange(24.0).reshape(4, 6)
    x = enp.asarray(values)
    assert x[0, 0].tolist() == 0.0 and x[0].tolist() == values[0].tolist()  # warm up
    with ember.config.option("log_compiles", True):
        capsys.readouterr()
        picked = [x[i, j].tolist() for i in range(-4, 4) for j in (-1, 0, 5)]
        rows = [x[i].tolist() for i in (1, 3, -2)]
        compiled = capsys.readouterr().out
    assert picked == [values[i, j] for i in range(-4, 4) for j in (-1, 0, 5)]
    assert rows == [values[i].tolist() for i in (1, 3, -2)]
    assert "compiling" not in compiled


def test_zero_dimensional_creation_gives_arrays():
    # Broadcasting a host scalar to shape () used to hand back the NumPy scalar itself.
    for made, value, dtype in [
        (enp.ones(()), 1.0, enp.float32),
        (enp.ones((), dtype=enp.int32), 1, enp.int32),
        (enp.zeros((), dtype=enp.float32), 0.0, enp.float32),
        (enp.full((), 2.5), 2.5, enp.float32),
        (enp.empty((), dtype=enp.bool_), False, enp.bool_),
        (enp.ones_like(np.float32(3.0)), 1.0, enp.float32),
    ]:
        assert isinstance(made, ember.Array)
        assert made.shape == () and made.dtype == dtype and made.tolist() == value
        assert complex(made) == value


def test_vecdot_does_not_broadcast_the_contracted_axis():
    a = np.arange(6.0).reshape(2, 3)
    assert enp.vecdot(a, np.arange(3.0)).tolist() == [5.0, 14.0]
    assert enp.linalg.vecdot(a, a, axis=0).tolist() == [9.0, 17.0, 29.0]
    assert enp.vecdot(a[:, None, :], a).tolist() == [[5.0, 14.0], [14.0, 50.0]]
    mismatched = [(np.zeros(0), np.zeros(1), -1), (a, a[:1], 0), (np.ones(3), np.ones(1), -1)]
    for x1, x2, axis in mismatched:
        with pytest.raises(ValueError, match="axes must match"):
            enp.vecdot(x1, x2, axis=axis)
        with pytest.raises(ValueError, match="axes must match"):
            enp.linalg.vecdot(x1, x2, axis=axis)


def test_take_and_repeat_on_an_empty_axis():
    # A gather can't slice an empty axis: an empty take gives an empty result, a non-empty
    # one is an IndexError (as in JAX).
    for mode in ("fill", "clip", "wrap"):
        taken = enp.take(np.zeros((0, 2)), np.zeros(0, np.int32), axis=0, mode=mode)
        assert taken.shape == (0, 2) and taken.dtype == enp.float32
        with pytest.raises(IndexError, match="empty axis"):
            enp.take(np.zeros((0, 2)), np.array([0, 1]), axis=0, mode=mode)
    assert enp.repeat(np.zeros(0, bool), np.zeros(0, np.int8)).shape == (0,)
    assert enp.repeat(np.arange(3.0), np.array([0, 2, 1])).tolist() == [1.0, 1.0, 2.0]
