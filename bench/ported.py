"""The example kernels of examples/kernels/, loaded as they are or with JAX's imports.

Pallas kernels port between ember and JAX by changing imports, so the JAX side of the
Pallas benchmark is the example module itself, loaded a second time with each ``import
ember...`` line rewritten to the JAX module of the same name. Only import lines change:
the kernels, their grids and their BlockSpecs are the very same code on both sides.
"""

from __future__ import annotations

import pathlib
import re
import types

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples" / "kernels"

# ``import ember.numpy as enp`` -> ``import jax.numpy as enp``; ``import ember`` ->
# ``import jax as ember`` (so ``ember.custom_vjp`` means ``jax.custom_vjp``); ``from ember
# import lax`` -> ``from jax import lax``.
_IMPORT_AS = re.compile(r"^import ember((?:\.\w+)*) as (\w+)$", re.MULTILINE)
_IMPORT = re.compile(r"^import ember$", re.MULTILINE)
_FROM = re.compile(r"^from ember((?:\.\w+)*) import ", re.MULTILINE)


def jax_source(source: str) -> str:
    """``source`` with every ``import ember...`` line naming the JAX module instead."""
    source = _IMPORT_AS.sub(r"import jax\1 as \2", source)
    source = _IMPORT.sub("import jax as ember", source)
    return _FROM.sub(r"from jax\1 import ", source)


def _module(name: str, source: str, prefix: str) -> types.ModuleType:
    path = EXAMPLES / f"{name}.py"
    module = types.ModuleType(f"{prefix}_{name}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def load(name: str) -> types.ModuleType:
    """``examples/kernels/<name>.py`` as it is (ember)."""
    return _module(name, (EXAMPLES / f"{name}.py").read_text(), "ember_kernels")


def load_with_jax(name: str) -> types.ModuleType:
    """``examples/kernels/<name>.py`` executed with JAX's modules in place of ember's."""
    return _module(name, jax_source((EXAMPLES / f"{name}.py").read_text()), "jax_kernels")
