"""meshgrid against NumPy, in both indexings."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.util import assert_matches_numpy

CASES = {
    "meshgrid_xy": lambda m: m.meshgrid(np.arange(3), np.arange(2))[0],
    "meshgrid_ij": lambda m: m.meshgrid(np.arange(3), np.arange(2), indexing="ij")[1],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])
