"""The ``cuda`` platform on a real NVIDIA GPU (the cuda tox env: ``tox -e cuda``). Every test
skips, with the reason the backend gave, where the platform cannot start.

Each option test starts ember in a subprocess of its own: XLA reads the options once, when
the client is created."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import EmberError, ExecutionError
from tests.plugin_cuda.util import run_ember


@pytest.fixture(scope="module")
def gpus():
    try:
        return ember.devices("cuda")
    except EmberError as exc:
        pytest.skip(f"no cuda platform here: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def gpu(gpus):
    return gpus[0]


def test_devices_report_their_kind_and_memory(gpus):
    for device in gpus:
        assert device.platform == "cuda"
        assert device.device_kind.startswith("NVIDIA"), device.device_kind
        stats = device.memory_stats()
        assert stats["bytes_limit"] > 2**30 and 0 <= stats["bytes_in_use"] <= stats["bytes_limit"]


def test_a_compiled_program_matches_numpy(gpu, rng):
    # elementwise ops fuse into a generated kernel: this compiles PTX with ptxas
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((512, 128), dtype=np.float32)
    f = ember.jit(lambda a, b: enp.tanh(a @ b) * 2 + 1, device=gpu)
    out = f(a, b)
    assert gpu in out.devices()
    np.testing.assert_allclose(np.asarray(out), np.tanh(a @ b) * 2 + 1, rtol=2e-3, atol=2e-3)


def test_bfloat16_matmul(gpu, rng):
    a = rng.standard_normal((64, 64), dtype=np.float32)
    out = ember.jit(lambda a: a.astype(enp.bfloat16) @ a.astype(enp.bfloat16), device=gpu)(a)
    assert out.dtype == enp.bfloat16
    np.testing.assert_allclose(np.asarray(out, np.float32), a @ a, rtol=5e-2, atol=0.5)


def test_a_host_callback_runs_inside_a_gpu_program(gpu):
    # xla_ffi_python_gpu_callback: the handler registered from jax-cuda12-plugin
    def host_cube(x):
        return np.asarray(x) ** 3

    def f(x):
        shape = ember.ShapeDtypeStruct(x.shape, x.dtype)
        return ember.pure_callback(host_cube, shape, x * 2) + 1

    out = ember.jit(f, device=gpu)(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), (np.arange(4) * 2) ** 3 + 1)


def test_donation_frees_the_input(gpu):
    f = ember.jit(lambda x: x + 1, donate_argnums=0, device=gpu)
    x = ember.device_put(np.zeros(1 << 20, np.float32), gpu)
    y = f(x)
    assert x.is_deleted() and float(y[0]) == 1.0
    with pytest.raises(ExecutionError, match="deleted or donated"):
        f(x)


def test_every_gpu_computes(gpus):
    for device in gpus:
        x = ember.device_put(np.arange(4, dtype=np.float32), device)
        np.testing.assert_array_equal(np.asarray(x * 2), [0, 2, 4, 6])


STATS = textwrap.dedent(
    """
    import json, ember, numpy as np
    devices = ember.devices("cuda")
    x = ember.device_put(np.ones(1024, np.float32), devices[0]) * 2
    print(json.dumps({"count": len(devices), "stats": devices[0].memory_stats(),
                      "sum": float(x.sum())}))
    """
)


def started_with(_gpu, **env) -> dict:
    """What STATS prints from a process started with ``env`` (``_gpu``: skips without one)."""
    done = run_ember(["-c", STATS], None, EMBER_PLATFORMS="cuda", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_memory_fraction_sets_the_allocators_limit(gpu):
    quarter = started_with(gpu, EMBER_CUDA_MEMORY_FRACTION="0.25")["stats"]["bytes_limit"]
    half = started_with(gpu, EMBER_CUDA_MEMORY_FRACTION="0.5")["stats"]["bytes_limit"]
    assert half / quarter == pytest.approx(2, rel=0.05)


def test_the_platform_allocator_and_no_preallocation_still_compute(gpu):
    for env in (
        {"EMBER_CUDA_ALLOCATOR": "platform"},
        {"EMBER_CUDA_ALLOCATOR": "cuda_async"},
        {"EMBER_CUDA_PREALLOCATE": "false"},
    ):
        assert started_with(gpu, **env)["sum"] == 2048.0, env


def test_visible_devices_choose_the_gpus(gpus):
    assert started_with(gpus[0], EMBER_CUDA_VISIBLE_DEVICES="0")["count"] == 1
    done = run_ember(
        ["-c", STATS],
        None,
        EMBER_PLATFORMS="cuda",
        EMBER_CUDA_VISIBLE_DEVICES=str(len(gpus)),
    )
    assert f"GPU {len(gpus)} does not exist; this process sees {len(gpus)} GPU(s)" in done.stderr


TOO_BIG = textwrap.dedent(
    """
    import ember, numpy as np
    from ember.errors import OutOfMemoryError
    gpu = ember.devices("cuda")[0]
    limit = gpu.memory_stats()["bytes_limit"]
    try:
        ember.device_put(np.zeros(2 * limit, np.uint8), gpu)
    except OutOfMemoryError as exc:
        print("OutOfMemoryError", exc)
    """
)


def test_an_array_larger_than_the_gpu_is_an_out_of_memory_error_naming_it(gpu):
    done = run_ember(
        ["-c", TOO_BIG], None, EMBER_PLATFORMS="cuda", EMBER_CUDA_MEMORY_FRACTION="0.02"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OutOfMemoryError"), done.stdout
    assert "has no room for u8[" in done.stdout and "bytes are in use" in done.stdout


def test_the_doctor_shows_the_gpus_and_the_cuda_parts(gpu):
    done = run_ember(["-m", "ember", "doctor"], None, EMBER_PLATFORMS="cuda")
    assert done.returncode == 0, done.stdout
    assert "NVIDIA driver supports CUDA 12." in done.stdout
    assert gpu.device_kind in done.stdout
