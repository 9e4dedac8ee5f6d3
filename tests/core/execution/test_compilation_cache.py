"""The persistent compilation cache (execution/compilation_cache.py).

In this process: ``compile_cached`` over a backend that stores and loads programs (the
reference backend with serialization added), so every path (hit, miss, thresholds, host
callbacks, damaged entries, unusable directories, eviction) is checked with real programs.
Across processes, on the CPU plugin: a jitted function compiled in one process is loaded, not
compiled, by the next; a damaged entry is replaced; two processes writing at once leave a
valid cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import compilation_cache
from ember._src.config import config
from ember._src.execution import cache_store, compilation_cache as cache_impl
from ember._src.execution.compiled import _lower_on_one_device
from ember._src.reference.backend import ReferenceBackend
from ember.extend import Computation, Executable

# --------------------------------------------------------------------------------------------
# A backend that can store its programs


INCOMPRESSIBLE = np.random.default_rng(0).bytes(400)  # entries of a realistic size


class StoredExecutable(Executable):
    """A reference executable that serializes to a recognisable blob."""

    def __init__(self, inner: Executable, name: str):
        self.inner = inner
        self.name = name

    def execute(self, args):
        return self.inner.execute(args)

    def serialize(self) -> bytes:
        return b"program " + self.name.encode() + b" " + INCOMPRESSIBLE


class StoringBackend(ReferenceBackend):
    """The reference backend, with the cache's optional methods and a count of compiles."""

    def __init__(self, fingerprint: bytes | None = b"storing backend v1"):
        super().__init__()
        self.fingerprint = fingerprint
        self.compiles = 0
        self.loads = 0

    def cache_fingerprint(self, computation):
        return self.fingerprint

    def compile(self, computation):
        self.compiles += 1
        return StoredExecutable(super().compile(computation), computation.name)

    def deserialize_executable(self, computation, blob):
        if not blob.startswith(b"program " + computation.name.encode()):
            raise ember.errors.CompileError(f"not a serialized {computation.name}")
        self.loads += 1
        return StoredExecutable(super().compile(computation), computation.name)


def computation_of(fn, *args, backend, name="f") -> Computation:
    closed = ember.make_jaxpr(fn)(*args)
    return Computation(name, closed, devices=backend.devices()[:1], lower=_lower_on_one_device)


