"""Import the example kernels of ``examples/kernels/`` (a folder of scripts, not a package)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

FOLDER = pathlib.Path(__file__).resolve().parents[2] / "examples" / "kernels"


def load(name: str) -> types.ModuleType:
    """``examples/kernels/<name>.py`` as a module (loaded once per test process)."""
    qualified = f"example_kernels_{name}"
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, FOLDER / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]
