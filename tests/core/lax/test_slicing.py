"""jax.lax's gather and scatter with index modes, and its slicing and creation helpers:
answers against NumPy (JAX's conventions pinned where NumPy has none), gradients with
check_grads, vmap against a Python loop, jit against eager.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close

# --------------------------------------------------------------------------------------------
# Gather and scatter with index modes

ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
ROW_UPDATES = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
STARTS = np.array([[0], [3], [4], [5], [-1], [-7], [2], [100]], np.int32)


def _fill_for(dtype):
    if np.issubdtype(dtype, np.inexact):
        return np.nan
    if dtype == np.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if np.issubdtype(dtype, np.signedinteger) else info.max


def _numpy_gather_rows(x, starts, mode, fill=None):
    n = x.shape[0]
    out = []
    for (s,) in starts:
        if mode == "fill" and not 0 <= s < n:
            out.append(np.full(x.shape[1:], _fill_for(x.dtype) if fill is None else fill, x.dtype))
        else:
            out.append(x[int(np.clip(s, 0, n - 1))])
    return np.stack(out)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.complex64])
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds", None])
def test_gather_rows_by_mode(rng, dtype, mode):
    x = (rng.normal(size=(5, 3)) * 10).astype(dtype)
    got = lax.gather(x, STARTS, ROWS, (1, 3), mode=mode)
    want = _numpy_gather_rows(x, STARTS, "fill" if mode == "fill" else "clip")
    np.testing.assert_array_equal(np.asarray(got), want)


def test_gather_fill_value_and_enum_modes(rng):
    x = rng.normal(size=(5, 3)).astype(np.float32)
    got = lax.gather(x, STARTS, ROWS, (1, 3), mode=lax.GatherScatterMode.FILL_OR_DROP, fill_value=7)
    np.testing.assert_array_equal(np.asarray(got), _numpy_gather_rows(x, STARTS, "fill", 7))
    clip = lax.gather(x, STARTS, ROWS, (1, 3), mode=lax.GatherScatterMode.CLIP)
    np.testing.assert_array_equal(np.asarray(clip), _numpy_gather_rows(x, STARTS, "clip"))
    with pytest.raises(ValueError, match="Unknown gather mode"):
        lax.gather(x, STARTS, ROWS, (1, 3), mode="wrap")


def test_gather_windows_must_fit_entirely(rng):
    """A window of 2 rows starting at row 4 of 5 is out of bounds as a whole."""
    x = rng.normal(size=(5, 2)).astype(np.float32)
    dn = lax.GatherDimensionNumbers(
        offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,)
    )
    starts = np.array([[3], [4], [-1]], np.int32)
    filled = np.asarray(lax.gather(x, starts, dn, (2, 2), mode="fill"))
    assert_close(filled[0], x[3:5])
    assert np.isnan(filled[1:]).all()
    clipped = np.asarray(lax.gather(x, starts, dn, (2, 2), mode="clip"))
    assert_close(clipped, np.stack([x[3:5], x[3:5], x[0:2]]))


def test_narrow_index_types_against_large_operands(rng):
    x = rng.normal(size=(300, 2)).astype(np.float32)
    starts = np.array([[5], [-3], [120]], np.int8)
    got = lax.gather(x, starts, ROWS, (1, 2), mode="fill")
    assert_close(got[[0, 2]], x[[5, 120]])
    assert np.isnan(np.asarray(got[1])).all()
    dropped = lax.scatter_add(
        np.zeros((300, 2), np.float32), starts, np.ones((3, 2), np.float32), ROW_UPDATES
    )
    assert float(enp.sum(dropped)) == 4.0


def test_gather_fill_gradient_is_zero_out_of_bounds(rng):
    x = rng.normal(size=(5, 3)).astype(np.float32)

    def total(x):
        return enp.sum(lax.gather(x, STARTS, ROWS, (1, 3), mode="fill", fill_value=0.0))

    counts = np.zeros(5, np.float32)
    for (s,) in STARTS:
        if 0 <= s < 5:
            counts[s] += 1
    assert_close(ember.grad(total)(x), np.repeat(counts[:, None], 3, 1))
    check_grads(lambda x: lax.gather(x, STARTS[:4], ROWS, (1, 3), mode="clip"), (x,), order=2)


def test_gather_vmap_and_jit(rng):
    x = rng.normal(size=(4, 5, 3)).astype(np.float32)
    starts = rng.integers(-2, 7, size=(4, 6, 1)).astype(np.int32)

    def f(x, s):
        return lax.gather(x, s, ROWS, (1, 3), mode="fill", fill_value=-1.0)

    batched = ember.vmap(f)(x, starts)
    for i in range(4):
        np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(f(x[i], starts[i])))
    np.testing.assert_array_equal(
        np.asarray(ember.jit(f)(x[0], starts[0])), np.asarray(f(x[0], starts[0]))
    )


SCATTERS = {
    "scatter": (lax.scatter, lambda a, u: u),
    "scatter_add": (lax.scatter_add, np.add),
    "scatter_sub": (lax.scatter_sub, np.subtract),
    "scatter_mul": (lax.scatter_mul, np.multiply),
    "scatter_min": (lax.scatter_min, np.minimum),
    "scatter_max": (lax.scatter_max, np.maximum),
}


def _numpy_scatter_rows(x, starts, updates, combine, mode):
    out = x.copy()
    n = x.shape[0]
    for (s,), u in zip(starts, updates):
        if mode == "clip":
            s = int(np.clip(s, 0, n - 1))
        elif not 0 <= s < n:
            continue
        out[s] = combine(out[s], u)
    return out


@pytest.mark.parametrize("name", sorted(SCATTERS))
@pytest.mark.parametrize("mode", ["clip", "drop", None])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_family_by_mode(rng, name, mode, dtype):
    fn, combine = SCATTERS[name]
    x = rng.integers(-5, 6, size=(5, 3)).astype(dtype)
    starts = np.array([[1], [7], [-1], [4], [1]], np.int32)
    if name == "scatter":  # replacement with duplicates is order-dependent: keep unique
        starts = np.array([[1], [7], [-1], [4], [2]], np.int32)
    updates = rng.integers(-5, 6, size=(5, 3)).astype(dtype)
    got = fn(x, starts, updates, ROW_UPDATES, mode=mode)
    want = _numpy_scatter_rows(x, starts, updates, combine, "clip" if mode == "clip" else "drop")
    if name == "scatter" and mode == "clip":  # 7 and 4 both land on row 4
        starts = np.array([[1], [3], [-1], [4], [2]], np.int32)
        got = fn(x, starts, updates, ROW_UPDATES, mode=mode)
        want = _numpy_scatter_rows(x, starts, updates, combine, "clip")
    np.testing.assert_array_equal(np.asarray(got), want)


def test_scatter_drop_gradients_ignore_dropped_updates(rng):
    x = rng.normal(size=(5, 3)).astype(np.float32)
    updates = rng.normal(size=(4, 3)).astype(np.float32)
    starts = np.array([[1], [9], [-1], [3]], np.int32)
    for fn in (lax.scatter_add, lax.scatter_sub, lax.scatter):
        g = ember.grad(lambda u, fn=fn: enp.sum(fn(x, starts, u, ROW_UPDATES)), argnums=0)(updates)
        sign = -1.0 if fn is lax.scatter_sub else 1.0
        want = np.zeros_like(updates)
        want[[0, 3]] = sign
        assert_close(g, want)
    check_grads(lambda x, u: lax.scatter_add(x, starts, u, ROW_UPDATES), (x, updates), order=2)
    check_grads(lambda x, u: lax.scatter(x, starts, u, ROW_UPDATES), (x, updates), order=1)


def test_scatter_mul_min_max_gradients_match_jax():
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    x = np.array([1.0, 2.0, 3.0], np.float32)
    u = np.array([2.0, 3.0], np.float32)
    idx = np.array([[2], [0]], np.int32)
    # Pinned from jax.grad of the same functions.
    square_mul = lambda x, u: enp.sum(lax.scatter_mul(x, idx, u, dn, unique_indices=True) ** 2)
    gx, gu = ember.grad(square_mul, argnums=(0, 1))(x, u)
    assert_close(gx, [18, 4, 24])
    assert_close(gu, [36, 6])
    # without unique indices only the updates' derivative is refused (JAX: grad in x is [3, 1, 2])
    assert_close(ember.grad(lambda x: enp.sum(lax.scatter_mul(x, idx, u, dn)))(x), [3, 1, 2])
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        ember.grad(lambda u: enp.sum(lax.scatter_mul(x, idx, u, dn)))(u)
    for fn, want_x, want_u in ((lax.scatter_min, [1, 1, 0], [1, 0]),
                               (lax.scatter_max, [0, 1, 1], [0, 1])):  # fmt: skip
        gx, gu = ember.grad(lambda x, u, fn=fn: enp.sum(fn(x, idx, u, dn)), argnums=(0, 1))(x, u)
        assert_close(gx, want_x)
        assert_close(gu, want_u)
    # Ties share the tangent equally (three-way tie at position 0).
    ties = np.array([[0], [0], [1]], np.int32)
    tied_x, tied_u = np.array([1.0, 5.0, 0.0], np.float32), np.array([1.0, 1.0, 2.0], np.float32)
    total = lambda x, u: enp.sum(lax.scatter_max(x, ties, u, dn))
    gx, gu = ember.grad(total, argnums=(0, 1))(tied_x, tied_u)
    assert_close(gx, [1 / 3, 1, 1])
    assert_close(gu, [1 / 3, 1 / 3, 0])
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    updates = rng.normal(size=(3, 3)).astype(np.float32)
    starts = np.array([[4], [0], [2]], np.int32)
    for fn in (lax.scatter_min, lax.scatter_max):
        check_grads(lambda x, u, fn=fn: fn(x, starts, u, ROW_UPDATES), (x, updates), order=1)
    check_grads(
        lambda x, u: lax.scatter_mul(x, starts, u, ROW_UPDATES, unique_indices=True),
        (x, updates),
        order=2,
    )


def test_scatter_vmap_and_jit(rng):
    x = rng.normal(size=(3, 5, 2)).astype(np.float32)
    updates = rng.normal(size=(3, 4, 2)).astype(np.float32)
    starts = rng.integers(-2, 7, size=(3, 4, 1)).astype(np.int32)

    def f(x, s, u):
        return lax.scatter_add(x, s, u, ROW_UPDATES, mode="drop")

    batched = ember.vmap(f)(x, starts, updates)
    for i in range(3):
        assert_close(batched[i], f(x[i], starts[i], updates[i]))
    assert_close(ember.jit(f)(x[0], starts[0], updates[0]), f(x[0], starts[0], updates[0]))
    g = lambda x, s, u: lax.scatter_max(x, s, u, ROW_UPDATES, mode="clip")
    batched = ember.vmap(g)(x, starts, updates)
    for i in range(3):
        assert_close(batched[i], g(x[i], starts[i], updates[i]))


def test_scatter_apply_applies_once_per_hit():
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    x = np.arange(5, dtype=np.float32)
    idx = np.array([[1], [1], [3], [9]], np.int32)
    got = lax.scatter_apply(x, idx, lambda v: v * 2 + 1, dn, update_shape=(4,))
    assert_close(got, [0, 7, 2, 7, 4])
    unique = lax.scatter_apply(x, idx[1:], enp.sin, dn, update_shape=(3,), unique_indices=True)
    assert_close(unique, [0, np.sin(1), 2, np.sin(3), 4])
    jitted = ember.jit(lambda x: lax.scatter_apply(x, idx, enp.exp, dn, update_shape=(4,)))(x)
    assert_close(jitted, [0, np.exp(np.exp(1)), 2, np.exp(3), 4], rtol=1e-5)


# --------------------------------------------------------------------------------------------
# Slicing helpers


@pytest.mark.parametrize("start", [0, 2, -2, -9, 7])
def test_dynamic_slice_and_index_in_dim(rng, start):
    x = rng.normal(size=(3, 6)).astype(np.float32)
    n = x.shape[1]
    wrapped = start + n if start < 0 else start
    begin = int(np.clip(wrapped, 0, n - 2))
    assert_close(lax.dynamic_slice_in_dim(x, start, 2, axis=1), x[:, begin : begin + 2])
    traced = ember.jit(lambda x, s: lax.dynamic_slice_in_dim(x, s, 2, 1))(x, np.int32(start))
    assert_close(traced, x[:, begin : begin + 2])
    one = int(np.clip(wrapped, 0, n - 1))
    assert_close(lax.dynamic_index_in_dim(x, start, 1, keepdims=False), x[:, one])
    assert_close(lax.dynamic_index_in_dim(x, start, 1), x[:, one : one + 1])
    raw = int(np.clip(start, 0, n - 2))
    unwrapped = lax.dynamic_slice_in_dim(x, start, 2, 1, allow_negative_indices=False)
    assert_close(unwrapped, x[:, raw : raw + 2])


def test_dynamic_slice_negative_starts_count_from_the_end():
    x = np.arange(6, dtype=np.int32)
    # Pinned from JAX: negative starts wrap once, then clamp.
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, [-2], [2])), [4, 5])
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, [-9], [2])), [0, 1])
    updated = lax.dynamic_update_slice(x, np.array([9, 9], np.int32), [-1])
    np.testing.assert_array_equal(np.asarray(updated), [0, 1, 2, 3, 9, 9])
    traced = ember.jit(lambda s: lax.dynamic_slice(x, (s,), (2,)))(np.int32(-3))
    np.testing.assert_array_equal(np.asarray(traced), [3, 4])
    with pytest.raises(ValueError, match="allow_negative_indices=False"):
        lax.dynamic_slice(x, [-2], [2], allow_negative_indices=False)
    starts = np.array([1, -1], np.int32)
    grid = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_close(lax.dynamic_slice(grid, starts, (2, 1)), grid[1:3, 3:4])
    batched = ember.vmap(lambda s: lax.dynamic_slice(x, (s,), (2,)))(np.array([-1, 0, 2], np.int32))
    np.testing.assert_array_equal(np.asarray(batched), [[4, 5], [0, 1], [2, 3]])


def test_dynamic_update_in_dim(rng):
    x = np.zeros((4, 3), np.float32)
    row = rng.normal(size=3).astype(np.float32)
    want = x.copy()
    want[2] = row
    assert_close(lax.dynamic_update_index_in_dim(x, row, -2, 0), want)
    assert_close(lax.dynamic_update_index_in_dim(x, row[None], 2, 0), want)
    block = rng.normal(size=(4, 2)).astype(np.float32)
    want = x.copy()
    want[:, 1:] = block
    assert_close(lax.dynamic_update_slice_in_dim(x, block, -2, axis=1), want)
    check_grads(
        lambda x, b: lax.dynamic_update_slice_in_dim(x, b, 1, axis=1),
        (rng.normal(size=(4, 3)).astype(np.float32), block),
        order=2,
    )
    looped = ember.vmap(lambda i: lax.dynamic_update_index_in_dim(x, row, i, 0))(
        np.arange(4, dtype=np.int32)
    )
    for i in range(4):
        want = x.copy()
        want[i] = row
        assert_close(looped[i], want)


def test_static_slices(rng):
    x = rng.normal(size=(6, 4)).astype(np.float32)
    assert_close(lax.slice_in_dim(x, None, -1, 2), x[:-1:2])
    assert_close(lax.slice_in_dim(x, 1, 3, axis=-1), x[:, 1:3])
    assert_close(lax.index_in_dim(x, -1), x[-1:])
    assert_close(lax.index_in_dim(x, 2, axis=1, keepdims=False), x[:, 2])
    with pytest.raises(IndexError, match="out of bounds"):
        lax.index_in_dim(x, 6)
    with pytest.raises(ValueError, match="axis=2"):
        lax.slice_in_dim(x, 0, 1, axis=2)


def test_index_take(rng):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    i, j = np.array([0, 2, 1]), np.array([1, 3, 3])
    assert_close(lax.index_take(x, (i, j), (0, 1)), x[i, j])
    assert_close(lax.index_take(x, (j, i), (2, 0)), np.moveaxis(x[i, :, j], 0, 0))
    check_grads(lambda x: lax.index_take(x, (i, j), (0, 1)), (x,), order=2)


def test_shapes_and_creation(rng):
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    assert lax.collapse(x, 1, 3).shape == (2, 12, 5)
    assert lax.collapse(x, 1).shape == (2, 60)
    assert lax.collapse(x, -2, -1).shape == (2, 3, 4, 5)
    assert_close(lax.broadcast_to_rank(x[0, 0, 0], 3), x[0, 0, 0].reshape(1, 1, 5))
    np.testing.assert_array_equal(
        np.asarray(lax.broadcasted_iota(np.int32, (2, 3), 1)), np.broadcast_to(np.arange(3), (2, 3))
    )
    full = lax.full((2,), 1.0)
    assert full.dtype == np.float32 and full.weak_type
    assert lax.full((2, 2), 3, np.int8).dtype == np.int8
    like = lax.full_like(np.ones(3, np.int8), 3.7)
    assert like.dtype == np.int8 and not like.weak_type
    np.testing.assert_array_equal(np.asarray(like), [3, 3, 3])
    assert lax.full_like(x, 2, shape=(2, 2)).shape == (2, 2)
    assert lax.empty((2, 3), np.float16).shape == (2, 3)
    with pytest.raises(TypeError, match="scalar fill_value"):
        lax.full((2,), np.ones(2))


def test_split_tile_stack_unstack(rng):
    x = rng.normal(size=(6, 4)).astype(np.float32)
    pieces = lax.split(x, [2, 0, 4])
    for got, want in zip(pieces, np.split(x, [2, 2])):
        assert_close(got, want)
    with pytest.raises(ValueError, match="sum to the size"):
        lax.split(x, [2, 3])
    assert_close(lax.tile(x, (2, 3)), np.tile(x, (2, 3)))
    with pytest.raises(TypeError, match="reps length"):
        lax.tile(x, (2,))
    assert_close(lax.stack([x, x + 1], axis=1), np.stack([x, x + 1], 1))
    for got, want in zip(lax.unstack(x, axis=1), np.moveaxis(x, 1, 0)):
        assert_close(got, want)
    check_grads(lambda x: lax.tile(x, (2, 1)), (x,), order=2)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("x64", [False, True])
def test_dynamic_slicing_mixes_python_ints_with_traced_indices(dtype, x64):
    """Python ints join traced start indices of any integer type (x64 on or off)."""
    with ember.config.option("enable_x64", x64):
        x = ember.numpy.arange(12.0).reshape(3, 4)
        i = dtype(1)
        cases = {
            "slice": (lambda v, i: lax.dynamic_slice(v, (i, 1), (2, 2)), [[5, 6], [9, 10]]),
            "update": (
                lambda v, i: lax.dynamic_update_slice(v, ember.numpy.ones((1, 2)), (1, i)),
                [[0, 1, 2, 3], [4, 1, 1, 7], [8, 9, 10, 11]],
            ),
            "index": (lambda v, i: lax.dynamic_index_in_dim(v, i, 1), [[1], [5], [9]]),
            "in_dim": (
                lambda v, i: lax.dynamic_slice_in_dim(v, i, 2, 1),
                [[1, 2], [5, 6], [9, 10]],
            ),
            "mixed": (
                lambda v, i: lax.dynamic_slice(v, (i, np.int64(1) if x64 else 1), (2, 2)),
                [[5, 6], [9, 10]],
            ),
        }
        for fn, expected in cases.values():
            np.testing.assert_array_equal(ember.jit(fn)(x, i), expected)
            np.testing.assert_array_equal(fn(x, i), expected)


def test_gather_with_batching_dims_picks_per_batch():
    # out[b, j] = operand[b, idx[b, j]] (clamped into range, as XLA), on every backend.
    operand = np.arange(10.0, dtype=np.float32).reshape(2, 5)
    idx = np.array([[[4], [0], [9]], [[1], [1], [-2]]], np.int32)
    dn = lax.GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(1,),
        start_index_map=(1,),
        operand_batching_dims=(0,),
        start_indices_batching_dims=(0,),
    )
    out = lax.gather(operand, idx, dn, (1, 1))
    np.testing.assert_array_equal(out, [[4.0, 0.0, 4.0], [6.0, 6.0, 5.0]])
    windows = lax.gather(
        operand,
        np.array([[3], [0]], np.int32),
        lax.GatherDimensionNumbers(
            offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(1,)
        ),
        (2, 2),
    )
    assert windows.shape == (2, 2, 2)
    np.testing.assert_array_equal(windows, [[[3, 4], [8, 9]], [[0, 1], [5, 6]]])
