"""Splitting, joining, rearranging, diagonals and index tricks of ember.numpy against NumPy,
under jit, grad and vmap, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.test_util import check_grads
from tests.core.util import assert_close

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)
CUBE = rng.normal(size=(2, 3, 4)).astype(np.float32)
SQUARE = rng.normal(size=(4, 4)).astype(np.float32)
SPECIAL = np.array([[np.nan, -0.0, np.inf, 1.5], [-np.inf, 0.0, 2.0, -3.0]], np.float32)
V = np.arange(1, 6, dtype=np.float32)


def _sample(dtype, shape=(3, 4)):
    values = rng.integers(-5, 5, size=shape)
    if dtype == np.bool_:
        return values > 0
    if np.dtype(dtype).kind == "c":
        return (values + 1j * rng.integers(-3, 3, size=shape)).astype(dtype)
    return values.astype(dtype)


DTYPES = [np.float32, np.int32, np.bool_, np.complex64]

# name -> function of the namespace (ember.numpy or numpy) and a sample array.
DATA_MOVEMENT = {
    "split_sections": lambda m, a: m.split(a, 2, axis=1),
    "split_indices": lambda m, a: m.split(a, [1, -1, 10], axis=1),
    "array_split": lambda m, a: m.array_split(a, 3, axis=1),
    "array_split_empty_pieces": lambda m, a: m.array_split(a, 5, axis=0),
    "hsplit": lambda m, a: m.hsplit(a, [3]),
    "vsplit": lambda m, a: m.vsplit(a, 3),
    "dsplit": lambda m, a: m.dsplit(a.reshape(2, 2, 3), [1]),
    "append_flat": lambda m, a: m.append(a, a[0]),
    "append_axis": lambda m, a: m.append(a, a[:1], axis=0),
    "insert_scalar": lambda m, a: m.insert(a, 2, a[:, 0], axis=1),
    "insert_many": lambda m, a: m.insert(a, [0, 2, 2, 4], a[0, 0], axis=1),
    "insert_slice": lambda m, a: m.insert(a, slice(0, 3, 2), a[0], axis=0),
    "insert_flat": lambda m, a: m.insert(a, -1, a[0]),
    "delete_int": lambda m, a: m.delete(a, -1, axis=1),
    "delete_list": lambda m, a: m.delete(a, [0, 2, 2], axis=1),
    "delete_slice": lambda m, a: m.delete(a, slice(None, None, 2)),
    "delete_mask": lambda m, a: m.delete(a, np.array([True, False, True]), axis=0),
    "block": lambda m, a: m.block([[a, a[:, :1]], [a[:1], a[:1, :1]]]),
    "block_1d": lambda m, a: m.block([a[0], a[1]]),
    "column_stack": lambda m, a: m.column_stack([a[0], a[1], a[:2].T]),
    "dstack": lambda m, a: m.dstack([a, a]),
    "atleast_3d": lambda m, a: m.atleast_3d(a[0]),
    "fliplr": lambda m, a: m.fliplr(a),
    "flipud": lambda m, a: m.flipud(a),
    "rot90": lambda m, a: m.rot90(a),
    "rot90_k2": lambda m, a: m.rot90(a, 2),
    "rot90_k3_axes": lambda m, a: m.rot90(a.reshape(2, 3, 2), -1, axes=(2, 0)),
    "rollaxis": lambda m, a: m.rollaxis(a.reshape(2, 3, 2), 2),
    "rollaxis_start": lambda m, a: m.rollaxis(a.reshape(2, 3, 2), 0, 3),
    "resize_grow": lambda m, a: m.resize(a, (5, 3)),
    "resize_shrink": lambda m, a: m.resize(a, 5),
    "diagonal": lambda m, a: m.diagonal(a, 1),
    "diagonal_negative": lambda m, a: m.diagonal(a, -2),
    "diagonal_axes": lambda m, a: m.diagonal(a.reshape(2, 3, 2), 0, 2, 1),
    "diagonal_empty": lambda m, a: m.diagonal(a, 7),
    "diag_of_matrix": lambda m, a: m.diag(a, 1),
    "diag_of_vector": lambda m, a: m.diag(a[0], -1),
    "diagflat": lambda m, a: m.diagflat(a[:2, :2], 1),
    "copy": lambda m, a: m.copy(a),
}


@pytest.mark.parametrize("name", sorted(DATA_MOVEMENT))
def test_data_movement_matches_numpy(name):
    a = _sample(np.float32)
    _assert_same(DATA_MOVEMENT[name](enp, a), DATA_MOVEMENT[name](np, a))


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "name",
    [
        "split_indices",
        "insert_many",
        "delete_list",
        "block",
        "rot90_k3_axes",
        "diagonal",
        "diag_of_vector",
        "resize_grow",
    ],
)
def test_data_movement_keeps_other_dtypes(name, dtype):
    a = _sample(dtype)
    _assert_same(DATA_MOVEMENT[name](enp, a), DATA_MOVEMENT[name](np, a))


@pytest.mark.parametrize(
    "name",
    ["split_indices", "insert_many", "delete_list", "rot90", "diagonal", "block", "resize_grow"],
)
def test_special_values_move_bitwise(name):
    got, expected = DATA_MOVEMENT[name](enp, SPECIAL), DATA_MOVEMENT[name](np, SPECIAL)
    _assert_same(got, expected)
    for g, e in zip(_leaves(got), _leaves(expected)):
        assert np.array_equal(np.signbit(np.asarray(g)), np.signbit(e))


def _leaves(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _assert_same(got, expected):
    got, expected = _leaves(got), _leaves(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = np.asarray(g)
        assert g.shape == np.shape(e), (g.shape, np.shape(e))
        if np.asarray(e).dtype.kind in "iub" and g.dtype.kind in "iub":
            assert g.dtype.kind == np.asarray(e).dtype.kind
        np.testing.assert_array_equal(g, e)


NUMERIC = {
    "trace": lambda m: m.trace(CUBE, 1, 1, 2),
    "trace_dtype": lambda m: m.trace(np.arange(9).reshape(3, 3), dtype=np.float32),
    "trace_2d": lambda m: m.trace(X, -1),
    "tri": lambda m: m.tri(3, 5, 1),
    "tri_dtype": lambda m: m.tri(4, k=-1, dtype=np.int32),
    "vander": lambda m: m.vander(V),
    "vander_increasing": lambda m: m.vander(V, 3, increasing=True),
    "vander_int": lambda m: m.vander(np.array([2, 3, -1]), 4),
    "trim_zeros": lambda m: m.trim_zeros(np.array([0, 0, 1, 0, 2, 0])),
    "trim_zeros_front": lambda m: m.trim_zeros(np.array([0, 0, 1, 0, 2, 0]), "f"),
    "trim_zeros_back": lambda m: m.trim_zeros(np.array([0.0, 0.0, 1.0, 0.0]), "b"),
    "trim_zeros_all_zero": lambda m: m.trim_zeros(np.zeros(4)),
    "trim_zeros_2d": lambda m: m.trim_zeros(np.pad(np.eye(2), 1), axis=None),
    "trim_zeros_axis": lambda m: m.trim_zeros(np.pad(np.eye(2), 1), axis=1),
    "resize_empty": lambda m: m.resize(np.zeros(0, np.float32), (2, 2)),
    "split_empty": lambda m: m.split(np.zeros((0, 3), np.float32), 3, axis=1),
}


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_numeric_matches_numpy(name):
    got, expected = NUMERIC[name](enp), NUMERIC[name](np)
    for g, e in zip(_leaves(got), _leaves(expected)):
        assert np.shape(g) == np.shape(e)
        assert_close(g, e)


def test_atleast_3d_of_several_arrays():
    got = enp.atleast_3d(1.0, V, X, CUBE)
    assert [np.shape(g) for g in got] == [np.shape(e) for e in np.atleast_3d(1.0, V, X, CUBE)]
    assert enp.atleast_3d() == []


def test_fill_diagonal():
    for shape, val, wrap in [
        ((4, 4), 7.0, False),
        ((5, 3), [1.0, 2.0], True),
        ((3, 5), 9.0, False),
        ((3, 3, 3), [1.0, 2.0, 3.0], False),
        ((6, 2), -1.0, False),
    ]:
        expected = np.zeros(shape, np.float32)
        np.fill_diagonal(expected, val, wrap)
        got = enp.fill_diagonal(np.zeros(shape, np.float32), val, wrap, inplace=False)
        np.testing.assert_array_equal(np.asarray(got), expected)
    jitted = ember.jit(lambda a, v: enp.fill_diagonal(a, v, inplace=False))(SQUARE, np.float32(3))
    np.testing.assert_array_equal(np.diag(np.asarray(jitted)), [3, 3, 3, 3])


# --------------------------------------------------------------------------------------------
# Index helpers


INDEX_HELPERS = {
    "diag_indices": lambda m: m.diag_indices(3, 3),
    "diag_indices_from": lambda m: m.diag_indices_from(SQUARE),
    "tril_indices": lambda m: m.tril_indices(4, 1, 5),
    "triu_indices": lambda m: m.triu_indices(3, -1),
    "tril_indices_from": lambda m: m.tril_indices_from(X, -1),
    "triu_indices_from": lambda m: m.triu_indices_from(X, 2),
    "mask_indices": lambda m: m.mask_indices(4, m.triu, 1),
    "indices": lambda m: m.indices((2, 3)),
    "indices_sparse": lambda m: m.indices((2, 3, 1), sparse=True),
    "ix_": lambda m: m.ix_([0, 2], np.array([1, 3, 0])),
    "ix_bool": lambda m: m.ix_(np.array([True, False, True]), [1]),
    "unravel_index": lambda m: m.unravel_index(np.array([0, 5, 11, 7]), (3, 4)),
    "unravel_index_scalar": lambda m: m.unravel_index(17, (2, 3, 4)),
    "ravel_multi_index": lambda m: m.ravel_multi_index(
        (np.array([0, 2]), np.array([3, 1])), (3, 4)
    ),
    "ravel_multi_index_f": lambda m: m.ravel_multi_index(
        (np.array([0, 2]), np.array([3, 1])), (3, 4), order="F"
    ),
    "ravel_multi_index_wrap": lambda m: m.ravel_multi_index(
        (np.array([-1, 5]), np.array([3, 9])), (3, 4), mode="wrap"
    ),
    "ravel_multi_index_clip": lambda m: m.ravel_multi_index(
        (np.array([-1, 5]), np.array([3, 9])), (3, 4), mode="clip"
    ),
}


@pytest.mark.parametrize("name", sorted(INDEX_HELPERS))
def test_index_helpers_match_numpy(name):
    got, expected = INDEX_HELPERS[name](enp), INDEX_HELPERS[name](np)
    _assert_same(got, expected)


def test_indexing_with_helpers_picks_what_numpy_picks():
    rows, cols = enp.triu_indices_from(SQUARE, 1)
    np.testing.assert_array_equal(
        np.asarray(enp.asarray(SQUARE)[rows, cols]), SQUARE[np.triu_indices_from(SQUARE, 1)]
    )
    picked = enp.asarray(X)[enp.ix_(np.array([2, 0]), np.array([1, 3]))]
    np.testing.assert_array_equal(np.asarray(picked), X[np.ix_([2, 0], [1, 3])])


GRIDS = {
    "mgrid": lambda m: m.mgrid[0:3, 1:4:2],
    "mgrid_complex_step": lambda m: m.mgrid[-1:1:5j],
    "mgrid_mixed": lambda m: m.mgrid[0:2, 0:1:3j],
    "ogrid": lambda m: m.ogrid[0:3, 0:2:0.5],
    "r_slices_scalars": lambda m: m.r_[1:4, 0, 4],
    "r_arrays": lambda m: m.r_[np.array([1, 2]), 3.0, [4]],
    "r_linspace": lambda m: m.r_[0:1:4j, 7],
    "r_axis_directive": lambda m: m.r_["-1", np.ones((2, 2)), np.zeros((2, 1))],
    "r_ndmin_directive": lambda m: m.r_["0,2", [1, 2], [3, 4]],
    "r_trans1d_directive": lambda m: m.r_["1,3,1", np.ones((2, 2)), np.zeros((2, 2))],
    "r_trans1d_negative": lambda m: m.r_["0,3,-1", [1, 2], [3, 4]],
    "r_row_matrix": lambda m: m.r_["r", [1, 2], [3]],
    "r_column_matrix": lambda m: m.r_["c", [1, 2], [3]],
    "c_columns": lambda m: m.c_[[1, 2, 3], [4, 5, 6]],
    "c_scalars": lambda m: m.c_[np.array([[1, 2]]), 0, 9],
    "c_matrix_and_slice": lambda m: m.c_[np.ones((3, 2)), 0:3],
}


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # NumPy's r_["r", ...] matrix
@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grids_and_concatenators_match_numpy(name):
    got, expected = GRIDS[name](enp), GRIDS[name](np)
    for g, e in zip(_leaves(got), _leaves(expected)):
        assert np.shape(g) == np.shape(e)
        assert np.asarray(g).dtype.kind == np.asarray(e).dtype.kind
        assert_close(g, e)


def test_index_expressions_are_numpys():
    assert enp.s_[1:2, ::-1] == np.s_[1:2, ::-1]
    assert enp.index_exp[3] == (3,)
    np.testing.assert_array_equal(np.asarray(enp.asarray(X)[enp.s_[1:, ::2]]), X[1:, ::2])


def test_r_keeps_narrow_dtypes_for_python_scalars():
    assert enp.r_[3, np.array([1], np.int8)].dtype == np.int8
    assert enp.r_[np.float32(1), np.array([2], np.float32)].dtype == np.float32


# --------------------------------------------------------------------------------------------
# Transformations


def _dynamic_insert(a, where, values):
    return enp.insert(a, where, values, axis=1)


JIT_CASES = {
    "split": (lambda a: enp.split(a, [1, 3], axis=1), (X,)),
    "insert_traced_positions": (_dynamic_insert, (X, np.array([3, 0, 3]), np.float32(9))),
    "insert_traced_scalar": (lambda a, i: enp.insert(a, i, a[:, 0], axis=1), (X, np.int32(2))),
    "delete_unique": (
        lambda a, i: enp.delete(a, i, axis=1, assume_unique_indices=True),
        (X, np.array([3, 0])),
    ),
    "diagonal": (lambda a: enp.diagonal(a, -1, 2, 1), (CUBE,)),
    "trace": (lambda a: enp.trace(a, 1), (X,)),
    "rot90": (lambda a: enp.rot90(a, 3, (1, 2)), (CUBE,)),
    "block": (lambda a, b: enp.block([[a, b], [b, a]]), (SQUARE, SQUARE)),
    "vander": (lambda v: enp.vander(v, 4), (V,)),
    "unravel_index": (lambda i: enp.unravel_index(i, (3, 4)), (np.array([1, 6, 11]),)),
    "ravel_multi_index": (
        lambda i, j: enp.ravel_multi_index((i, j), (3, 4), mode="clip"),
        (np.array([0, 2]), np.array([5, 1])),
    ),
    "resize": (lambda a: enp.resize(a, (2, 7)), (X,)),
    "dstack": (lambda a: enp.dstack([a, a]), (X,)),
}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_jit_matches_eager(name):
    fn, args = JIT_CASES[name]
    for g, e in zip(_leaves(ember.jit(fn)(*args)), _leaves(fn(*args))):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_traced_insert_and_delete_match_numpy():
    positions = np.array([3, 0, -1, 3])
    got = ember.jit(lambda a, i: enp.insert(a, i, [7.0, 8.0, 9.0, 10.0], axis=1))(X, positions)
    np.testing.assert_array_equal(np.asarray(got), np.insert(X, positions, [7, 8, 9, 10], axis=1))
    removed = np.array([-1, 1])
    got = ember.jit(lambda a, i: enp.delete(a, i, assume_unique_indices=True))(V, removed)
    np.testing.assert_array_equal(np.asarray(got), np.delete(V, removed))


def test_traced_insert_and_delete_match_numpy_on_random_positions():
    local = np.random.default_rng(7)
    insert = ember.jit(lambda a, i, v: enp.insert(a, i, v))
    delete = ember.jit(lambda a, i: enp.delete(a, i, assume_unique_indices=True))
    for _ in range(8):
        positions = local.integers(-5, 6, size=3)
        values = local.normal(size=3).astype(np.float32)
        got = insert(V, positions, values)
        np.testing.assert_array_equal(np.asarray(got), np.insert(V, positions, values))
        removed = local.choice(5, size=2, replace=False) - local.integers(0, 2, size=2) * 5
        np.testing.assert_array_equal(np.asarray(delete(V, removed)), np.delete(V, removed))


GRAD_CASES = {
    "split": (lambda a: enp.split(a, [1, 3], axis=1)[1], (X,)),
    "array_split": (lambda a: enp.array_split(a, 3)[0], (V,)),
    "insert": (lambda a, v: enp.insert(a, [1, 1, 4], v, axis=1), (X, V[:3])),
    "delete": (lambda a: enp.delete(a, [0, 2], axis=1), (X,)),
    "append": (lambda a, b: enp.append(a, b), (X, V)),
    "block": (lambda a, b: enp.block([[a], [b[:, :4]]]), (X, SQUARE)),
    "column_stack": (lambda a, b: enp.column_stack([a, b]), (V, V)),
    "rot90": (lambda a: enp.rot90(a, 1, (2, 0)), (CUBE,)),
    "diagonal": (lambda a: enp.diagonal(a, 1, 0, 2), (CUBE,)),
    "trace": (lambda a: enp.trace(a, -1), (X,)),
    "diag": (lambda v: enp.diag(v, 2), (V,)),
    "vander": (lambda v: enp.vander(v, 4), (V / 4,)),
    "fill_diagonal": (lambda a, v: enp.fill_diagonal(a, v, inplace=False), (SQUARE, V[:4])),
    "resize": (lambda a: enp.resize(a, (4, 4)), (V,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients(name):
    fn, args = GRAD_CASES[name]
    check_grads(fn, args, order=1, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


VMAP_CASES = {
    "split": lambda a: enp.split(a, 2)[1],
    "insert": lambda a: enp.insert(a, [0, 2], -1.0),
    "delete": lambda a: enp.delete(a, [1]),
    "diag": lambda a: enp.diag(a, -1),
    "diagonal": lambda a: enp.diagonal(enp.reshape(a, (2, 2)), 0),
    "trace": lambda a: enp.trace(enp.reshape(a, (2, 2))),
    "rot90": lambda a: enp.rot90(enp.reshape(a, (2, 2))),
    "vander": lambda a: enp.vander(a, 3),
    "fill_diagonal": lambda a: enp.fill_diagonal(enp.reshape(a, (2, 2)), a[0], inplace=False),
    "unravel_index": lambda a: enp.unravel_index(enp.astype(a * 0 + 5, np.int32), (2, 3))[1],
    "block": lambda a: enp.block([a, a[:1]]),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_loop(name):
    fn = VMAP_CASES[name]
    batch = rng.normal(size=(3, 4)).astype(np.float32)
    expected = np.stack([np.asarray(fn(row)) for row in batch])
    np.testing.assert_allclose(np.asarray(ember.vmap(fn)(batch)), expected, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# Errors


ERRORS = [
    (lambda: enp.split(V, 2), ValueError, "equal division"),
    (lambda: enp.split(V, 0), ValueError, "larger than 0"),
    (lambda: enp.array_split(V, [1.5]), TypeError, "integers"),
    (lambda: enp.split(X, 2, axis=2), np.exceptions.AxisError, "out of bounds"),
    (lambda: enp.hsplit(np.float32(1), 1), ValueError, "1 or more dimensions"),
    (lambda: enp.vsplit(V, 5), ValueError, "2 or more dimensions"),
    (lambda: enp.dsplit(X, 2), ValueError, "3 or more dimensions"),
    (lambda: enp.insert(X, 9, 1.0, axis=1), IndexError, "out of bounds"),
    (lambda: enp.insert(X, [[1]], 1.0), ValueError, "1-D"),
    (lambda: enp.insert(X, 1, [1.0, 2.0], axis=1), ValueError, "do not fit"),
    (lambda: enp.delete(X, 4, axis=1), IndexError, "out of bounds"),
    (lambda: enp.delete(X, np.array([True, False]), axis=0), ValueError, "boolean"),
    (lambda: enp.block([[X], X]), ValueError, "depths are mismatched"),
    (lambda: enp.block([]), ValueError, "cannot be empty"),
    (lambda: enp.block((X, X)), TypeError, "tuple"),
    (lambda: enp.fliplr(V), ValueError, ">= 2-d"),
    (lambda: enp.flipud(np.float32(1)), ValueError, ">= 1-d"),
    (lambda: enp.rot90(X, axes=(0, 0)), ValueError, "different"),
    (lambda: enp.rot90(X, axes=(0, 2)), ValueError, "out of range"),
    (lambda: enp.rot90(X, axes=(0,)), ValueError, "len\\(axes\\)"),
    (lambda: enp.rollaxis(X, 0, 5), np.exceptions.AxisError, "start"),
    (lambda: enp.rollaxis(X, 3), np.exceptions.AxisError, "out of bounds"),
    (lambda: enp.resize(X, (-1, 2)), ValueError, "non-negative"),
    (lambda: enp.trim_zeros(V, "x"), ValueError, "'f' and 'b'"),
    (lambda: enp.diagonal(V), ValueError, "at least two dimensions"),
    (lambda: enp.diagonal(X, 0, 1, -1), ValueError, "cannot be the same"),
    (lambda: enp.diag(CUBE), ValueError, "1-d or 2-d"),
    (lambda: enp.trace(X, axis1=0, axis2=4), np.exceptions.AxisError, "axis2"),
    (lambda: enp.vander(X), ValueError, "one-dimensional"),
    (lambda: enp.vander(V, -1), ValueError, "nonnegative"),
    (lambda: enp.tri(-1), ValueError, "negative"),
    (lambda: enp.fill_diagonal(X, 1.0), NotImplementedError, "inplace=False"),
    (lambda: enp.fill_diagonal(V, 1.0, inplace=False), ValueError, "at least 2-d"),
    (lambda: enp.fill_diagonal(CUBE, 1.0, inplace=False), ValueError, "equal length"),
    (lambda: enp.diag_indices_from(X), ValueError, "equal length"),
    (lambda: enp.diag_indices(-2), ValueError, "nonnegative"),
    (lambda: enp.tril_indices_from(V), ValueError, "2-d"),
    (lambda: enp.ix_(X), ValueError, "1-dimensional"),
    (lambda: enp.unravel_index(12, (3, 4)), ValueError, "index 12 is out of bounds"),
    (lambda: enp.unravel_index(-1, (3, 4)), ValueError, "out of bounds"),
    (lambda: enp.unravel_index(1.0, (3, 4)), TypeError, "integer"),
    (lambda: enp.ravel_multi_index((np.array([3]), np.array([0])), (3, 4)), ValueError, "invalid"),
    (lambda: enp.ravel_multi_index((np.array([1]),), (3, 4)), ValueError, "length 2"),
    (lambda: enp.ravel_multi_index((1, 1), (3, 4), order="X"), ValueError, "'C' or 'F'"),
    (lambda: enp.ravel_multi_index((1, 1), (3, 4), mode="bad"), ValueError, "mode"),
    (lambda: enp.ravel_multi_index((1, 1), (300, 300), dtype=np.int8), ValueError, "wider"),
    (lambda: enp.r_[1, "0"], ValueError, "first entry"),
    (lambda: enp.r_["x,y", 1], ValueError, "directive"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_bad_input_raises_numpys_exception(case):
    fn, kind, match = ERRORS[case]
    with pytest.raises(kind, match=match):
        fn()


@pytest.mark.parametrize(
    "fn, args, match",
    [
        (lambda a: enp.trim_zeros(a), (V,), "trim_zeros' filt"),
        (lambda a, i: enp.delete(a, i), (V, np.array([1])), "assume_unique_indices"),
        (lambda a, s: enp.split(a, s), (V, np.int32(5)), "indices_or_sections"),
        (lambda i: enp.ravel_multi_index((i, i), (3, 4)), (np.array([1]),), "mode='raise'"),
        (lambda a: enp.mask_indices(3, lambda m, k: enp.triu(m * a, k)), (np.int32(1),), "size="),
    ],
)
def test_value_dependent_shapes_need_concrete_values_under_jit(fn, args, match):
    with pytest.raises(ember.errors.ConcretizationTypeError, match=match):
        ember.jit(fn)(*args)


def test_mask_indices_with_static_size_under_jit():
    rows, cols = ember.jit(lambda: enp.mask_indices(3, enp.triu, size=7))()
    np.testing.assert_array_equal(np.asarray(rows), [0, 0, 0, 1, 1, 2, 0])
    np.testing.assert_array_equal(np.asarray(cols), [0, 1, 2, 1, 2, 2, 0])


def test_traced_unravel_index_clips_out_of_range_like_jax():
    got = ember.jit(lambda i: enp.unravel_index(i, (3, 4)))(np.array([-1, 100, 5, -13]))
    np.testing.assert_array_equal(np.asarray(got[0]), [2, 2, 1, 0])
    np.testing.assert_array_equal(np.asarray(got[1]), [3, 3, 1, 0])


def test_value_dependent_shapes_work_under_grad_as_in_jax():
    x = np.array([0, 1, 2, 0], np.float32)
    assert_close(ember.grad(lambda v: enp.sum(enp.trim_zeros(v)) * 3)(x), [0, 3, 3, 0])
    assert_close(ember.grad(lambda v: enp.sum(enp.delete(v, enp.argmax(v))))(x), [1, 1, 0, 1])
    pieces = ember.jacfwd(lambda v: enp.split(v, np.array([1, 3]))[1])(x)
    assert_close(pieces, np.eye(4)[1:3])


@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (0, 2), (2, 1)])
def test_trace_with_a_traced_offset(axes):
    traced = ember.jit(lambda a, k: enp.trace(a, k, *axes))
    for offset in (-3, -1, 0, 2, 5):
        assert_close(traced(CUBE, np.int32(offset)), np.trace(CUBE, offset, *axes), atol=1e-5)
    grad = ember.grad(lambda a, k: enp.trace(a, k, *axes).sum())(CUBE, np.int32(1))
    assert_close(grad, ember.grad(lambda a: enp.trace(a, 1, *axes).sum())(CUBE))
