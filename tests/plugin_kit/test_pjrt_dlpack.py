"""DLPack through the PJRT bridge on XLA's CPU client: the backend side of
``Array.__dlpack__`` and ``ember.dlpack.from_dlpack`` for device memory (on a GPU the same
calls carry streams; needs jaxlib: run in the `cpu` tox env)."""

from __future__ import annotations

import numpy as np
import pytest

pjrt = pytest.importorskip("ember_plugin_kit.pjrt")

import ember  # noqa: E402
from ember._src.runtime.array import Array  # noqa: E402
from ember._src.runtime.sharding import SingleDeviceSharding  # noqa: E402
from ember_plugin_kit.pjrt import dlpack_capsule  # noqa: E402


@pytest.fixture(scope="module")
def cpu():
    try:
        return ember.devices("cpu")[0]
    except ember.errors.BackendError as err:
        pytest.skip(f"needs the cpu platform: {err}")


class _Producer:
    """A DLPack producer that records how it was asked for its data."""

    def __init__(self, array):
        self.array = array
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


class _Capsule:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_the_backend_takes_a_host_array_over_without_a_stream_on_cpu(cpu):
    source = np.arange(64, dtype=np.float32).reshape(8, 8)
    producer = _Producer(source)
    buffer, aval = cpu.backend.buffer_from_dlpack(producer, cpu)
    assert producer.calls == [{}]  # CPU devices have no stream to order writes before
    assert aval.shape == (8, 8) and aval.dtype == np.float32
    array = Array(aval, buffer, SingleDeviceSharding(cpu))
    np.testing.assert_array_equal(np.asarray(array), source)
    np.testing.assert_array_equal(np.asarray(ember.jit(lambda x: x * 2)(array)), source * 2)


def test_the_backend_exports_a_buffer_as_a_capsule(cpu):
    x = ember.device_put(np.arange(6, dtype=np.int32), cpu)
    capsule = cpu.backend.buffer_to_dlpack(x._buffer, stream=None)
    np.testing.assert_array_equal(np.from_dlpack(_Capsule(capsule)), [0, 1, 2, 3, 4, 5])


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint64", "bool", "complex64", "float16"])
def test_a_capsule_tells_its_shape_and_dtype(dtype):
    capsule = np.zeros((2, 0, 3), dtype).__dlpack__()
    assert dlpack_capsule.shape_and_dtype(capsule) == ((2, 0, 3), np.dtype(dtype))


def test_a_versioned_capsule_is_a_buffer_error():
    with pytest.raises(BufferError, match="no unconsumed 'dltensor' capsule"):
        dlpack_capsule.shape_and_dtype(np.zeros(3).__dlpack__(max_version=(1, 0)))
