"""ember.dlpack: streams on host arrays, and the device-memory paths' errors where no
platform holds the producer's device (the GPU paths run in tests/plugin_cuda)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.dlpack


class _OnDevice:
    """A producer claiming to live on DLPack device ``kind`` (2: CUDA, 10: ROCm)."""

    def __init__(self, kind, index=0):
        self.kind, self.index = kind, index

    def __dlpack__(self, **kwargs):
        raise AssertionError("never asked for its data")

    def __dlpack_device__(self):
        return (self.kind, self.index)


def test_host_arrays_export_without_a_stream():
    x = ember.numpy.arange(4.0)
    assert x.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(x), [0.0, 1.0, 2.0, 3.0])
    x.__dlpack__(stream=None, max_version=(1, 0))
    x.__dlpack__(stream=-1, max_version=(1, 0))  # "no synchronisation", as DLPack says
    with pytest.raises(BufferError, match=r"host memory takes no stream \(None\), got 7"):
        x.__dlpack__(stream=7, max_version=(1, 0))


def test_a_producer_on_a_device_no_platform_holds_is_a_buffer_error():
    with pytest.raises(BufferError, match=r"DLPack device type 7, which no ember platform holds"):
        ember.dlpack.from_dlpack(_OnDevice(7))


def test_a_gpu_producer_without_the_gpu_platform_is_a_buffer_error():
    with pytest.raises(BufferError, match=r"on a cuda device, but ember's cuda platform is not"):
        ember.dlpack.from_dlpack(_OnDevice(2))
    with pytest.raises(BufferError, match=r"on a rocm device, but ember's rocm platform"):
        ember.dlpack.from_dlpack(_OnDevice(10))
