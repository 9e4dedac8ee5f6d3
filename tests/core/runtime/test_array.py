"""ember.Array: metadata, conversions, operators, devices and shardings."""

import pickle

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close


def test_metadata_and_conversions():
    x = enp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert isinstance(x, ember.Array)
    assert (x.shape, x.dtype, x.ndim, x.size) == ((2, 3), np.float32, 2, 6)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x[1, 2].item() == 5.0 and float(x[1, 2]) == 5.0 and int(x[0, 1]) == 1
    assert np.asarray(x).dtype == np.float32
    assert_close(np.from_dlpack(x), np.arange(6).reshape(2, 3))
    assert repr(x) == "Array([[0., 1., 2.],\n       [3., 4., 5.]], dtype=float32)"
    assert len(x) == 2 and [r.shape for r in x] == [(3,), (3,)]


def test_operators_match_numpy():
    a = np.array([1.0, -2.0, 3.5], np.float32)
    x = enp.asarray(a)
    assert_close(x + 1, a + 1)
    assert_close(2 - x, 2 - a)
    assert_close(x * x, a * a)
    assert_close(x / 2, a / 2)
    assert_close(x // 2, a // 2)
    assert_close(x % 2, a % 2)
    assert_close(x**2, a**2)
    assert_close(-x, -a)
    assert_close(abs(x), abs(a))
    np.testing.assert_array_equal(x > 0, a > 0)
    np.testing.assert_array_equal(x == a, np.ones(3, bool))
    assert_close(a + x, a + a)  # NumPy on the left defers to ember
    assert isinstance(a + x, ember.Array)
    assert_close(x.sum(), a.sum())
    assert_close(x.reshape(3, 1).T, a.reshape(3, 1).T)


def test_bool_of_arrays():
    assert bool(enp.asarray(1.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(enp.ones(2))


def test_arrays_are_unhashable_and_immutable_views():
    x = enp.ones(3)
    with pytest.raises(TypeError):
        hash(x)
    host = np.asarray(x)
    with pytest.raises(ValueError):
        host[0] = 2.0


def test_device_put_copies_host_data():
    host = np.zeros(4, np.float32)
    x = ember.device_put(host)
    host[0] = 5.0
    assert float(x[0]) == 0.0


def test_devices_sharding_and_block_until_ready():
    x = enp.ones(3).block_until_ready()
    (device,) = x.devices()
    assert device in ember.devices()
    assert x.sharding.device == device and x.sharding.is_fully_replicated
    assert ember.default_backend() == device.platform
    assert ember.block_until_ready({"a": x})["a"] is x
    y = ember.device_put(x, device)
    assert_close(y, x)


def test_pickle_round_trip():
    x = enp.arange(4.0)
    y = pickle.loads(pickle.dumps(x))
    assert_close(y, x)
    assert isinstance(y, ember.Array)


def test_device_get_returns_numpy():
    out = ember.device_get({"x": enp.ones(2)})
    assert isinstance(out["x"], np.ndarray)


def test_iterating_an_array_compiles_per_block_not_per_row(capsys):
    # ``for row in x`` used to compile one slice program per index (250 here).
    from ember._src.config import config

    x = enp.arange(250 * 3, dtype=enp.float32).reshape(250, 3) + 0.5
    with config.option("log_compiles", True):
        rows = list(x)
        rows_again = [row for row in x]
    compiles = capsys.readouterr().out.count("compiling")
    assert compiles <= 6
    expected = np.arange(250 * 3, dtype=np.float32).reshape(250, 3) + 0.5
    np.testing.assert_array_equal(np.stack([np.asarray(r) for r in rows]), expected)
    assert len(rows_again) == 250 and rows[0].dtype == np.float32 and rows[0].shape == (3,)
    assert [int(v) for v in enp.arange(3, dtype=enp.int8)] == [0, 1, 2]
    with pytest.raises(TypeError, match="0-d"):
        iter(enp.asarray(np.float32(1.0)))
