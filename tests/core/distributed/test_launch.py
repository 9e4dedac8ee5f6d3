"""``python -m ember launch``: ranks and environment, prefixed output, the first failure stopping
the others, signals, --timeout, -m, usage errors, and stopping the children when the launcher
is stopped.

The children are small scripts that never import ember, so each starts in a few milliseconds.
Every run is bounded: in-process runs pass --timeout, subprocess runs a subprocess timeout.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import types

import pytest

from ember._src.distributed import launch

BOUND = "60"  # --timeout for in-process runs that should end long before it
QUICK_S = 15.0  # what "stopped quickly" means here: far below the children's 60 s sleeps


def script(tmp_path: pathlib.Path, body: str, name: str = "child.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def run_launcher(capsys, *argv: str) -> tuple[int, str, str, float]:
    """``launch.main(argv)`` in this process: (status, stdout, stderr, seconds taken)."""
    start = time.monotonic()
    status = launch.main(list(argv))
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    return status, out, err, elapsed


def lines_of(rank: int, text: str) -> list[str]:
    prefix = f"[{rank}] "
    return [line.removeprefix(prefix) for line in text.splitlines() if line.startswith(prefix)]


PRINT_ENVIRONMENT = """
    import json, os, sys
    names = ["EMBER_COORDINATOR_ADDRESS", "EMBER_NUM_PROCESSES", "EMBER_PROCESS_ID",
             "PYTHONUNBUFFERED", "EMBER_CPU_DEVICE_COUNT", "LAUNCH_TEST_INHERITED"]
    print(json.dumps({name: os.environ.get(name) for name in names}))
    print("args", json.dumps(sys.argv[1:]))
    print("to stderr", file=sys.stderr)
"""


def environments(out: str, num_processes: int) -> list[dict]:
    return [json.loads(lines_of(rank, out)[0]) for rank in range(num_processes)]


# ---------------------------------------------------------------------------------------------
# All succeed


def test_all_succeed_with_prefixed_output_and_their_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LAUNCH_TEST_INHERITED", "kept")
    monkeypatch.delenv("EMBER_CPU_DEVICE_COUNT", raising=False)
    child = script(tmp_path, PRINT_ENVIRONMENT)
    status, out, err, _ = run_launcher(capsys, "-n", "3", "--timeout", BOUND, child)
    assert status == 0, err
    for rank, env in enumerate(environments(out, 3)):
        assert env["EMBER_NUM_PROCESSES"] == "3"
        assert env["EMBER_PROCESS_ID"] == str(rank)
        assert env["PYTHONUNBUFFERED"] == "1"
        assert env["LAUNCH_TEST_INHERITED"] == "kept"
        assert env["EMBER_CPU_DEVICE_COUNT"] is None
        assert lines_of(rank, out)[1] == "args []"
        # Each stream goes to the launcher's stream of the same name, prefixed.
        assert lines_of(rank, err) == ["to stderr"]
        assert "to stderr" not in "\n".join(lines_of(rank, out))
    assert all(line[:1] == "[" for line in out.splitlines())  # nothing unprefixed on stdout
    assert "ember launch:" not in err  # no summary when all went well


def test_ranks_are_distinct_and_share_one_coordinator_address(tmp_path, capsys):
    child = script(tmp_path, PRINT_ENVIRONMENT)
    status, out, err, _ = run_launcher(capsys, "-n", "4", "--timeout", BOUND, child)
    assert status == 0, err
    envs = environments(out, 4)
    assert sorted(int(env["EMBER_PROCESS_ID"]) for env in envs) == [0, 1, 2, 3]
    addresses = {env["EMBER_COORDINATOR_ADDRESS"] for env in envs}
    assert len(addresses) == 1
    host, port = addresses.pop().split(":")
    assert host == "127.0.0.1" and 0 < int(port) < 65536


def test_devices_per_process_sets_the_cpu_device_count(tmp_path, capsys):
    child = script(tmp_path, PRINT_ENVIRONMENT)
    argv = ["-n", "2", "--devices-per-process", "4", "--timeout", BOUND, child]
    status, out, err, _ = run_launcher(capsys, *argv)
    assert status == 0, err
    assert [env["EMBER_CPU_DEVICE_COUNT"] for env in environments(out, 2)] == ["4", "4"]


def test_the_programs_arguments_pass_through_even_when_they_look_like_options(tmp_path, capsys):
    child = script(tmp_path, PRINT_ENVIRONMENT)
    argv = ["-n", "1", "--timeout", BOUND, child, "-n", "5", "--timeout", "x", "plain"]
    status, out, err, _ = run_launcher(capsys, *argv)
    assert status == 0, err
    assert lines_of(0, out)[1] == 'args ["-n", "5", "--timeout", "x", "plain"]'


def test_a_module_runs_with_dash_m_and_its_arguments(tmp_path, capsys, monkeypatch):
    script(tmp_path, PRINT_ENVIRONMENT, name="launch_probe_module.py")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    )
    argv = ["-n", "2", "--timeout", BOUND, "-m", "launch_probe_module", "--flag", "value"]
    status, out, err, _ = run_launcher(capsys, *argv)
    assert status == 0, err
    assert [env["EMBER_PROCESS_ID"] for env in environments(out, 2)] == ["0", "1"]
    assert lines_of(1, out)[1] == 'args ["--flag", "value"]'


def test_a_last_line_without_a_newline_still_arrives_whole(tmp_path, capsys):
    child = script(tmp_path, "import sys; sys.stdout.write('no newline')")
    status, out, err, _ = run_launcher(capsys, "-n", "2", "--timeout", BOUND, child)
    assert status == 0, err
    assert sorted(out.splitlines()) == ["[0] no newline", "[1] no newline"]


# ---------------------------------------------------------------------------------------------
# Failures

RANK_1_FAILS = """
    import os, sys, time
    rank = int(os.environ["EMBER_PROCESS_ID"])
    print("started", rank)
    if rank == 1:
        time.sleep(0.3)  # the others are up and sleeping by now
        print("noise before the error", file=sys.stderr)
        {failure}
    time.sleep(60)
