"""ember never imports jax: not at import, not while computing."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_importing_and_running_ember_does_not_import_jax(tmp_path):
    code = (
        "import sys, ember, ember.numpy as enp\n"
        "x = enp.arange(4.0)\n"
        "ember.jit(ember.grad(lambda v: enp.sum(v * v)))(x).block_until_ready()\n"
        "ember.vmap(lambda v: v + 1)(x)\n"
        "bad = sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.'))\n"
        "assert not bad, bad\n"
    )
    # A poisoned `jax` first on the path records any attempt to import it, even one that a
    # try/except ImportError would hide.
    marker = tmp_path / "jax-was-imported"
    poisoned = tmp_path / "poison" / "jax"
    poisoned.mkdir(parents=True)
    (poisoned / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise ImportError('ember imported jax')\n"
    )
    path = os.pathsep.join(filter(None, [str(poisoned.parent), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=env)
    assert not marker.exists()


def test_no_source_file_imports_jax():
    pattern = re.compile(r"^\s*(import jax\b|from jax\b|from jax\.|import jax\.)", re.MULTILINE)
    offenders = []
    for folder in ("core", "plugins", "plugin_cpu", "tests", "examples"):
        for path in (ROOT / folder).rglob("*.py"):
            if pattern.search(path.read_text()):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
