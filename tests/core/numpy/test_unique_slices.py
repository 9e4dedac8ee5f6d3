"""unique(axis=...): distinct slices against NumPy, with JAX's padding under a static size,
NaNs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close

ROWS = np.array([[1, 0, 1], [0, 2, 0], [1, 0, 1], [3, 1, 2], [0, 2, 0]], np.int32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_slices_match_numpy(axis):
    got = enp.unique(ROWS, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    expected = np.unique(
        ROWS, axis=axis, return_index=True, return_inverse=True, return_counts=True
    )
    for g, e in zip(got, expected):
        assert g.tolist() == e.tolist()
        assert g.dtype == np.int32
    cube = np.array([[[1, 2], [1, 2]], [[0, 1], [1, 2]], [[1, 2], [1, 2]]])
    assert enp.unique(cube, axis=0).tolist() == np.unique(cube, axis=0).tolist()
    assert enp.unique(cube, axis=1).tolist() == np.unique(cube, axis=1).tolist()
    assert enp.unique(np.zeros((0, 3)), axis=0).shape == (0, 3)


def test_unique_slices_static_size_pads_like_jax():
    # JAX 0.10.2's answers: missing slices are the smallest slice (or fill_value), missing
    # indices the smallest slice's index, missing counts 0; the inverse is never padded.
    def run(**kw):
        call = lambda a: enp.unique(
            a, axis=0, return_index=True, return_inverse=True, return_counts=True, **kw
        )
        return [x.tolist() for x in ember.jit(call)(ROWS)]

    assert run(size=5) == [
        [[0, 2, 0], [1, 0, 1], [3, 1, 2], [0, 2, 0], [0, 2, 0]],
        [1, 0, 3, 1, 1],
        [1, 0, 1, 2, 0],
        [2, 2, 1, 0, 0],
    ]
    assert run(size=4, fill_value=7) == [
        [[0, 2, 0], [1, 0, 1], [3, 1, 2], [7, 7, 7]],
        [1, 0, 3, 1],
        [1, 0, 1, 2, 0],
        [2, 2, 1, 0],
    ]
    assert enp.unique(ROWS, axis=0, size=2).tolist() == [[0, 2, 0], [1, 0, 1]]
    mapped = ember.vmap(lambda m: enp.unique(m, axis=0, size=3))(np.stack([ROWS, ROWS[::-1]]))
    assert mapped.tolist() == [np.unique(ROWS, axis=0).tolist()] * 2
    # The flattened form pads its indices the same way.
    index = enp.unique(np.array([3, 1, 3]), size=4, return_index=True)[1]
    assert index.tolist() == [1, 0, 1, 1]


def test_unique_slices_nan_and_errors():
    f = np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 1.0]])
    assert_close(enp.unique(f, axis=0), [[0.0, 1.0], [1.0, np.nan]])
    assert_close(enp.unique(f, axis=0, equal_nan=False), np.unique(f, axis=0))
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        enp.unique(ROWS, axis=2)
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(lambda a: enp.unique(a, axis=0))(ROWS)