"""


def test_the_first_failure_stops_the_others_and_names_the_rank_and_its_error(tmp_path, capsys):
    child = script(
        tmp_path, RANK_1_FAILS.format(failure="raise ValueError('the answer is not 42')")
    )
    status, out, err, elapsed = run_launcher(capsys, "-n", "3", "--timeout", BOUND, child)
    assert status == 1
    assert elapsed < QUICK_S  # the sleeping ranks were stopped, not waited for
    assert "ember launch: rank 1 exited with status 1" in err
    assert "stopped the ranks still running: 0, 2" in err
    summary = err[err.index("rank 1's error") :]
    assert "Traceback (most recent call last):" in summary
    assert "ValueError: the answer is not 42" in summary
    assert "noise before the error" not in summary  # the traceback, not everything before it
    # The summary comes after the children's own output.
    assert err.rstrip().endswith("ValueError: the answer is not 42")


def test_the_failing_childs_exit_status_is_the_launchers(tmp_path, capsys):
    child = script(tmp_path, RANK_1_FAILS.format(failure="print('giving up'); sys.exit(7)"))
    status, _, err, elapsed = run_launcher(capsys, "-n", "2", "--timeout", BOUND, child)
    assert status == 7
    assert elapsed < QUICK_S
    assert "rank 1 exited with status 7; stopped the ranks still running: 0" in err
    # No traceback: the summary shows the last lines of stderr instead.
    assert "rank 1's error (the end of its stderr):\n    noise before the error" in err


def test_a_child_killed_by_a_signal_is_reported_by_name_with_128_plus_the_signal(tmp_path, capsys):
    child = script(tmp_path, RANK_1_FAILS.format(failure="os.kill(os.getpid(), 9)"))
    status, _, err, elapsed = run_launcher(capsys, "-n", "2", "--timeout", BOUND, child)
    assert status == 128 + signal.SIGKILL
    assert elapsed < QUICK_S
    assert "rank 1 was killed by SIGKILL; stopped the ranks still running: 0" in err


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(launch, "TERMINATE_GRACE_S", 1.0)
    child = script(
        tmp_path,
        """
        import os, pathlib, signal, sys, time
        ready = pathlib.Path(sys.argv[1])
        if os.environ["EMBER_PROCESS_ID"] == "0":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            ready.touch()
            time.sleep(60)
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:  # rank 0 ignores SIGTERM now
            time.sleep(0.01)
        sys.exit(3)
        """,
    )
    argv = ["-n", "2", "--timeout", BOUND, child, str(tmp_path / "ready")]
    status, _, err, elapsed = run_launcher(capsys, *argv)
    assert status == 3
    assert "rank 1 exited with status 3; stopped the ranks still running: 0" in err
    assert 1.0 <= elapsed < QUICK_S  # SIGTERM did nothing; SIGKILL came after the grace period


# ---------------------------------------------------------------------------------------------
# --timeout


def test_timeout_stops_everyone_names_the_ranks_still_running_and_exits_124(tmp_path, capsys):
    child = script(
        tmp_path,
        """
        import os, time
        rank = os.environ["EMBER_PROCESS_ID"]
        print("started", rank)
        if rank != "1":
            time.sleep(60)
        """,
    )
    status, out, err, elapsed = run_launcher(capsys, "-n", "3", "--timeout", "1.5", child)
    assert status == launch.TIMED_OUT == 124
    assert 1.5 <= elapsed < QUICK_S
    assert "ember launch: timed out after 1.5 s; stopped the ranks still running: 0, 2" in err
    assert sorted(out.splitlines()) == ["[0] started 0", "[1] started 1", "[2] started 2"]


# ---------------------------------------------------------------------------------------------
# Usage errors


@pytest.mark.parametrize(
    "argv,message",
    [
        ([], "the following arguments are required: -n"),
        (["-n", "0", "{script}"], "argument -n: must be at least 1, not 0"),
        (["-n", "two", "{script}"], "argument -n: expected a whole number, not 'two'"),
        (["-n", "2", "--devices-per-process", "0", "{script}"], "must be at least 1, not 0"),
        (["-n", "2", "--timeout", "0", "{script}"], "must be more than 0 seconds"),
        (["-n", "2"], "name the script to run (or -m module)"),
        (["-n", "2", "{missing}"], "not found"),
        (["-n", "2", "--bogus", "{script}"], "unrecognized arguments: --bogus"),
        (["-n", "2", "-m"], "argument -m: expected one argument"),
        (["-n"], "argument -n: expected one argument"),
    ],
)
def test_bad_arguments_are_usage_errors_with_status_2(tmp_path, capsys, argv, message):
    names = {"script": script(tmp_path, "pass"), "missing": str(tmp_path / "missing.py")}
    status, out, err, _ = run_launcher(capsys, *[word.format(**names) for word in argv])
    assert status == 2
    assert err.startswith("usage: python -m ember launch")
    assert "python -m ember launch: error: " in err and message in err
    assert out == ""


def test_help_describes_the_options_and_exits_0(capsys):
    status, out, _, _ = run_launcher(capsys, "--help")
    assert status == 0
    for word in ("-n N", "--devices-per-process K", "--timeout S", "-m MODULE", "124"):
        assert word in out


@pytest.mark.parametrize(
    "argv,split",
    [
        (["-n", "2", "s.py", "-n", "3"], (["-n", "2"], ["s.py", "-n", "3"])),
        (["-n2", "--timeout=3", "s.py"], (["-n2", "--timeout=3"], ["s.py"])),
        (["-n", "2", "-m", "pkg.mod", "--x"], (["-n", "2", "-m", "pkg.mod"], ["--x"])),
        (["-n", "2", "--", "-odd.py", "a"], (["-n", "2"], ["-odd.py", "a"])),
        (["-n", "2", "--timeout", "5"], (["-n", "2", "--timeout", "5"], [])),
    ],
)
def test_the_launchers_options_end_at_the_program(argv, split):
    assert launch.split_arguments(argv) == split


def test_last_error_is_the_last_traceback_or_else_the_last_lines():
    first = ["Traceback (most recent call last):\n", "  old\n", "KeyError: 1\n"]
    last = ["Traceback (most recent call last):\n", "  new\n", "ValueError: 2\n"]
    assert launch.last_error(["log\n", *first, "more log\n", *last]) == last
    plain = [f"line {i}\n" for i in range(30)]
    assert launch.last_error(plain) == plain[-launch.LAST_LINES_SHOWN :]
    assert launch.last_error([]) == []


def exited(rank: int, returncode: int, stderr: str = "") -> launch.Child:
    """A Child record of a process that ended with ``returncode`` after printing ``stderr``."""
    process = types.SimpleNamespace(returncode=returncode)
    return launch.Child(rank, process, collections.deque(stderr.splitlines(True)), readers=[])


def test_the_summary_also_names_ranks_that_failed_on_their_own():
    children = [
        exited(0, -signal.SIGTERM),
        exited(1, 2, "usage: bad flag\n"),
        exited(2, 0),
        exited(3, -signal.SIGSEGV),
    ]
    summary = launch.failure_summary(children[1], stopped=[0], children=children)
    assert summary.splitlines() == [
        "ember launch: rank 1 exited with status 2; stopped the ranks still running: 0",
        "ember launch: other ranks that failed: 3 (was killed by SIGSEGV)",
        "ember launch: rank 1's error (the end of its stderr):",
        "    usage: bad flag",
    ]
    silent = launch.failure_summary(children[3], stopped=[], children=children[2:])
    assert silent.splitlines()[-1] == "ember launch: rank 3 printed nothing on stderr"
    assert launch.launcher_status(-signal.SIGSEGV) == 128 + signal.SIGSEGV
    assert launch.launcher_status(2) == 2


# ---------------------------------------------------------------------------------------------
# Through `python -m ember launch`, stopping the launcher itself

WAIT_FOREVER = """
    import os, pathlib, sys, time
    pathlib.Path(sys.argv[1], os.environ["EMBER_PROCESS_ID"]).write_text(str(os.getpid()))
    print("ready", flush=True)
    time.sleep(60)
