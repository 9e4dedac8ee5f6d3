"""docs/kernels.md: its complete example runs as written and prints what the page says."""

from __future__ import annotations

import pathlib

from tests.core.test_readme import python_blocks
from tests.core.util import run_python

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "kernels.md"


def test_the_first_example_runs_and_adds():
    code = python_blocks(GUIDE.read_text())[0]
    assert "pl.pallas_call" in code
    done = run_python(code)
    assert done.returncode == 0, f"docs/kernels.md's first block failed:\n{done.stderr}"
    assert done.stdout.strip() == "[1. 2. 3. 4.]"
