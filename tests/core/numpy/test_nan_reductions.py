"""The NaN-ignoring reductions (nansum, nanmean, ..., nanstd) against NumPy, all-NaN rows
included."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.util import assert_matches_numpy

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
XN = X.copy()
XN[0, 1] = np.nan
XN[2, :] = np.nan

CASES = {
    name: lambda m, name=name: getattr(m, name)(XN, axis=1)
    for name in ("nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd")
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])
