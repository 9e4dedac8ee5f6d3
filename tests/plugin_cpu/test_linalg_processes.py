"""The CPU plugin's LAPACK lowerings seen from whole processes, each started with a deadline:
a batch split over devices, the option that turns the overrides off, a matrix with an infinite
entry (a hang would stall the suite, so it runs apart), and SciPy's LAPACK loading at first
use."""

import os
import subprocess
import sys

import numpy as np

import ember
import ember.numpy as enp
from ember.export import export


def _run(script: str, *args: str, timeout: float = 300, **env: str) -> str:
    """The standard output of ``script`` run in a fresh interpreter with ``env`` set; fails
    the test with its output when it fails."""
    full_env = dict(os.environ, EMBER_PLATFORMS="cpu", **env)
    full_env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


SPLIT_BATCH_SCRIPT = """
import numpy as np, ember
from ember.sharding import NamedSharding, PartitionSpec as P
from ember._src.lax import linalg_factor_primitives as factor
mesh = ember.make_mesh((2,), ("data",))
x = np.random.default_rng(0).normal(size=(4, 5, 5)).astype(np.float32)
a = x @ x.transpose(0, 2, 1) + 5 * np.eye(5, dtype=np.float32)
f = ember.jit(lambda v: factor.cholesky_p.bind(v))
xs = ember.device_put(a, NamedSharding(mesh, P("data")))
compiled = f.lower(xs).compile().as_text()
out = f(xs)
np.testing.assert_allclose(np.asarray(out), np.linalg.cholesky(a), rtol=1e-4, atol=1e-5)
assert "all-gather" not in compiled
assert "f32[2,5,5]" in compiled and "lapack_spotrf_ffi" in compiled
print(out.sharding.spec)
"""


def test_a_batch_split_over_devices_stays_split():
    """Each device factors its own matrices (Shardy's rule for the call keeps the batch split)."""
    out = _run(SPLIT_BATCH_SCRIPT, EMBER_CPU_DEVICE_COUNT="2")
    assert "PartitionSpec('data', None, None)" in out


def test_the_cpu_lapack_option_turns_the_overrides_off():
    script = (
        "import numpy as np, ember\n"
        "from ember._src.lax import linalg_factor_primitives as factor\n"
        "f = ember.jit(lambda v: factor.cholesky_p.bind(v))\n"
        "text = f.lower(np.eye(3, dtype=np.float32)).as_text()\n"
        "print('lapack' in text, np.asarray(f(4 * np.eye(3, dtype=np.float32)))[0, 0])\n"
    )
    assert _run(script, EMBER_CPU_LAPACK="0").split() == ["False", "2.0"]


NOT_FINITE_SCRIPT = """
import numpy as np, ember.numpy as enp
from ember import lax
a = np.stack([np.eye(4, dtype=np.float32)] * 2)
a[1, 2, 0] = np.inf
for name, outs in [
    ("eigh", enp.linalg.eigh(a)),
    ("svd", enp.linalg.svd(a)),
    ("svdvals", [enp.linalg.svd(a, compute_uv=False)]),
    ("eig", enp.linalg.eig(a)),
    ("schur", lax.linalg.schur(a)),
    ("svd complex", enp.linalg.svd(a.astype(np.complex64))),
]:
    for out in outs:
        out = np.asarray(out)
        assert np.isnan(out[1]).all() and np.isfinite(out[0]).all(), name
print("ok")
"""


def test_an_infinite_entry_gives_nan_instead_of_a_hang():
    """LAPACK's iterative routines may never return on an infinite entry (JAX 0.10.2's svd of
    such a matrix hangs): the rules hand them zeros and give that matrix NaN. In a process of
    its own, so that a regression fails by its deadline instead of stalling the suite."""
    assert _run(NOT_FINITE_SCRIPT, timeout=120).strip() == "ok"


LAZY_LAPACK_SCRIPT = """
import sys, numpy as np, ember, ember.numpy as enp
from ember.export import deserialize
np.asarray(enp.ones(3) + 1)
assert "scipy.linalg" not in sys.modules, "a program without linear algebra loaded LAPACK"
exported = deserialize(open(sys.argv[1], "rb").read())
print(np.asarray(exported.call(4 * np.eye(3, dtype=np.float32)))[2, 2])
"""


def test_lapack_loads_at_first_use_even_for_a_program_lowered_elsewhere(tmp_path):
    """SciPy's LAPACK loads with the first program that calls it — also one deserialized in a
    fresh process, which never lowers a linear algebra rule there (uninitialised handlers
    would crash it)."""
    exported = export(ember.jit(enp.linalg.cholesky))(ember.ShapeDtypeStruct((3, 3), np.float32))
    path = tmp_path / "cholesky.bin"
    path.write_bytes(exported.serialize())
    assert _run(LAZY_LAPACK_SCRIPT, str(path), timeout=120).strip() == "2.0"
