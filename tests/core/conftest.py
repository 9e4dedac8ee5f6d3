"""Fixtures shared by the core suites."""

import numpy as np
import pytest

import ember


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def reference_device():
    return ember.devices("reference")[0]