def run(executable, backend, *args):
    buffers = [backend.buffer_from_numpy(a, ember.typeof(a), None) for a in args]
    return [backend.buffer_to_numpy(b) for b in executable.execute(buffers)]


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh cache directory in use, every program worth storing, counters at 0."""
    directory = tmp_path / "cache"
    compilation_cache.reset_stats()
    compilation_cache.reset_cache()
    with (
        config.option("compilation_cache_dir", str(directory)),
        config.option("persistent_cache_min_compile_time_secs", 0.0),
    ):
        yield directory
    compilation_cache.reset_stats()
    compilation_cache.reset_cache()


def entries(directory) -> list[str]:
    if not directory.exists():
        return []
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(cache_store.SUFFIX))


def double_plus_one(x):
    return x * 2.0 + 1.0


X = np.arange(4, dtype=np.float32)


# --------------------------------------------------------------------------------------------
# In this process


def test_a_miss_compiles_and_stores_and_the_next_compile_loads(cache_dir):
    backend = StoringBackend()
    first = cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert compilation_cache.stats() == {
        "hits": 0, "misses": 1, "writes": 1, "write_skipped": 0, "errors": 0, "evictions": 0,
    }  # fmt: skip
    assert len(entries(cache_dir)) == 1 and entries(cache_dir)[0].startswith("f-")
    second = cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert (backend.compiles, backend.loads) == (1, 1)
    assert compilation_cache.stats()["hits"] == 1
    np.testing.assert_array_equal(run(second, backend, X)[0], X * 2 + 1)
    np.testing.assert_array_equal(run(first, backend, X)[0], X * 2 + 1)
    assert compilation_cache.is_initialized()


def test_without_a_directory_nothing_is_looked_up(tmp_path):
    backend = StoringBackend()
    compilation_cache.reset_stats()
    compilation_cache.reset_cache()
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert compilation_cache.stats()["misses"] == 0 and not compilation_cache.is_initialized()


def test_a_backend_without_a_fingerprint_is_never_cached(cache_dir):
    backend = StoringBackend(fingerprint=None)
    for _ in range(2):
        cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert backend.compiles == 2 and not cache_dir.exists()
    assert set(compilation_cache.stats().values()) == {0}


def test_the_key_covers_the_program_and_the_backend_fingerprint(cache_dir):
    backend = StoringBackend()
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    cache_impl.compile_cached(computation_of(lambda x: x * 3.0, X, backend=backend))
    cache_impl.compile_cached(computation_of(double_plus_one, X[:2], backend=backend))
    other_version = StoringBackend(fingerprint=b"storing backend v2")
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=other_version))
    assert len(entries(cache_dir)) == 4 and compilation_cache.stats()["hits"] == 0
    key = cache_impl.cache_key("module @f {}", b"fp")
    assert key == cache_impl.cache_key("module @f {}", "fp") and len(key) == 64
    assert key != cache_impl.cache_key("module @f {}", b"fq")
    assert key != cache_impl.cache_key("module @f {}fp", b"")  # parts cannot run together


def test_the_directory_may_be_set_after_programs_were_compiled(tmp_path):
    backend = StoringBackend()
    compilation_cache.reset_stats()
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    directory = tmp_path / "late" / "cache"  # parents are created too
    with config.option("persistent_cache_min_compile_time_secs", 0.0):
        compilation_cache.set_cache_dir(str(directory))
        try:
            cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
            cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
        finally:
            compilation_cache.set_cache_dir(None)
    assert backend.compiles == 2 and backend.loads == 1 and len(entries(directory)) == 1
    assert config.read("jax_compilation_cache_dir") is None  # JAX's spelling is the same option


def test_programs_below_the_thresholds_are_not_stored(cache_dir):
    backend = StoringBackend()
    with config.option("persistent_cache_min_compile_time_secs", 60.0):
        cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    with config.option("persistent_cache_min_entry_size_bytes", 10_000):
        cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    with config.option("compilation_cache_max_size", 100):  # larger than the whole cache
        cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert entries(cache_dir) == []
    assert compilation_cache.stats()["misses"] == 3
    assert compilation_cache.stats()["write_skipped"] == 3


def test_a_program_with_host_callbacks_is_never_stored(cache_dir):
    backend = StoringBackend()
    computation = computation_of(double_plus_one, X, backend=backend)
    computation.as_text(backend.platform)
    computation.host_callbacks.append(print)  # as a lowering of debug.print would
    cache_impl.compile_cached(computation)
    assert entries(cache_dir) == [] and backend.compiles == 1
    assert compilation_cache.stats()["write_skipped"] == 1
    assert compilation_cache.stats()["misses"] == 0  # not even looked up


def test_only_process_0_of_a_job_writes(cache_dir, monkeypatch):
    backend = StoringBackend()
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    monkeypatch.setattr(cache_impl.multiprocess, "this_process", lambda: 1)
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))  # reads
    cache_impl.compile_cached(computation_of(lambda x: x - 1.0, X, backend=backend))
    assert compilation_cache.stats()["hits"] == 1
    assert compilation_cache.stats()["write_skipped"] == 1 and len(entries(cache_dir)) == 1


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda data: data[: len(data) // 2], "payload bytes"),
        (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "checksum"),
        (lambda data: b"", "shorter than"),
        (lambda data: b"garbage" * 20, "ember cache header"),
        (
            lambda data: cache_store.pack(b"not a program", 0.5, compress=False),
            "not a serialized f",  # intact entry the backend refuses to load
        ),
    ],
)
def test_a_damaged_entry_is_reported_once_recompiled_and_replaced(cache_dir, damage, reason):
    backend = StoringBackend()
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    (path,) = cache_dir.iterdir()
    good = path.read_bytes()
    path.write_bytes(damage(good))
    with pytest.warns(UserWarning, match=reason) as caught:
        executable = cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert len(caught) == 1 and path.name in str(caught[0].message)
    np.testing.assert_array_equal(run(executable, backend, X)[0], X * 2 + 1)
    assert backend.compiles == 2 and path.read_bytes()[60:] == good[60:]  # replaced
    stats = compilation_cache.stats()
    assert (stats["errors"], stats["writes"], stats["hits"]) == (1, 2, 0)
    path.write_bytes(damage(good))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once: silent the second time
        cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert compilation_cache.stats()["hits"] == 1


def test_an_unusable_directory_is_reported_once_and_programs_still_run(tmp_path):
    backend = StoringBackend()
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("")
    compilation_cache.reset_stats()
    compilation_cache.reset_cache()
    for path in (a_file, a_file / "cache"):  # a file instead of a directory; a file as parent
        with (
            config.option("compilation_cache_dir", str(path)),
            config.option("persistent_cache_min_compile_time_secs", 0.0),
        ):
            with pytest.warns(UserWarning, match="cannot use .* as the cache directory"):
                executable = cache_impl.compile_cached(
                    computation_of(double_plus_one, X, backend=backend)
                )
            np.testing.assert_array_equal(run(executable, backend, X)[0], X * 2 + 1)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    assert compilation_cache.stats()["errors"] == 4 and backend.compiles == 4


def test_a_failed_write_is_reported_once_and_the_program_still_runs(cache_dir, monkeypatch):
    def disk_full(self, file_name, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_store.CacheDirectory, "write", disk_full)
    backend = StoringBackend()
    with pytest.warns(UserWarning, match="No space left on device"):
        executable = cache_impl.compile_cached(computation_of(double_plus_one, X, backend=backend))
    np.testing.assert_array_equal(run(executable, backend, X)[0], X * 2 + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache_impl.compile_cached(computation_of(lambda x: x + 5.0, X, backend=backend))
    assert compilation_cache.stats()["errors"] == 2 and compilation_cache.stats()["writes"] == 0


def test_the_size_bound_evicts_the_least_recently_used_entries(cache_dir):
    backend = StoringBackend()
    programs = [lambda x: x + 1.0, lambda x: x + 2.0, lambda x: x + 3.0]
    names = []
    for i, fn in enumerate(programs[:2]):
        cache_impl.compile_cached(computation_of(fn, X, backend=backend, name=f"p{i}"))
        names.append(next(n for n in entries(cache_dir) if n.startswith(f"p{i}-")))
        os.utime(cache_dir / names[-1], (1_000_000 + i, 1_000_000 + i))  # p0 older than p1
    cache_impl.compile_cached(computation_of(programs[0], X, backend=backend, name="p0"))  # hit
    size = (cache_dir / names[0]).stat().st_size
    with config.option("compilation_cache_max_size", 2 * size + size // 2):
        cache_impl.compile_cached(computation_of(programs[2], X, backend=backend, name="p2"))
    # p1 is the least recently used now (p0 was just loaded): it goes, p0 and p2 stay.
    assert [n.split("-")[0] for n in entries(cache_dir)] == ["p0", "p2"]
    assert compilation_cache.stats()["evictions"] == 1


def test_jit_goes_through_the_cache_and_keeps_its_in_memory_caches(cache_dir):
    # On the reference backend (no fingerprint) nothing is stored, and jit is unchanged.
    f = ember.jit(double_plus_one, device=ember.devices("reference")[0])
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(X))), X * 2 + 1)
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(X))), X * 2 + 1)
    assert compilation_cache.stats()["misses"] == 0 and not cache_dir.exists()


def test_public_names_match_jax_paths():
    from ember.experimental.compilation_cache import compilation_cache as jax_path

    assert jax_path.set_cache_dir is compilation_cache.set_cache_dir
    assert ember.compilation_cache.stats is compilation_cache.stats


# --------------------------------------------------------------------------------------------
# Across processes, on the CPU plugin

WORKER = textwrap.dedent(
    """
    import json, sys
    import ember, ember.numpy as jnp
    from ember import compilation_cache

    ember.config.update("persistent_cache_min_compile_time_secs", 0.0)
    ember.config.update("compilation_cache_dir", sys.argv[1])

    @ember.jit
    def step(w, x):
        return jnp.tanh(x @ w).sum(axis=0) * 0.5

    w = jnp.ones((8, 4), jnp.float32) * 0.1
    x = jnp.arange(24, dtype=jnp.float32).reshape(3, 8)
    print(json.dumps({"value": step(w, x).tolist(), "stats": compilation_cache.stats()}))
    """
)


def cpu_plugin_available() -> bool:
    try:
        import ember_plugin_cpu  # noqa: F401
    except ImportError:
        return False
    return True


needs_cpu = pytest.mark.skipif(not cpu_plugin_available(), reason="needs the CPU plugin")
slow = pytest.mark.slow  # fresh processes: seconds each


def start_worker(directory):
    env = {**os.environ, "EMBER_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(process) -> tuple[dict, str]:
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def run_worker(directory) -> tuple[dict, str]:
    return finish(start_worker(directory))


def expected_step() -> list[float]:
    w = np.full((8, 4), 0.1, np.float32)
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    return (np.tanh(x @ w).sum(axis=0) * 0.5).tolist()


@slow
@needs_cpu
def test_a_second_process_loads_what_the_first_compiled_and_a_damaged_entry_is_replaced(
    tmp_path,
):
    first, _ = run_worker(tmp_path)
    assert first["stats"]["misses"] >= 1 and first["stats"]["writes"] == first["stats"]["misses"]
    np.testing.assert_allclose(first["value"], expected_step(), rtol=1e-6)
    second, _ = run_worker(tmp_path)
    assert second["stats"]["hits"] == first["stats"]["misses"]
    assert second["stats"]["misses"] == 0 and second["stats"]["writes"] == 0
    np.testing.assert_allclose(second["value"], expected_step(), rtol=1e-6)

    (step,) = [p for p in tmp_path.iterdir() if p.name.startswith("jit_step-")]
    good = step.read_bytes()
    step.write_bytes(good[: len(good) // 3])
    third, err = run_worker(tmp_path)
    assert "damaged" in err and step.name in err
    assert third["stats"]["errors"] == 1 and third["stats"]["writes"] == 1
    np.testing.assert_allclose(third["value"], expected_step(), rtol=1e-6)
    assert len(step.read_bytes()) == len(good)  # replaced by a whole entry
    fourth, err = run_worker(tmp_path)
    assert fourth["stats"]["hits"] == first["stats"]["misses"] and "damaged" not in err


@slow
@needs_cpu
def test_two_processes_writing_at_once_leave_a_valid_cache(tmp_path):
    workers = [start_worker(tmp_path) for _ in range(2)]
    results = [finish(w)[0] for w in workers]
    for result in results:
        np.testing.assert_allclose(result["value"], expected_step(), rtol=1e-6)
    names = os.listdir(tmp_path)
    assert all(n.endswith(cache_store.SUFFIX) for n in names)  # no temporary file left
    for name in names:
        cache_store.unpack((tmp_path / name).read_bytes())  # every entry whole
    after, err = run_worker(tmp_path)
    assert after["stats"]["misses"] == 0 and after["stats"]["hits"] >= 1 and not err.strip()
