"""``python -m ember launch``: run N processes of one Python program on this machine.

The way to try multi-process ember without a cluster. Each child runs the same script (or
``-m module``) in the same interpreter, with the variables ``ember.distributed.initialize()``
reads: one coordinator address on 127.0.0.1, the number of processes and the child's rank.
Every line a child prints comes back prefixed with its rank. The first child to fail (a
non-zero exit or a signal) stops the others, and the launcher names it, shows its error and
exits with its status; ``--timeout`` bounds the whole run; Ctrl-C, SIGTERM or SIGHUP to the
launcher stops the children too. Every wait here has a deadline or is woken by a child's exit.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import functools
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, TextIO

# The variables ember.distributed.initialize() reads.
COORDINATOR_ADDRESS = "EMBER_COORDINATOR_ADDRESS"
NUM_PROCESSES = "EMBER_NUM_PROCESSES"
PROCESS_ID = "EMBER_PROCESS_ID"
# The CPU plugin's cpu_device_count option, through its environment variable.
CPU_DEVICE_COUNT = "EMBER_CPU_DEVICE_COUNT"

# A stopped child gets SIGTERM, then SIGKILL if it is still running after the grace period.
TERMINATE_GRACE_S = 5.0
KILL_WAIT_S = 5.0
# How long an exited child's output may take to drain: a grandchild can hold its pipes open.
DRAIN_S = 5.0

TIMED_OUT = 124  # as timeout(1)

# Lines of each child's stderr kept for the failure summary (room for a deep traceback), and
# how many of them the summary shows when the child printed no traceback.
STDERR_KEPT_LINES = 200
LAST_LINES_SHOWN = 10

# Signals that stop the launcher, and so its children. The children run in sessions of their
# own (so a grandchild is stopped with its parent), which keeps the terminal's Ctrl-C and
# hangup from reaching them: the launcher passes them on as SIGTERM.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

MESSAGE_PREFIX = "ember launch: "

USAGE = (
    "python -m ember launch -n N [--devices-per-process K] [--timeout S] "
    "(script.py | -m module) [args ...]"
)


@dataclasses.dataclass(frozen=True)
class Request:
    """What to run: ``command`` follows the interpreter (``script.py args`` or ``-m module``)."""

    num_processes: int
    devices_per_process: int | None
    timeout: float | None
    command: list[str]


@dataclasses.dataclass
class Child:
    rank: int
    process: subprocess.Popen
    stderr_tail: collections.deque[str]
    readers: list[threading.Thread]


class LauncherSignalError(Exception):
    """The launcher itself was told to stop (by one of STOP_SIGNALS)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class DeadlinePassedError(Exception):
    """--timeout ran out before every child finished."""


# ---------------------------------------------------------------------------------------------
# The command line


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="python -m ember launch",
        usage=USAGE,
        description="Run N processes of a Python program on this machine, each with "
        f"{COORDINATOR_ADDRESS} (one free port on 127.0.0.1), {NUM_PROCESSES}=N and "
        f"{PROCESS_ID}=its rank, which ember.distributed.initialize() reads. Their output is "
        "prefixed with the rank. When one fails, the others are stopped and the launcher "
        "exits with its status (128+signal when it was killed); --timeout exits with 124.",
        # Abbreviations would make the split between the launcher's options and the
        # program's arguments depend on argparse's guesses.
        allow_abbrev=False,
    )
    cli.add_argument(
        "-n",
        dest="num_processes",
        metavar="N",
        type=_positive_int,
        required=True,
        help="how many processes to start",
    )
    cli.add_argument(
        "--devices-per-process",
        metavar="K",
        type=_positive_int,
        help=f"split each process's CPU into K devices ({CPU_DEVICE_COUNT}=K)",
    )
    cli.add_argument(
        "--timeout",
        metavar="S",
        type=_positive_seconds,
        help="stop every process after S seconds and exit with status 124",
    )
    cli.add_argument("-m", dest="module", help="run a module, as python -m does")
    cli.add_argument("script", nargs="?", help="the Python file to run")
    cli.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    return cli


