"""Helpers shared by the suites: finite differences, NumPy comparisons, fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np

import ember.numpy as enp


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with extra environment variables (5-minute cap)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def run_ok(args: list[str], cwd: object = None, **env: str) -> str:
    """Run the interpreter with ``args`` (a script and its arguments, or ``-c`` and code)
    with extra environment variables (5-minute cap); it must succeed. Its standard output."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    return done.stdout


def numerical_gradient(f, args, argnum=0, eps=1e-3):
    """Central finite differences of the scalar function ``f`` in float64."""
    args = [np.asarray(a, np.float64) for a in args]
    x = args[argnum]
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[argnum][index] += eps
        minus[argnum][index] -= eps
        grad[index] = (float(f(*plus)) - float(f(*minus))) / (2 * eps)
    return grad


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def assert_matches_numpy(case, *, rtol=1e-5, atol=1e-5, equal_nan=True):
    """``case(module)`` gives the same shape and values with ``ember.numpy`` as with NumPy
    (whose RuntimeWarnings, e.g. about all-NaN rows, are silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = case(np)
    got = case(enp)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_same_multiset(actual, expected, tol):
    """Eigenvalues and roots come in no particular order: pair each expected one with its
    nearest unused actual one."""
    remaining = list(np.asarray(actual).ravel())
    assert len(remaining) == np.size(expected)
    for value in np.asarray(expected).ravel():
        distances = [abs(r - value) for r in remaining]
        nearest = int(np.argmin(distances))
        assert distances[nearest] <= tol * max(1.0, abs(value)), (actual, expected)
        remaining.pop(nearest)


def skip_without_ml_dtypes(dtype_name: str) -> None:
    """Skips the calling test when ``dtype_name`` (bfloat16, float8_*) needs ml_dtypes, which
    only comes with jaxlib: the reference environment runs without it."""
    import pytest

    if dtype_name in ("float16", "float32", "float64"):
        return
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        pytest.skip(f"{dtype_name} needs ml_dtypes, which is not installed")
