"""The sharding suites run on 8 devices: set before any backend initialises.

They run in their own pytest process (see tox.ini), since a backend's device count is fixed
when it starts.
"""

import os

os.environ["EMBER_CPU_DEVICE_COUNT"] = "8"
os.environ["EMBER_REFERENCE_DEVICE_COUNT"] = "8"

import numpy as np
import pytest

import ember
from ember.sharding import AxisType, use_mesh


@pytest.fixture
def mesh():
    """A 4 x 2 mesh whose axes are Auto: the partitioner decides layouts."""
    if ember.device_count() < 8:
        pytest.skip("the default backend was started with fewer than 8 devices")
    return ember.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)


@pytest.fixture(scope="module")
def explicit_mesh():
    """A 4 x 2 mesh whose axes are Explicit (make_mesh's default, as jax.make_mesh's)."""
    if ember.device_count() < 8:
        pytest.skip("the default backend was started with fewer than 8 devices")
    return ember.make_mesh((4, 2), ("X", "Y"))


@pytest.fixture
def xmesh(explicit_mesh):
    """The explicit mesh, in scope for the test (bare PartitionSpecs resolve over it)."""
    with use_mesh(explicit_mesh):
        yield explicit_mesh


@pytest.fixture
def rng():
    return np.random.default_rng(0)