_OPTIONS_WITH_A_VALUE = ("-n", "--devices-per-process", "--timeout")


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into the launcher's options and the program's words.

    As with ``python`` itself, the launcher's options end at the script (or after ``-m
    module``, or at ``--``): every later word belongs to the program, even one that looks like
    a launcher option. The program's words are ``[script, *args]``, or ``args`` after ``-m``.
    """
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return argv[:index], argv[index + 1 :]
        if word == "-m":
            return argv[: index + 2], argv[index + 2 :]
        if word in _OPTIONS_WITH_A_VALUE:
            index += 2
        elif word.startswith("-") and word != "-":
            index += 1  # another option (--timeout=3 and -n4 included); argparse judges it
        else:
            return argv[:index], argv[index:]
    return argv, []


def parse_request(argv: list[str]) -> Request:
    """The request ``argv`` makes; a usage error exits with status 2, as argparse does."""
    cli = parser()
    options, program = split_arguments(argv)
    namespace = cli.parse_args(options)
    if namespace.module is not None:
        command = ["-m", namespace.module, *program]
    elif not program:
        cli.error("name the script to run (or -m module)")
    elif not os.path.isfile(program[0]):
        cli.error(f"script {program[0]!r} not found")
    else:
        command = program
    return Request(
        num_processes=namespace.num_processes,
        devices_per_process=namespace.devices_per_process,
        timeout=namespace.timeout,
        command=command,
    )


# ---------------------------------------------------------------------------------------------
# Starting the children


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now, nor on the port above it: process 0
    binds both soon after (its coordination service, and the registration desk one above)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as above:
                try:
                    above.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("found no two adjacent free ports on 127.0.0.1 in 100 tries")


def child_environment(
    parent: dict[str, str],
    *,
    rank: int,
    num_processes: int,
    coordinator: str,
    devices_per_process: int | None,
) -> dict[str, str]:
    """The parent's environment plus what tells a child where it stands."""
    env = dict(parent)
    env[COORDINATOR_ADDRESS] = coordinator
    env[NUM_PROCESSES] = str(num_processes)
    env[PROCESS_ID] = str(rank)
    env["PYTHONUNBUFFERED"] = "1"  # lines arrive as they are printed, not when a buffer fills
    if devices_per_process is not None:
        env[CPU_DEVICE_COUNT] = str(devices_per_process)
    return env


class PrefixedOutput:
    """Writes whole lines to the launcher's stdout or stderr, one line at a time."""

    def __init__(self, stdout: TextIO, stderr: TextIO):
        self.stdout = stdout
        self.stderr = stderr
        self._lock = threading.Lock()

    def write(self, stream: TextIO, prefix: str, line: str) -> None:
        with self._lock:
            try:
                stream.write(prefix + line)
                stream.flush()
            except (OSError, ValueError):
                # The launcher's own output is gone (a closed pipe): keep draining the child's
                # pipe all the same, so that it never blocks on a full one.
                pass


def forward_lines(
    pipe: IO[bytes], write: Callable[[str], None], kept: collections.deque[str] | None = None
) -> None:
    """Pass each line from ``pipe`` to ``write`` as it arrives, until the child closes it."""
    with pipe:
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace")
            if not line.endswith("\n"):
                line += "\n"  # the last line of a child that ended without a newline
            write(line)
            if kept is not None:
                kept.append(line)


def report_exit(process: subprocess.Popen, rank: int, exits: queue.SimpleQueue) -> None:
    process.wait()  # woken by the child's exit
    exits.put(rank)


def _thread(target: Callable, *args: object, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


def start_child(
    rank: int,
    command: list[str],
    env: dict[str, str],
    output: PrefixedOutput,
    exits: queue.SimpleQueue,
) -> Child:
    process = subprocess.Popen(
        [sys.executable, *command],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    prefix = f"[{rank}] "
    kept = collections.deque(maxlen=STDERR_KEPT_LINES)
    readers = [
        _thread(
            forward_lines,
            process.stdout,
            functools.partial(output.write, output.stdout, prefix),
            name=f"ember-launch-{rank}-stdout",
        ),
        _thread(
            forward_lines,
            process.stderr,
            functools.partial(output.write, output.stderr, prefix),
            kept,
            name=f"ember-launch-{rank}-stderr",
        ),
    ]
    _thread(report_exit, process, rank, exits, name=f"ember-launch-{rank}-exit")
    return Child(rank=rank, process=process, stderr_tail=kept, readers=readers)


# ---------------------------------------------------------------------------------------------
# Waiting and stopping


def wait_for_first_failure(
    children: list[Child], exits: queue.SimpleQueue, deadline: float | None
) -> Child | None:
    """The first child to fail, or None once all succeeded; DeadlinePassedError if time runs out."""
    for _ in children:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise DeadlinePassedError
        try:
            rank = exits.get(timeout=remaining)
        except queue.Empty:
            raise DeadlinePassedError from None
        child = children[rank]
        if child.process.returncode != 0:
            return child
    return None


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)  # the child leads its own session: its pid is the group's


def _wait_until(processes: list[subprocess.Popen], deadline: float) -> None:
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))


def stop(children: list[Child]) -> list[int]:
    """Stop every child still running (SIGTERM, then SIGKILL after the grace period); returns
    their ranks."""
    running = [child for child in children if child.process.poll() is None]
    for child in running:
        _signal_group(child.process, signal.SIGTERM)
    _wait_until([child.process for child in running], time.monotonic() + TERMINATE_GRACE_S)
    stubborn = [child.process for child in running if child.process.poll() is None]
    for process in stubborn:
        _signal_group(process, signal.SIGKILL)
    _wait_until(stubborn, time.monotonic() + KILL_WAIT_S)
    return [child.rank for child in running]


