"""examples/multiprocess_digits.py: data-parallel training over 2 processes x 2 CPU devices,
started by ``python -m ember launch``, follows the loss curve of the same training in one
process over 4 devices, step by step, to 1e-5 relative.

The launched run is made once for the module (with ``--check-against-single``, so that the
example's own comparison runs too); the single-process run is started here as well, so the
comparison does not rest on the example's. Every run is bounded: the launcher by its
``--timeout``, and each subprocess by a timeout here after which it is stopped.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("jaxlib", reason="the CPU plugin needs jaxlib")
pytest.importorskip("ember_plugin_cpu", reason="multi-process jobs need the CPU plugin")
pytest.importorskip("sklearn", reason="the example trains on scikit-learn's digits")

pytestmark = pytest.mark.slow

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "multiprocess_digits.py"
STEPS = 20
RELATIVE_TOLERANCE = 1e-5
# A launched run takes seconds on an idle machine; on a loaded 2-core one, up to a minute or
# two. The launcher stops its processes at LAUNCH_TIMEOUT_S; the subprocess bound is a
# backstop for a launcher that does not.
LAUNCH_TIMEOUT_S = 200
SUBPROCESS_TIMEOUT_S = 240
# A launcher told to stop (SIGTERM) stops its processes first: this is how long it gets.
STOP_GRACE_S = 20

CURVE_MARK = "losses: "
SINGLE_CURVE_MARK = "single-process losses: "


def child_environment() -> dict[str, str]:
    env = dict(os.environ)
    env["EMBER_PLATFORMS"] = "cpu"
    # A run of this test inside a launched job must not make the children join that job.
    for name in ("EMBER_COORDINATOR_ADDRESS", "EMBER_NUM_PROCESSES", "EMBER_PROCESS_ID"):
        env.pop(name, None)
    return env


def run_bounded(command: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``command`` to its end or SUBPROCESS_TIMEOUT_S (then fail the test), and the seconds
    it took. A command still running then gets SIGTERM (a launcher passes it on to the
    processes it started, which SIGKILL would leave running), then SIGKILL."""
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        env=child_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        out, err = process.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        pytest.fail(
            f"{' '.join(command)} ran past {SUBPROCESS_TIMEOUT_S} s\n"
            f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
        )
    done = subprocess.CompletedProcess(command, process.returncode, out, err)
    return done, time.monotonic() - start


def marked_curve(output: str, mark: str) -> list[float]:
    """The loss curve printed on the one line of ``output`` that starts with ``mark``."""
    lines = [line.removeprefix(mark) for line in output.splitlines() if line.startswith(mark)]
    assert len(lines) == 1, f"expected one line starting with {mark!r} in:\n{output}"
    return json.loads(lines[0])


def largest_relative_difference(curve: list[float], reference: list[float]) -> float:
    curve_arr, reference_arr = np.asarray(curve), np.asarray(reference)
    return float(np.max(np.abs(curve_arr - reference_arr) / np.abs(reference_arr)))


def failure_report(done: subprocess.CompletedProcess) -> str:
    return (
        f"status {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )


@pytest.fixture(scope="module")
def launched() -> subprocess.CompletedProcess:
    """2 processes x 2 devices, with the example's own comparison against one process."""
    command = [
        sys.executable, "-m", "ember", "launch", "-n", "2", "--devices-per-process", "2",
        "--timeout", str(LAUNCH_TIMEOUT_S), str(EXAMPLE),
        "--steps", str(STEPS), "--check-against-single",
    ]  # fmt: skip
    done, seconds = run_bounded(command)
    print(f"launched run: {seconds:.1f} s")
    assert done.returncode == 0, failure_report(done)
    return done


def rank_lines(output: str, rank: int) -> str:
    prefix = f"[{rank}] "
    return "\n".join(
        line.removeprefix(prefix) for line in output.splitlines() if line.startswith(prefix)
    )


def test_the_launched_run_trains_over_both_processes(launched):
    rank_0 = rank_lines(launched.stdout, 0)
    assert "2 process(es), 4 devices in all, 2 each" in rank_0
    curve = marked_curve(rank_0, CURVE_MARK)
    assert len(curve) == STEPS and all(np.isfinite(curve))
    assert curve[-1] < 0.5 * curve[0]  # it learns: about 2.5 -> 0.6 in 20 steps
    accuracy = float(rank_0.split("test accuracy: ")[1].split()[0])
    assert accuracy > 0.8
    # Only process 0 reports: process 1 prints nothing but gloo's own lines.
    assert CURVE_MARK not in rank_lines(launched.stdout, 1)


def test_the_examples_own_check_finds_the_curves_equal(launched):
    rank_0 = rank_lines(launched.stdout, 0)
    worst = largest_relative_difference(
        marked_curve(rank_0, CURVE_MARK), marked_curve(rank_0, SINGLE_CURVE_MARK)
    )
    print(f"launched vs the example's single-process run: largest relative difference {worst:.2e}")
    assert worst <= RELATIVE_TOLERANCE
    assert "matches the single-process curve" in rank_0


def test_each_steps_loss_matches_one_process_on_four_devices(launched):
    command = [sys.executable, str(EXAMPLE), "--single", "--devices", "4", "--steps", str(STEPS)]
    done, seconds = run_bounded(command)
    print(f"single-process run: {seconds:.1f} s")
    assert done.returncode == 0, failure_report(done)
    assert "1 process(es), 4 devices in all, 4 each" in done.stdout
    single = marked_curve(done.stdout, CURVE_MARK)
    multi = marked_curve(rank_lines(launched.stdout, 0), CURVE_MARK)
    assert len(single) == len(multi) == STEPS
    worst = largest_relative_difference(multi, single)
    print(f"launched vs single-process: largest relative difference {worst:.2e}")
    np.testing.assert_allclose(multi, single, rtol=RELATIVE_TOLERANCE, atol=0)
