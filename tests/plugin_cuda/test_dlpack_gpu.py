"""DLPack between ember's cuda arrays and cupy on a real GPU: no copies, streams honoured.
Skips, with the reason, without a cuda platform or without cupy. One line to run:
``EMBER_PLATFORMS=cuda pytest tests/plugin_cuda/test_dlpack_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.dlpack
from ember.errors import EmberError

cupy = pytest.importorskip("cupy", reason="the DLPack GPU tests exchange arrays with cupy")


@pytest.fixture(scope="module")
def gpu():
    try:
        return ember.devices("cuda")[0]
    except EmberError as exc:
        pytest.skip(f"no cuda platform here: {str(exc).splitlines()[0]}")


def test_a_cuda_array_says_where_it_lives(gpu):
    x = ember.device_put(np.arange(4, dtype=np.float32), gpu)
    assert x.__dlpack_device__() == (2, gpu.local_hardware_id)


def test_cupy_reads_an_ember_array_without_a_copy_on_its_stream(gpu):
    x = ember.jit(lambda v: v * 3.0)(ember.device_put(np.arange(1 << 20, dtype=np.float32), gpu))
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        view = cupy.from_dlpack(x)  # cupy passes its current stream to __dlpack__
        total = float(view.sum())
    assert total == pytest.approx(3.0 * (1 << 20) * ((1 << 20) - 1) / 2, rel=1e-6)
    assert view.data.ptr == cupy.from_dlpack(x).data.ptr  # the same memory both times


def test_ember_takes_a_cupy_array_over(gpu):
    source = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    x = ember.dlpack.from_dlpack(source)
    assert x.device == gpu and x.shape == (3, 4) and x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(ember.jit(lambda v: v + 1)(x)), source.get() + 1)
