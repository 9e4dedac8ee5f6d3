"""XLA_FLAGS with a flag XLA does not know is a BackendError, not the end of the process."""

from __future__ import annotations

import pytest

from tests.core.util import run_python

pytest.importorskip("jaxlib")


def test_an_unknown_flag_is_a_backend_error_and_the_process_lives_on():
    done = run_python(
        "import ember.numpy as enp\n"
        "try:\n"
        "    enp.ones(3) + 1\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "print('alive')\n",
        XLA_FLAGS="--xla_no_such_flag=1",
        EMBER_PLATFORMS="cpu",
    )
    assert done.returncode == 0, done.stderr
    assert "BackendError" in done.stdout
    assert "--xla_no_such_flag=1" in done.stdout
    assert done.stdout.strip().endswith("alive")


def test_known_flags_still_reach_xla():
    done = run_python(
        # (cpu_device_count, when set, wins over the XLA flag: unset it here)
        "import os\nos.environ.pop('EMBER_CPU_DEVICE_COUNT', None)\n"
        "import ember\nprint(ember.device_count())\n",
        XLA_FLAGS="--xla_force_host_platform_device_count=3 --xla_cpu_enable_fast_math=false",
        EMBER_PLATFORMS="cpu",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
