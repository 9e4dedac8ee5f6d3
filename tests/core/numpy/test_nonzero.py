"""nonzero, argwhere and count_nonzero against NumPy, and the static ``size=`` that
value-dependent shapes need under jit (``unique``'s as well as ``nonzero``'s)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_matches_numpy

M = np.array([[0, 2, 0], [1, 0, 3]])
U = np.array([3, 1, 2, 3, 1, 5])

CASES = {
    "argwhere": lambda m: m.argwhere(M),
    "count_nonzero": lambda m: m.count_nonzero(M, axis=0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


def test_value_dependent_shapes_need_a_static_size():
    for got, want in zip(enp.nonzero(M), np.nonzero(M)):
        np.testing.assert_array_equal(np.asarray(got), want)
    padded = enp.nonzero(M, size=5)
    np.testing.assert_array_equal(np.asarray(padded[1]), [1, 0, 2, 0, 0])
    values, counts = ember.jit(lambda u: enp.unique(u, size=6, fill_value=-1, return_counts=True))(
        U
    )
    np.testing.assert_array_equal(np.asarray(values), [1, 2, 3, 5, -1, -1])
    np.testing.assert_array_equal(np.asarray(counts), [2, 1, 2, 1, 0, 0])
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.nonzero)(M)
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.unique)(U)
    got = enp.unique(U, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, np.unique(U, return_index=True, return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(np.asarray(g), w)
