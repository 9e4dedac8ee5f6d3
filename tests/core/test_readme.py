"""The README's code runs as written, and the demo it points to finishes cleanly."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from tests.core.util import run_python

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def test_readme_has_python_blocks():
    assert python_blocks(README.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_blocks(README.read_text()))))
def test_readme_python_block_runs(index):
    code = python_blocks(README.read_text())[index]
    done = run_python(code)
    assert done.returncode == 0, f"README python block {index} failed:\n{done.stderr}"


@pytest.mark.slow
def test_readme_first_block_computes_the_gradient():
    # Run the block, then check what it computed against the gradient written out by hand.
    check = """
import numpy as np
t = np.tanh(x.astype(np.float64) @ w)
expected = (x.T @ (2 * (t - y) * (1 - t**2))) / y.size
np.testing.assert_allclose(np.asarray(grad_step(w, x, y)), expected, rtol=1e-4, atol=1e-6)
per = np.asarray(per_example(w, x, y))
for i in range(x.shape[0]):
    ti = np.tanh(x[i : i + 1].astype(np.float64) @ w)
    gi = x[i : i + 1].T @ (2 * (ti - y[i : i + 1]) * (1 - ti**2)) / y.shape[1]
    np.testing.assert_allclose(per[i], gi, rtol=1e-4, atol=1e-6)
print("checked")
"""
    done = run_python(python_blocks(README.read_text())[0] + check)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "checked"
    assert "{ lambda" in done.stdout  # the jaxpr is printed


@pytest.mark.slow
def test_demo_runs_with_fewer_epochs_than_its_default():
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_mlp_digits.py"), "--epochs", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", done.stdout).group(1))
    assert 0.5 < accuracy <= 1.0  # one epoch already learns far better than chance (0.1)
