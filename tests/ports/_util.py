"""Helpers for the ports of JAX's tutorials and examples.

A port keeps the program's code as JAX wrote it, with only the imports changed; each ``print``
call inside the program records its arguments instead, and the test compares the recorded
numbers with the ones JAX printed for the same code (pinned below each port as literals).
"""

import numpy as np


def plain(value):
    """Turns recorded values into nested Python lists/tuples of floats, ints, bools, strings."""
    if isinstance(value, str | bool | int | float | complex) or value is None:
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(plain(v) for v in value)
    arr = np.asarray(value)
    return arr.item() if arr.ndim == 0 else arr.tolist()


def assert_same(got, expected, rtol=1e-5, atol=1e-6, path="out"):
    """Compares a recorded structure with JAX's: strings/bools exactly, numbers to tolerance."""
    got = plain(got)
    if isinstance(expected, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(expected), path
        for k in expected:
            assert_same(got[k], expected[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(expected, str | bool) or expected is None:
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
    return all(isinstance(v, int | float | complex) or (isinstance(v, list) and _numeric(v))
               for v in seq)