def drain(children: list[Child], timeout: float = DRAIN_S) -> None:
    """Let the children's last lines through before the launcher speaks."""
    deadline = time.monotonic() + timeout
    for child in children:
        for reader in child.readers:
            reader.join(max(0.0, deadline - time.monotonic()))


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Within, the first of STOP_SIGNALS raises LauncherSignalError; later ones are ignored, since
    stopping the children has deadlines of its own."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can handle signals; whoever called us owns them
        return
    raised = False

    def handler(signum: int, frame: object) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise LauncherSignalError(signum)

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


# ---------------------------------------------------------------------------------------------
# Reporting


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


def launcher_status(returncode: int) -> int:
    """The launcher's exit status for a child's: the same, 128+N for signal N, never 0."""
    if returncode < 0:
        return 128 - returncode
    return returncode or 1


def last_error(lines: list[str]) -> list[str]:
    """The last traceback in a child's stderr, or its last lines when it printed none."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    return lines[starts[-1] :] if starts else lines[-LAST_LINES_SHOWN:]


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) if ranks else "none"


def failure_summary(failed: Child, stopped: list[int], children: list[Child]) -> str:
    lines = [
        f"{MESSAGE_PREFIX}rank {failed.rank} {describe_exit(failed.process.returncode)}; "
        f"stopped the ranks still running: {_ranks(stopped)}"
    ]
    also = [
        f"{child.rank} ({describe_exit(child.process.returncode)})"
        for child in children
        if child is not failed and child.rank not in stopped and child.process.returncode
    ]
    if also:
        lines.append(f"{MESSAGE_PREFIX}other ranks that failed: {', '.join(also)}")
    error = last_error(list(failed.stderr_tail))
    if error:
        lines.append(f"{MESSAGE_PREFIX}rank {failed.rank}'s error (the end of its stderr):")
        lines += ["    " + line.rstrip("\n") for line in error]
    else:
        lines.append(f"{MESSAGE_PREFIX}rank {failed.rank} printed nothing on stderr")
    return "\n".join(lines)


def _say(stream: TextIO, text: str) -> None:
    print(text, file=stream, flush=True)


# ---------------------------------------------------------------------------------------------
# The launcher


def run(request: Request, stdout: TextIO, stderr: TextIO) -> int:
    """Run the request's children to the end; the launcher's exit status."""
    coordinator = f"127.0.0.1:{free_port()}"
    output = PrefixedOutput(stdout, stderr)
    exits: queue.SimpleQueue = queue.SimpleQueue()
    children: list[Child] = []
    deadline = None if request.timeout is None else time.monotonic() + request.timeout
    with stop_signals_raise():
        try:
            for rank in range(request.num_processes):
                env = child_environment(
                    dict(os.environ),
                    rank=rank,
                    num_processes=request.num_processes,
                    coordinator=coordinator,
                    devices_per_process=request.devices_per_process,
                )
                children.append(start_child(rank, request.command, env, output, exits))
            return _finished(wait_for_first_failure(children, exits, deadline), children, stderr)
        except DeadlinePassedError:
            return _timed_out(request.timeout, children, stderr)
        except LauncherSignalError as signalled:
            return _signalled(signalled, children, stderr)
        finally:
            stop(children)  # a no-op unless something unexpected escaped: never leave orphans


def _finished(failed: Child | None, children: list[Child], stderr: TextIO) -> int:
    if failed is None:
        drain(children)
        return 0
    stopped = stop(children)
    drain(children)
    _say(stderr, failure_summary(failed, stopped, children))
    return launcher_status(failed.process.returncode)


def _timed_out(timeout: float, children: list[Child], stderr: TextIO) -> int:
    running = stop(children)
    drain(children)
    _say(
        stderr,
        f"{MESSAGE_PREFIX}timed out after {timeout:g} s; stopped the ranks still running: "
        f"{_ranks(running)}",
    )
    return TIMED_OUT


def _signalled(signalled: LauncherSignalError, children: list[Child], stderr: TextIO) -> int:
    running = stop(children)
    drain(children)
    _say(
        stderr,
        f"{MESSAGE_PREFIX}received {signalled}; stopped the ranks still running: {_ranks(running)}",
    )
    return 128 + signalled.signum


def main(argv: list[str]) -> int:
    """``python -m ember launch ARGV``; returns the exit status."""
    try:
        request = parse_request(argv)
    except SystemExit as exit_:  # argparse ends --help and usage errors by exiting
        return exit_.code if isinstance(exit_.code, int) else 0
    try:
        return run(request, sys.stdout, sys.stderr)
    except LauncherSignalError as signalled:
        # The signal came while the launcher was already stopping the children or reporting
        # (run stopped them on its way out): exit as the signal asks, without a traceback.
        return 128 + signalled.signum
