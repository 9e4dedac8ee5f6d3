"""select, choose, piecewise, compress/extract, put/place/put_along_axis, lexsort/partition,
vectorize and friends, and the host helpers of ember.numpy: against NumPy (and JAX's pinned
answers where JAX defines what NumPy leaves open), under jit, grad and vmap."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.test_util import check_grads
from tests.core.util import assert_close

rng = np.random.default_rng(1)
X = rng.normal(size=(3, 4)).astype(np.float32)
Y = rng.normal(size=(3, 4)).astype(np.float32)
GRID = np.arange(12, dtype=np.float32).reshape(3, 4)
LINE = np.array([-2.0, -1.0, -0.0, 0.5, 2.0, np.nan, np.inf], np.float32)
INDEX = np.array([[0, 2, 1, 1], [2, 0, 0, 1], [1, 1, 2, 0]])


def _in_place(fn, a, *args, **kwargs):
    out = np.array(a, copy=True)
    fn(out, *args, **kwargs)
    return out


CASES = {
    "select": (
        lambda: enp.select([X > 0.5, X < -0.5], [X, -Y], 7.0),
        lambda: np.select([X > 0.5, X < -0.5], [X, -Y], 7.0),
    ),
    "select_first_wins": (
        lambda: enp.select([GRID > 2, GRID > 5], [GRID, -GRID]),
        lambda: np.select([GRID > 2, GRID > 5], [GRID, -GRID]),
    ),
    "select_int": (
        lambda: enp.select([INDEX == 0, INDEX == 2], [INDEX * 10, INDEX], -1),
        lambda: np.select([INDEX == 0, INDEX == 2], [INDEX * 10, INDEX], -1),
    ),
    "select_special": (
        lambda: enp.select([LINE < 0], [LINE], np.float32(-1)),
        lambda: np.select([LINE < 0], [LINE], np.float32(-1)),
    ),
    "choose": (lambda: enp.choose(INDEX, [X, Y, 5.0]), lambda: np.choose(INDEX, [X, Y, 5.0])),
    "choose_broadcast": (
        lambda: enp.choose(INDEX[:, :1], [X, Y[0], GRID]),
        lambda: np.choose(INDEX[:, :1], [X, Y[0], GRID]),
    ),
    "compress_axis0": (
        lambda: enp.compress([True, False, True], X, axis=0),
        lambda: np.compress([True, False, True], X, axis=0),
    ),
    "compress_flat": (
        lambda: enp.compress([0, 1, 1, 0, 1], X),
        lambda: np.compress([0, 1, 1, 0, 1], X),
    ),
    "compress_short_condition": (
        lambda: enp.compress([1, 0, 1], GRID, axis=1),
        lambda: np.compress([1, 0, 1], GRID, axis=1),
    ),
    "compress_none": (
        lambda: enp.compress([0, 0], X, axis=0),
        lambda: np.compress([0, 0], X, axis=0),
    ),
    "extract": (lambda: enp.extract(X > 0, X), lambda: np.extract(X > 0, X)),
    "extract_special": (lambda: enp.extract(LINE != 0, LINE), lambda: np.extract(LINE != 0, LINE)),
    "piecewise": (
        lambda: enp.piecewise(LINE, [LINE < 0, LINE > 1], [lambda v: -v, lambda v: v * 10]),
        lambda: np.piecewise(LINE, [LINE < 0, LINE > 1], [lambda v: -v, lambda v: v * 10]),
    ),
    "piecewise_otherwise": (
        lambda: enp.piecewise(X, [X < 0, X > 0.5], [0.0, lambda v: v**2, lambda v: v + 1]),
        lambda: np.piecewise(X, [X < 0, X > 0.5], [0.0, lambda v: v**2, lambda v: v + 1]),
    ),
    "piecewise_single_condition": (
        lambda: enp.piecewise(LINE, LINE > 0, [lambda v: v / 2, 1.0]),
        lambda: np.piecewise(LINE, LINE > 0, [lambda v: v / 2, 1.0]),
    ),
    "piecewise_condition_array": (
        lambda: enp.piecewise(GRID, np.stack([GRID > 8, GRID < 2]), [1.0, 2.0]),
        lambda: np.piecewise(GRID, np.stack([GRID > 8, GRID < 2]), [1.0, 2.0]),
    ),
    "piecewise_extra_args": (
        lambda: enp.piecewise(X, [X > 0], [lambda v, s: v * s], 3.0),
        lambda: np.piecewise(X, [X > 0], [lambda v, s: v * s], 3.0),
    ),
    "piecewise_int_dtype": (
        lambda: enp.piecewise(INDEX, [INDEX > 0], [lambda v: v * 2.7]),
        lambda: np.piecewise(INDEX, [INDEX > 0], [lambda v: v * 2.7]),
    ),
    "put": (
        lambda: enp.put(X, [0, 5, 11], [1.0, 2.0], inplace=False),
        lambda: _in_place(np.put, X, [0, 5, 11], [1.0, 2.0]),
    ),
    "put_negative": (
        lambda: enp.put(GRID, [-1, 3], 9.0, inplace=False),
        lambda: _in_place(np.put, GRID, [-1, 3], 9.0),
    ),
    "put_along_axis": (
        lambda: enp.put_along_axis(X, np.argmax(X, axis=1)[:, None], 0.0, axis=1, inplace=False),
        lambda: _in_place(np.put_along_axis, X, np.argmax(X, axis=1)[:, None], 0.0, axis=1),
    ),
    "put_along_axis_0": (
        lambda: enp.put_along_axis(GRID, INDEX[:2], -GRID[:2], axis=0, inplace=False),
        lambda: _in_place(np.put_along_axis, GRID, INDEX[:2], -GRID[:2], axis=0),
    ),
    "put_along_axis_flat": (
        lambda: enp.put_along_axis(GRID, np.array([1, 10]), 5.0, axis=None, inplace=False),
        lambda: _in_place(np.put_along_axis, GRID, np.array([1, 10]), 5.0, axis=None),
    ),
    "place": (
        lambda: enp.place(GRID, GRID % 3 == 0, [7.0, 8.0], inplace=False),
        lambda: _in_place(np.place, GRID, GRID % 3 == 0, [7.0, 8.0]),
    ),
    "place_truncates": (
        lambda: enp.place(X, X > 0, np.arange(30, dtype=np.float32), inplace=False),
        lambda: _in_place(np.place, X, X > 0, np.arange(30, dtype=np.float32)),
    ),
    "lexsort": (
        lambda: enp.lexsort([INDEX[0], INDEX[1], INDEX[2]]),
        lambda: np.lexsort([INDEX[0], INDEX[1], INDEX[2]]),
    ),
    "lexsort_array_keys": (lambda: enp.lexsort(INDEX), lambda: np.lexsort(INDEX)),
    "lexsort_axis0": (
        lambda: enp.lexsort((X, INDEX > 0), axis=0),
        lambda: np.lexsort((X, INDEX > 0), axis=0),
    ),
    "lexsort_floats_with_nan": (lambda: enp.lexsort([LINE]), lambda: np.lexsort([LINE])),
    "sort_complex": (
        lambda: enp.sort_complex(np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 1j], np.complex64)),
        lambda: np.sort_complex(np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 1j], np.complex64)),
    ),
    "sort_complex_real_input": (
        lambda: enp.sort_complex(X),
        lambda: np.sort_complex(X).astype(np.complex64),
    ),
    "array_equiv": (lambda: enp.array_equiv(GRID, GRID), lambda: np.array_equiv(GRID, GRID)),
    "array_equiv_broadcast": (
        lambda: enp.array_equiv(GRID[:1] * 0, np.zeros(4)),
        lambda: np.array_equiv(GRID[:1] * 0, np.zeros(4)),
    ),
    "array_equiv_unequal": (
        lambda: enp.array_equiv(GRID, GRID + 1),
        lambda: np.array_equiv(GRID, GRID + 1),
    ),
    "array_equiv_mismatch": (
        lambda: enp.array_equiv(GRID, GRID[:2]),
        lambda: np.array_equiv(GRID, GRID[:2]),
    ),
    "fromfunction": (
        lambda: enp.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
        lambda: np.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
    ),
    "fromfunction_int": (
        lambda: enp.fromfunction(lambda i, j, k: i + j * k, (2, 3, 2), dtype=np.int32),
        lambda: np.fromfunction(lambda i, j, k: i + j * k, (2, 3, 2), dtype=np.int32),
    ),
    "frombuffer": (
        lambda: enp.frombuffer(np.arange(5, dtype=np.int16).tobytes(), np.int16, 3, 2),
        lambda: np.frombuffer(np.arange(5, dtype=np.int16).tobytes(), np.int16, 3, 2),
    ),
    "fromstring": (
        lambda: enp.fromstring("1.5, 2, -3", sep=","),
        lambda: np.fromstring("1.5, 2, -3", sep=","),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    ours, theirs = CASES[name]
    got, expected = np.asarray(ours()), np.asarray(theirs())
    assert got.shape == expected.shape
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected)
    else:
        assert_close(got, expected.astype(got.dtype))


def _typed(dtype, shape=(3, 4)):
    values = rng.integers(-4, 5, size=shape)
    if dtype == np.bool_:
        return values > 0
    if np.dtype(dtype).kind == "c":
        return (values + 1j * rng.integers(-2, 3, size=shape)).astype(dtype)
    return values.astype(dtype)


TYPED = {
    "select": lambda m, a, b: m.select([INDEX == 0, INDEX == 1], [a, b], a[0, 0]),
    "choose": lambda m, a, b: m.choose(INDEX, [a, b, a[::-1]]),
    "compress": lambda m, a, b: m.compress([1, 0, 1, 1], a, axis=1),
    "extract": lambda m, a, b: m.extract(INDEX > 0, b),
    "put": lambda m, a, b: _writer(m, "put", a, [0, 5, 11], b[0]),
    "place": lambda m, a, b: _writer(m, "place", a, INDEX == 1, b.ravel()),
    "put_along_axis": lambda m, a, b: _writer(
        m, "put_along_axis", a, INDEX[:, :2], b[:, :2], axis=1
    ),
    "piecewise": lambda m, a, b: m.piecewise(a, [INDEX == 0, INDEX == 2], [b[0, 0], a[1, 1]]),
}


def _writer(m, name, a, *args, **kwargs):
    if m is enp:
        return getattr(enp, name)(a, *args, inplace=False, **kwargs)
    return _in_place(getattr(np, name), a, *args, **kwargs)


@pytest.mark.parametrize(
    "dtype", [np.int32, np.bool_, np.complex64], ids=lambda d: np.dtype(d).name
)
@pytest.mark.parametrize("name", sorted(TYPED))
def test_selection_keeps_other_dtypes(name, dtype):
    a, b = _typed(dtype), _typed(dtype)
    got, expected = np.asarray(TYPED[name](enp, a, b)), TYPED[name](np, a, b)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.bool_, np.float32])
def test_lexsort_of_typed_keys(dtype):
    keys = [_typed(dtype, (6,)), _typed(dtype, (6,)), _typed(np.int32, (6,))]
    np.testing.assert_array_equal(np.asarray(enp.lexsort(keys)), np.lexsort(keys))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_partition_puts_kth_in_place(axis, dtype):
    a = (rng.normal(size=(5, 6)) * 10).astype(dtype)
    for kth in (0, 2, -1):
        parted = np.asarray(enp.partition(a, kth, axis))
        order = np.asarray(enp.argpartition(a, kth, axis))
        np.testing.assert_array_equal(np.take_along_axis(a, order, axis), parted)
        moved, reference = np.moveaxis(parted, axis, -1), np.moveaxis(np.sort(a, axis), axis, -1)
        kth_value = moved[..., kth]
        np.testing.assert_array_equal(kth_value, reference[..., kth])
        k = kth % moved.shape[-1]
        assert (moved[..., :k] <= kth_value[..., None]).all()
        assert (moved[..., k + 1 :] >= kth_value[..., None]).all()


def test_partition_keeps_nan_last():
    parted = np.asarray(enp.partition(LINE, 1))
    assert np.isnan(parted[-1]) and parted[1] == np.partition(LINE, 1)[1]


# --------------------------------------------------------------------------------------------
# Where JAX defines the answer (out-of-range writes, padded static sizes): pinned from JAX.


def test_put_modes_follow_jax():
    ind, v = np.array([0, 13, -1]), np.array([9.0, 8.0], np.float32)
    dropped = enp.put(GRID, ind, v, inplace=False)
    np.testing.assert_array_equal(np.asarray(dropped).ravel()[[0, 11]], [9, 9])
    clipped = enp.put(GRID, ind, v, mode="clip", inplace=False)
    np.testing.assert_array_equal(np.asarray(clipped).ravel()[[0, 11]], [9, 8])
    wrapped = enp.put(GRID, np.array([0, 13, -14]), v, mode="wrap", inplace=False)
    expected = GRID.ravel().copy()
    expected[[0, 1, 10]] = [9, 8, 9]
    np.testing.assert_array_equal(np.asarray(wrapped).ravel(), expected)


def test_put_along_axis_out_of_range_follows_jax():
    idx = np.array([[0, 9], [1, 1], [-1, 2]])
    dropped = np.asarray(enp.put_along_axis(GRID, idx, 99.0, axis=1, inplace=False))
    np.testing.assert_array_equal(dropped[:, 3], [3, 7, 99])
    clipped = np.asarray(enp.put_along_axis(GRID, idx, 99.0, axis=1, inplace=False, mode="clip"))
    np.testing.assert_array_equal(clipped[:, 3], [99, 7, 99])


def test_compress_and_extract_differentiate_with_concrete_conditions():
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    assert_close(ember.grad(lambda v: enp.sum(enp.compress(v > 0, v) ** 2))(x), [1, 0, 4, 0])
    assert_close(ember.grad(lambda v: enp.sum(enp.extract(v < 1, v)))(x), [1, 1, 0, 1])


def test_static_sizes_pad_like_jax():
    compressed = ember.jit(lambda c, a: enp.compress(c, a, axis=1, size=3, fill_value=-1))(
        np.array([0, 1, 1, 0]), GRID
    )
    np.testing.assert_array_equal(np.asarray(compressed), [[1, 2, -1], [5, 6, -1], [9, 10, -1]])
    extracted = ember.jit(lambda a: enp.extract(a > 6, a, size=7))(GRID)
    np.testing.assert_array_equal(np.asarray(extracted), [7, 8, 9, 10, 11, 0, 0])
    truncated = enp.extract(GRID > 6, GRID, size=2)
    np.testing.assert_array_equal(np.asarray(truncated), [7, 8])


def test_choose_wrap_and_clip_follow_jax():
    index = np.array([[0, 4], [-1, 1]])
    choices = [np.zeros((2, 2)), np.ones((2, 2)), 5 * np.ones(2)]
    np.testing.assert_array_equal(
        np.asarray(enp.choose(index, choices, mode="wrap")), [[0, 1], [5, 1]]
    )
    np.testing.assert_array_equal(
        np.asarray(enp.choose(index, choices, mode="clip")), [[0, 5], [0, 1]]
    )


# --------------------------------------------------------------------------------------------
# vectorize and friends


def test_vectorize_elementwise_matches_numpy():
    def clipped_square(a, b):
        return enp.where(a > b, a * a, b)

    got = enp.vectorize(clipped_square)(X, Y[0])
    np.testing.assert_allclose(np.asarray(got), np.where(X > Y[0], X * X, Y[0]), rtol=1e-6)


@pytest.mark.parametrize(
    "signature, fn, np_fn, shapes",
    [
        ("(n),(n)->()", lambda a, b: enp.sum(a * b), lambda a, b: np.sum(a * b), [(2, 3, 4), (4,)]),
        ("(m,n),(n)->(m)", lambda a, b: a @ b, lambda a, b: a @ b, [(5, 2, 3), (1, 3)]),
        (
            "(n)->(n),()",
            lambda a: (a - a.mean(), a.mean()),
            lambda a: (a - a.mean(), a.mean()),
            [(2, 1, 3)],
        ),
        ("(),()->()", lambda a, b: a - b, lambda a, b: a - b, [(3, 1), (1, 4)]),
        ("(n)->()", lambda a: enp.max(a), lambda a: np.max(a), [(1, 3)]),
    ],
)
def test_vectorize_with_signature_matches_numpy(signature, fn, np_fn, shapes):
    args = [rng.normal(size=s).astype(np.float32) for s in shapes]
    got = enp.vectorize(fn, signature=signature)(*args)
    expected = np.vectorize(np_fn, signature=signature)(*args)
    for g, e in zip(
        got if isinstance(got, tuple) else [got],
        expected if isinstance(expected, tuple) else [expected],
    ):
        assert np.shape(g) == np.shape(e)
        assert_close(g, e)


def test_vectorize_excluded_arguments_pass_through():
    def scaled(a, table, *, power):
        return table[0] * a**power

    fn = enp.vectorize(scaled, excluded={1, "power"})
    got = fn(X, [2.0, 0.0], power=2)
    np.testing.assert_allclose(np.asarray(got), 2 * X**2, rtol=1e-6)
    seen = []
    enp.vectorize(lambda a, b: seen.append(np.shape(b)) or a, excluded={1})(X, np.ones(7))
    assert seen == [(7,)]


def test_vectorize_maps_keyword_arguments_like_numpy():
    got = enp.vectorize(lambda a, b=1.0: a + b)(X, b=Y[0])
    np.testing.assert_allclose(np.asarray(got), X + Y[0], rtol=1e-6)
    got = enp.vectorize(lambda a, b: enp.dot(a, b), signature="(n),(n)->()")(X, b=Y)
    assert_close(got, np.sum(X * Y, axis=1))


def test_vectorize_traces_once_with_core_slices():
    shapes = []

    def record(a):
        shapes.append(a.shape)
        return enp.sum(a)

    enp.vectorize(record, signature="(n)->()")(np.ones((4, 5, 3), np.float32))
    assert shapes == [(3,)]


def test_vectorize_accepts_none_arguments():
    fn = enp.vectorize(lambda a, b: a if b is None else a + b)
    np.testing.assert_allclose(np.asarray(fn(X, None)), X)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_apply_along_axis_matches_numpy(axis):
    cube = rng.normal(size=(2, 3, 4)).astype(np.float32)
    for ours, theirs in [
        (lambda v: enp.cumsum(v[::-1]), lambda v: np.cumsum(v[::-1])),
        (lambda v: enp.sum(v * v), lambda v: np.sum(v * v)),
        (lambda v: enp.stack([v.max(), v.min()]), lambda v: np.stack([v.max(), v.min()])),
    ]:
        got = enp.apply_along_axis(ours, axis, cube)
        assert_close(got, np.apply_along_axis(theirs, axis, cube))


def test_apply_along_axis_passes_extra_arguments():
    got = enp.apply_along_axis(lambda v, s, *, p: v * s + p, 0, X, 2.0, p=1.0)
    np.testing.assert_allclose(np.asarray(got), X * 2 + 1, rtol=1e-6)


def test_apply_over_axes_matches_numpy():
    cube = rng.normal(size=(2, 3, 4)).astype(np.float32)
    assert_close(
        enp.apply_over_axes(enp.sum, cube, [0, 2]), np.apply_over_axes(np.sum, cube, [0, 2])
    )
    keep = enp.apply_over_axes(lambda a, ax: enp.cumsum(a, axis=ax), cube, (1,))
    assert_close(keep, np.apply_over_axes(lambda a, ax: np.cumsum(a, axis=ax), cube, (1,)))


# --------------------------------------------------------------------------------------------
# Host helpers


def test_isscalar_and_iterable():
    cases = [
        1,
        2.5,
        np.float32(1),
        "text",
        enp.asarray(3.0),
        np.array(1),
        [1],
        (),
        None,
        X,
        enp.asarray(X),
    ]
    expected = [True, True, True, True, True, True, False, False, False, False, False]
    assert [enp.isscalar(c) for c in cases] == expected
    assert ember.jit(lambda a: enp.asarray(enp.isscalar(a)))(np.float32(1))
    assert enp.iterable([1]) and not enp.iterable(3)


def test_load_round_trips_npy_and_npz():
    buffer = io.BytesIO()
    np.save(buffer, X)
    buffer.seek(0)
    loaded = enp.load(buffer)
    assert isinstance(loaded, ember.Array) and loaded.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(loaded), X)
    archive = io.BytesIO()
    np.savez(archive, x=X)
    archive.seek(0)
    np.testing.assert_array_equal(enp.load(archive)["x"], X)


def test_printing_follows_numpys_print_options():
    a = enp.asarray(np.array([1.123456, 2.0], np.float32))
    assert enp.array_repr(a).startswith("Array([1.123456, 2.      ]")
    with enp.printoptions(precision=2):
        assert enp.get_printoptions()["precision"] == 2
        assert enp.array_str(a) == "[1.12 2.  ]"
    assert enp.get_printoptions()["precision"] == 8


def test_broadcast_shapes():
    assert enp.broadcast_shapes((3, 1), (4,), 1) == (3, 4)
    assert enp.broadcast_shapes() == ()
    assert enp.broadcast_shapes((0, 1), (5,)) == (0, 5)
    with pytest.raises(ValueError, match="incompatible shapes"):
        enp.broadcast_shapes((3,), (4,))


# --------------------------------------------------------------------------------------------
# Transformations

MASK = X > 0


JIT_CASES = {
    "select": (lambda a, b: enp.select([a > 0, b > 0], [a, b], -1.0), (X, Y)),
    "choose": (lambda i, a, b: enp.choose(i, [a, b, 2.0], mode="wrap"), (INDEX + 1, X, Y)),
    "compress": (lambda c, a: enp.compress(c, a, axis=0, size=2), (np.array([1, 0, 1]), X)),
    "extract": (lambda a: enp.extract(a > 0, a, size=5, fill_value=9), (X,)),
    "put": (lambda a, i, v: enp.put(a, i, v, inplace=False), (X, np.array([3, 0, 30]), Y[0, :2])),
    "place": (lambda a, m, v: enp.place(a, m, v, inplace=False), (X, MASK, Y[0])),
    "put_along_axis": (
        lambda a, i: enp.put_along_axis(a, i, -a, axis=1, inplace=False),
        (X, INDEX),
    ),
    "piecewise": (lambda a: enp.piecewise(a, [a < 0, a > 1], [enp.sin, 2.0, enp.exp]), (X,)),
    "lexsort": (lambda a, b: enp.lexsort([a, b]), (X[0] > 0, INDEX[0])),
    "partition": (lambda a: enp.partition(a, 1, axis=0), (X,)),
    "sort_complex": (lambda a: enp.sort_complex(a), (Y,)),
    "vectorize": (enp.vectorize(lambda a, b: enp.dot(a, b), signature="(n),(n)->()"), (X, Y)),
    "apply_along_axis": (lambda a: enp.apply_along_axis(enp.cumsum, 0, a), (X,)),
    "array_equiv": (lambda a, b: enp.array_equiv(a, b), (X, X[:1])),
}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_jit_matches_eager(name):
    fn, args = JIT_CASES[name]
    assert_close(ember.jit(fn)(*args), fn(*args))


GRAD_CASES = {
    "select": (lambda a, b: enp.select([a > 0, b > 0.3], [a * b, b], 0.5), (X, Y)),
    "choose": (lambda a, b: enp.choose(INDEX % 2, [a, b]), (X, Y)),
    "piecewise": (lambda a: enp.piecewise(a, [a < 0], [lambda v: v**2, lambda v: 3 * v]), (X,)),
    "put": (lambda a, v: enp.put(a, np.array([1, 7, -2]), v, inplace=False), (X, Y[0, :3])),
    "place": (lambda a, v: enp.place(a, MASK, v, inplace=False), (X, Y[0])),
    "put_along_axis": (
        lambda a, v: enp.put_along_axis(a, np.array([[1], [0], [3]]), v, axis=1, inplace=False),
        (X, Y[:, :1]),
    ),
    "compress_size": (lambda a: enp.compress(np.array([1, 0, 1]), a, axis=0, size=3), (X,)),
    "extract_size": (lambda a: enp.extract(MASK, a, size=4), (X,)),
    "partition": (lambda a: enp.partition(a, 2), (X,)),
    "vectorize": (
        enp.vectorize(lambda a, b: enp.sum(a * enp.sin(b)), signature="(n),(n)->()"),
        (X, Y),
    ),
    "apply_along_axis": (lambda a: enp.apply_along_axis(lambda v: v * enp.sum(v), 1, a), (X,)),
    "fromfunction_of_scale": (
        lambda s: enp.fromfunction(lambda i, j: s * i + j, (2, 3)),
        (np.float32(1.5),),
    ),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients(name):
    fn, args = GRAD_CASES[name]
    check_grads(fn, args, order=1, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


VMAP_CASES = {
    "select": lambda a: enp.select([a > 0, a < -1], [a, -a], 3.0),
    "choose": lambda a: enp.choose(np.array([0, 1, 1, 0]), [a, a * 2]),
    "piecewise": lambda a: enp.piecewise(a, [a > 0], [lambda v: v * 2, -1.0]),
    "put": lambda a: enp.put(a, np.array([0, 2]), a[1:3], inplace=False),
    "place": lambda a: enp.place(a, a > 0, a[:2], inplace=False),
    "put_along_axis": lambda a: enp.put_along_axis(a, np.array([3, 1]), 0.0, axis=0, inplace=False),
    "compress_size": lambda a: enp.compress(a > 0, a, size=2, fill_value=-9),
    "lexsort": lambda a: enp.lexsort([a, a > 0]).astype(np.float32),
    "partition": lambda a: enp.partition(a, 2),
    "vectorize": lambda a: enp.vectorize(lambda u, w: u * w, signature="(),()->()")(a, a[::-1]),
    "apply_along_axis": lambda a: enp.apply_along_axis(enp.cumsum, 0, a),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_loop(name):
    fn = VMAP_CASES[name]
    batch = rng.normal(size=(3, 4)).astype(np.float32)
    expected = np.stack([np.asarray(fn(row)) for row in batch])
    assert_close(ember.vmap(fn)(batch), expected)


# --------------------------------------------------------------------------------------------
# Errors


ERRORS = [
    (lambda: enp.select([X > 0], [X, Y]), ValueError, "same length"),
    (lambda: enp.select([], []), ValueError, "non-empty"),
    (lambda: enp.select([X], [Y]), TypeError, "boolean"),
    (lambda: enp.choose(INDEX + 1, [X, Y]), ValueError, "invalid entry"),
    (lambda: enp.choose(X, [X, Y]), TypeError, "integer"),
    (lambda: enp.choose(INDEX, [X, Y[:2], X]), ValueError, "broadcast"),
    (lambda: enp.choose(INDEX, [X, Y], mode="bad"), ValueError, "mode"),
    (lambda: enp.compress(np.ones((2, 2)), X), ValueError, "1-D"),
    (lambda: enp.compress([0, 0, 0, 1], X, axis=0), IndexError, "beyond"),
    (lambda: enp.compress([1, 1], X, axis=0, size=5), ValueError, "size"),
    (lambda: enp.compress([1], X, axis=2), np.exceptions.AxisError, "out of bounds"),
    (lambda: enp.piecewise(X, [X > 0], [1.0, 2.0, 3.0]), ValueError, "1 or 2 functions"),
    (lambda: enp.put(X, [0], 1.0), ValueError, "inplace=False"),
    (lambda: enp.put(X, [0], 1.0, mode="bad", inplace=False), ValueError, "mode"),
    (lambda: enp.put(X, [0.5], 1.0, inplace=False), IndexError, "integers"),
    (lambda: enp.place(X, MASK, 1.0), ValueError, "inplace=False"),
    (lambda: enp.place(X, MASK[0], 1.0, inplace=False), ValueError, "same size"),
    (lambda: enp.place(X, MASK, [], inplace=False), ValueError, "empty"),
    (lambda: enp.put_along_axis(X, INDEX, 1.0, axis=1), ValueError, "inplace=False"),
    (lambda: enp.put_along_axis(X, INDEX[0], 1.0, axis=1, inplace=False), ValueError, "dimensions"),
    (lambda: enp.put_along_axis(X, INDEX, X[:2], axis=1, inplace=False), ValueError, "broadcast"),
    (lambda: enp.lexsort([]), TypeError, "len > 0"),
    (lambda: enp.lexsort([X, X[0]]), ValueError, "same shape"),
    (lambda: enp.partition(X, 4), ValueError, "out of bounds"),
    (lambda: enp.argpartition(X, 0, axis=3), np.exceptions.AxisError, "out of bounds"),
    (lambda: enp.vectorize(enp.sum, signature="(n)->")(X), ValueError, "signature"),
    (
        lambda: enp.vectorize(enp.dot, signature="(n),(n)->()")(X, Y[:, :3]),
        ValueError,
        "inconsistent size",
    ),
    (lambda: enp.vectorize(enp.sum, signature="(m,n)->()")(X[0]), ValueError, "enough dimensions"),
    (lambda: enp.vectorize(enp.sum, signature="(n)->()")(X, X), TypeError, "positional arguments"),
    (
        lambda: enp.vectorize(lambda a: (a, a), signature="(n)->()")(X),
        TypeError,
        "number of outputs",
    ),
    (
        lambda: enp.vectorize(lambda a: a[:2], signature="(n)->(n)")(X),
        ValueError,
        "inconsistent size",
    ),
    (lambda: enp.vectorize(enp.add)(X, Y[:2]), ValueError, "broadcast"),
    (lambda: enp.vectorize(enp.sum, excluded={1.5}), TypeError, "excluded"),
    (lambda: enp.apply_along_axis(enp.sum, 2, X), np.exceptions.AxisError, "out of bounds"),
    (lambda: enp.apply_over_axes(lambda a, ax: a[0, 0], X, [0]), ValueError, "correct shape"),
    (lambda: enp.fromiter(iter([1, 2]), float), NotImplementedError, "numpy.fromiter"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_bad_input_raises_numpys_exception(case):
    fn, kind, match = ERRORS[case]
    with pytest.raises(kind, match=match):
        fn()


@pytest.mark.parametrize(
    "fn, args, match",
    [
        (lambda c, a: enp.compress(c, a), (np.array([1, 0, 1]), X), "size="),
        (lambda a: enp.extract(a > 0, a), (X,), "size="),
        (lambda i, a, b: enp.choose(i, [a, b]), (INDEX % 2, X, Y), "mode='raise'"),
        (lambda a, k: enp.partition(a, k), (X, np.int32(1)), "kth"),
    ],
)
def test_value_dependent_arguments_need_concrete_values_under_jit(fn, args, match):
    with pytest.raises(ember.errors.ConcretizationTypeError, match=match):
        ember.jit(fn)(*args)


def test_array_methods_match_the_functions():
    a = enp.asarray(X)
    assert_close(a.diagonal(1), np.diagonal(X, 1))
    assert_close(a.trace(-1, dtype=np.float32), np.trace(X, -1))
    assert_close(a.compress([1, 0, 1], axis=0), X.compress([1, 0, 1], axis=0))
    assert_close(enp.asarray(INDEX).choose([X, Y, GRID]), INDEX.choose([X, Y, GRID]))
    assert_close(a.copy(), X)
    np.testing.assert_array_equal(np.asarray(a.argpartition(0, axis=0)), np.argsort(X, axis=0))
    traced = ember.jit(lambda t: t.compress(t[0] > 0, size=2) + t.trace())(a)
    assert_close(traced, X.ravel()[:4][X[0] > 0][:2] + np.trace(X))