"""


def start_cli(*argv: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ember", "launch", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_lines(stream, count: int, timeout: float) -> list[str]:
    """The next ``count`` lines of ``stream``, failing if they take longer than ``timeout``."""
    found: queue.SimpleQueue = queue.SimpleQueue()

    def reader() -> None:
        for _ in range(count):
            found.put(stream.readline())

    threading.Thread(target=reader, daemon=True).start()
    return [found.get(timeout=timeout) for _ in range(count)]


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_command_line_runs_the_launcher(tmp_path):
    child = script(tmp_path, PRINT_ENVIRONMENT)
    done = subprocess.run(
        [sys.executable, "-m", "ember", "launch", "-n", "2", child, "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(lines_of(r, done.stdout)[0])["EMBER_PROCESS_ID"] for r in (0, 1)] == [
        "0",
        "1",
    ]
    assert lines_of(0, done.stdout)[1] == 'args ["x"]'


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_stopping_the_launcher_stops_its_children(tmp_path, signum):
    child = script(tmp_path, WAIT_FOREVER)
    launcher = start_cli("-n", "2", child, str(tmp_path))
    try:
        # The lines arrive while the children still run: the output streams.
        assert sorted(read_lines(launcher.stdout, 2, timeout=60)) == [
            "[0] ready\n",
            "[1] ready\n",
        ]
        pids = [int((tmp_path / str(rank)).read_text()) for rank in (0, 1)]
        launcher.send_signal(signum)
        status = launcher.wait(timeout=30)
        err = launcher.stderr.read()
    finally:
        launcher.kill()
        launcher.wait(timeout=30)
        launcher.stdout.close()
        launcher.stderr.close()
    assert status == 128 + signum
    assert f"received {signal.Signals(signum).name}; stopped the ranks still running: 0, 1" in err
    deadline = time.monotonic() + 10  # reaped by the launcher, so gone at once; allow a margin
    while any(map(is_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(is_running, pids))


def test_the_coordinator_port_is_chosen_with_a_free_port_above_it_for_the_desk():
    for _ in range(5):
        port = launch.free_port()
        for p in (port, port + 1):  # the service's, and the registration desk's
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))
