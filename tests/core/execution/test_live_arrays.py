"""ember.live_arrays: the Arrays alive on a platform, found through the garbage collector."""

import gc

import numpy as np
import pytest

import ember
import ember.numpy as enp


def _live_ids() -> set[int]:
    gc.collect()
    return {id(x) for x in ember.live_arrays()}


def test_lists_exactly_the_arrays_created_and_alive():
    before = _live_ids()
    made = [enp.asarray(np.arange(3, dtype=np.float32) + i) for i in range(3)]
    made.append(made[0] + made[1])
    now = _live_ids()
    assert now - before == {id(x) for x in made}
    found = [x for x in ember.live_arrays() if id(x) not in before]
    assert sorted(float(x[0]) for x in found) == [0.0, 1.0, 1.0, 2.0]
    del found


def test_dropped_and_deleted_arrays_are_gone():
    before = _live_ids()
    kept, dropped, deleted = (enp.asarray(np.ones(2, np.float32)) for _ in range(3))
    drop_id = id(dropped)
    del dropped
    deleted.delete()
    now = _live_ids()
    assert now - before == {id(kept)}
    assert drop_id not in now and id(deleted) not in now


def test_platform_names_the_backend():
    assert all(
        next(iter(x.devices())).platform == "reference" for x in ember.live_arrays("reference")
    )
    with pytest.raises(ember.errors.UnknownPlatformError):
        ember.live_arrays("no-such-platform")
