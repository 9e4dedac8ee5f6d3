"""``x.at[index]``: the reads (``get``) and updates JAX programs write."""

import numpy as np
import pytest

import ember.numpy as enp
from tests.core.util import assert_close


def test_get_clamps_a_static_index_out_of_range_as_jax_does():
    x = enp.arange(10.0)
    # x[11] raises IndexError (as NumPy); at[].get() is the gather's clamping read, as in JAX
    with pytest.raises(IndexError, match="out of bounds"):
        x[11]
    assert_close(x.at[11].get(), 9.0)
    assert_close(x.at[-11].get(), 0.0)
    assert_close(x.at[np.array([1, 12])].get(), [1.0, 9.0])


def test_get_fills_out_of_range_reads_when_asked():
    got = enp.arange(10.0).at[11].get(mode="fill", fill_value=enp.nan)
    assert np.isnan(np.asarray(got))


def test_get_still_reports_an_index_with_too_many_entries():
    with pytest.raises(IndexError, match="too many indices"):
        enp.arange(10.0).at[1, 2].get()
