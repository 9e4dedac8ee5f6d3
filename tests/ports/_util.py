"""Helpers for the ports of JAX's tutorials and examples.

A port keeps the program's code as JAX wrote it, with only the imports changed; each ``print``
call inside the program records its arguments instead, and the test compares the recorded
numbers with the ones JAX printed for the same code (pinned below each port as literals).
"""

import contextlib
import io
import re

import numpy as np

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_TIMING = re.compile(r"\d+\.\d+ sec")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


class Recorder:
    """What a ported program prints (its ``print``) and the errors it shows on purpose
    (``shows_error``: the exception's type name is printed, its message kept)."""

    def __init__(self):
        self.record = []
        self.messages = []

    def print(self, *args):
        # a traced value has no numbers to compare: it is recorded as the text print shows
        self.record.append(
            tuple(str(a) if type(a).__name__.endswith("Tracer") else a for a in args)
        )

    def shows_error(self, e):
        self.print(type(e).__name__)
        self.messages.append(str(e))


class _StdoutLines(io.TextIOBase):
    """What the library itself prints (``debug.print``, ``visualize_array_sharding``),
    recorded line by line, in order, as ``stdout: ...``."""

    def __init__(self, recorder):
        self.recorder = recorder

    def write(self, text):
        for line in text.splitlines():
            self.recorder.print(f"stdout: {line}")
        return len(text)


def record_program(run_cells):
    """The record of ``run_cells(print, shows_error)``, what the library prints included."""
    recorder = Recorder()
    with contextlib.redirect_stdout(_StdoutLines(recorder)):
        run_cells(recorder.print, recorder.shows_error)
    return recorder


def plain(value):
    """Turns recorded values into nested Python lists/tuples of floats, ints, bools, strings."""
    if isinstance(value, str | bool | int | float | complex) or value is None:
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        kind = list if isinstance(value, list) else tuple  # named tuples become tuples
        return kind(plain(v) for v in value)
    arr = np.asarray(value)
    if arr.dtype == object:  # not an array: a treedef, a key path, ... compared as text
        return str(value)
    return arr.item() if arr.ndim == 0 else arr.tolist()


def assert_same(got, expected, rtol=1e-5, atol=1e-6, path="out"):
    """Compares a recorded structure with JAX's: strings/bools exactly, numbers to tolerance."""
    got = plain(got)
    if isinstance(expected, dict):
        assert isinstance(got, dict) and set(got) == set(expected), path
        for k in expected:
            assert_same(got[k], expected[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(expected, str | bool) or expected is None:
        if isinstance(got, str):  # object addresses and timings differ from run to run
            got, expected = _ADDRESS.sub("", got), _ADDRESS.sub("", expected)
            got, expected = _TIMING.sub("_ sec", got), _TIMING.sub("_ sec", expected)
            # printed floats are compared as numbers, the words around them as text
            words = _NUMBER.split(got), _NUMBER.split(expected)
            assert words[0] == words[1], f"{path}: {got!r} != {expected!r}"
            numbers = [float(v) for v in _NUMBER.findall(got)]
            wanted = [float(v) for v in _NUMBER.findall(expected)]
            np.testing.assert_allclose(numbers, wanted, rtol=rtol, atol=atol, err_msg=path)
            return
        assert got == expected, f"{path}: {got!r} != {expected!r}"
    elif isinstance(expected, tuple | list) and not _numeric(expected):
        assert isinstance(got, tuple | list) and len(got) == len(expected), path
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_same(g, e, rtol, atol, f"{path}[{i}]")
    else:
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(expected), rtol=rtol, atol=atol, err_msg=path
        )


def _numeric(seq):
    """Whether a recorded tuple/list is one array's values (not several printed things)."""
    flat = all(
        isinstance(v, int | float | complex) or (isinstance(v, list) and _numeric(v)) for v in seq
    )
    try:
        return flat and np.asarray(seq).dtype != object
    except ValueError:  # ragged lists are several things
        return False


class _Flag:
    def __init__(self, value):
        self.value = value


class flags:  # noqa: N801 - stands in for absl's module of that name
    """absl.flags as the examples use it: ``DEFINE_x(name, default, help).value``."""

    @staticmethod
    def _define(name, default, help):
        return _Flag(default)

    DEFINE_boolean = DEFINE_float = DEFINE_integer = DEFINE_string = _define
