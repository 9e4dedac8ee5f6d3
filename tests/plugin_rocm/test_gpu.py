"""The ``rocm`` platform on a real AMD GPU (the rocm tox env: ``tox -e rocm``). Every test
skips, with the reason the backend gave, where the platform cannot start.

Option tests and the conformance suite run in subprocesses of their own: XLA reads the
options once, when the client is created."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import EmberError
from tests.plugin_rocm.util import REPO, run_ember


@pytest.fixture(scope="module")
def gpus():
    try:
        return ember.devices("rocm")
    except EmberError as exc:
        pytest.skip(f"no rocm platform here: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def gpu(gpus):
    return gpus[0]


def test_devices_report_their_memory(gpus):
    for device in gpus:
        assert device.platform == "rocm"
        stats = device.memory_stats()
        assert stats["bytes_limit"] > 2**30 and 0 <= stats["bytes_in_use"] <= stats["bytes_limit"]


def test_a_compiled_program_matches_numpy(gpu):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((512, 128), dtype=np.float32)
    out = ember.jit(lambda a, b: enp.tanh(a @ b) * 2 + 1, device=gpu)(a, b)
    np.testing.assert_allclose(np.asarray(out), np.tanh(a @ b) * 2 + 1, rtol=2e-3, atol=2e-3)


STATS = textwrap.dedent(
    """
    import json, ember, numpy as np
    devices = ember.devices("rocm")
    x = ember.device_put(np.ones(1024, np.float32), devices[0]) * 2
    print(json.dumps({"count": len(devices), "limit": devices[0].memory_stats()["bytes_limit"],
                      "sum": float(x.sum())}))
    """
)


def started_with(**env) -> dict:
    done = run_ember(["-c", STATS], None, EMBER_PLATFORMS="rocm", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_memory_fraction_sets_the_allocators_limit(gpu):
    quarter = started_with(EMBER_ROCM_MEMORY_FRACTION="0.25")["limit"]
    half = started_with(EMBER_ROCM_MEMORY_FRACTION="0.5")["limit"]
    assert half / quarter == pytest.approx(2, rel=0.05)


def test_the_platform_allocator_and_visible_devices(gpu):
    assert started_with(EMBER_ROCM_ALLOCATOR="platform")["sum"] == 2048.0
    assert started_with(EMBER_ROCM_VISIBLE_DEVICES="0")["count"] == 1


def test_the_conformance_suite_passes_on_the_amd_gpus(gpus):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--pyargs",
            "ember_plugin_kit.conformance",
            "--ember-platform=rocm",
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
