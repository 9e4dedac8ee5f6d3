"""examples/explicit_sharding_mlp.py: an MLP trained over a 4 x 2 mesh in explicit sharding mode
follows the loss curves of the same training in automatic mode and on one device.

The example runs as a user runs it, in a process of its own (it asks for 8 devices before its
backend starts), bounded by a timeout; it asserts the curves agree itself, and this test reads
its report as well.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from tests.core.util import run_ok

pytest.importorskip("sklearn", reason="the example trains on scikit-learn's digits")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "explicit_sharding_mlp.py"


def test_explicit_mode_follows_automatic_mode_and_one_device():
    out = run_ok(
        [str(EXAMPLE), "--steps", "20"],
        EMBER_CPU_DEVICE_COUNT="8",
        EMBER_REFERENCE_DEVICE_COUNT="8",
    )
    # The parameters carry their layout in their types.
    assert "w1: float32[64,64@model]" in out
    assert "w2: float32[64@model,10]" in out
    assert "b2: float32[10]" in out
    for mode in ("automatic", "explicit"):
        found = re.search(rf"{mode}: largest relative difference from one device (\S+)", out)
        worst = float(found[1])
        assert worst <= 1e-5
    first, last = map(float, re.search(r"loss (\S+) -> (\S+) over 20 steps", out).groups())
    assert last < 0.6 * first  # it learns: about 2.4 -> 0.56 in 20 steps
