"""The plugin installed on a machine that cannot use it: ``import ember`` and the other
platforms are unaffected, ``python -m ember doctor`` shows the plugin with the real reason
within seconds, and ``EMBER_PLATFORMS=cuda`` fails with that reason. Each test runs Python
in a subprocess with the plugin installed and, where it matters, a stand-in NVIDIA driver
first on the library path."""

from __future__ import annotations

import textwrap
import time

import pytest
from ember_plugin_cuda import driver, libraries

from tests.plugin_cuda.util import run_ember

COMPUTE = "import ember.numpy as enp; print(enp.arange(3.0) * 2)"


def doctor(site, **kwargs):
    started = time.monotonic()
    done = run_ember(["-m", "ember", "doctor"], site, **kwargs)
    return done, time.monotonic() - started


def platform_line(output: str) -> str:
    """The doctor's line under platform cuda: its status message."""
    lines = output.splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.startswith("  cuda ") and "priority" in line
    )
    return lines[at + 1].strip()


def test_doctor_shows_the_plugin_and_no_visible_gpu_within_seconds(
    installed_plugin, fake_driver_dir
):
    done, took = doctor(installed_plugin, driver_dir=fake_driver_dir, FAKE_CUDA_COUNT="0")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "  cuda         ok            ember-plugin-cuda 0.1.0  [ember_plugin_cuda.plugin]" in (
        done.stdout
    )
    assert "cuda         failed           plugin cuda, priority 500 aliases gpu" in done.stdout
    assert platform_line(done.stdout).startswith(
        "BackendError: No visible GPU devices: the NVIDIA driver is loaded but sees no GPU"
    )
    assert (
        "platform 'cuda' failed to initialise: BackendError: No visible GPU devices"
        in (done.stdout.split("problems (")[1])
    )
    # the other platforms still work
    assert "  cpu          ok" in done.stdout or "cpu" not in done.stdout.split("platforms")[1]
    assert "  reference    ok" in done.stdout
    assert took < 15, f"the doctor took {took:.1f} s"


def test_doctor_names_the_drivers_error(installed_plugin, fake_driver_dir):
    done, _ = doctor(installed_plugin, driver_dir=fake_driver_dir, FAKE_CUDA_INIT="100")
    assert platform_line(done.stdout) == (
        "BackendError: No visible GPU devices: cuInit failed: CUDA_ERROR_NO_DEVICE (100): no "
        "CUDA-capable device is detected" + missing_wheels_note()
    )


def missing_wheels_note() -> str:
    try:
        libraries.pjrt_library()
    except libraries.MissingCudaPartError:
        return (
            "; the CUDA wheels are not installed either (pip install 'ember-plugin-cuda[cuda12]')"
        )
    return ""


def test_no_driver_at_all(installed_plugin):
    try:
        driver.probe()
    except driver.DriverUnavailableError as exc:
        if not str(exc).startswith("no NVIDIA driver"):
            pytest.skip(f"this machine has an NVIDIA driver ({exc})")
    else:
        pytest.skip("this machine has an NVIDIA driver and a GPU")
    done, took = doctor(installed_plugin)
    assert platform_line(done.stdout).startswith(
        "BackendError: no NVIDIA driver: libcuda.so.1 could not be loaded (libcuda.so.1: cannot "
        "open shared object file"
    )
    assert took < 15


def test_missing_cuda_wheels_with_a_working_driver(installed_plugin, fake_driver_dir):
    if not missing_wheels_note():
        pytest.skip("jax-cuda12-pjrt is installed here")
    done, _ = doctor(installed_plugin, driver_dir=fake_driver_dir, FAKE_CUDA_COUNT="2")
    assert platform_line(done.stdout) == (
        "BackendError: missing CUDA wheel: jax-cuda12-pjrt (XLA's CUDA PJRT plugin, package "
        "jax_plugins.xla_cuda12) is not installed; pip install 'ember-plugin-cuda[cuda12]'"
    )


def test_ember_platforms_cuda_fails_with_the_reason(installed_plugin, fake_driver_dir):
    done = run_ember(
        ["-c", COMPUTE],
        installed_plugin,
        driver_dir=fake_driver_dir,
        FAKE_CUDA_COUNT="0",
        EMBER_PLATFORMS="cuda",
    )
    assert done.returncode == 1
    assert (
        "ember.errors.BackendError: platform 'cuda' (plugin 'cuda') failed to initialise: "
        "BackendError: No visible GPU devices: the NVIDIA driver is loaded but sees no GPU"
    ) in done.stderr
    assert "Traceback" in done.stderr and "Segmentation" not in done.stderr


def test_a_bad_option_in_the_environment_fails_the_platform_naming_it(
    installed_plugin, fake_driver_dir
):
    done = run_ember(
        ["-c", COMPUTE],
        installed_plugin,
        driver_dir=fake_driver_dir,
        EMBER_PLATFORMS="cuda",
        EMBER_CUDA_MEMORY_FRACTION="1.5",
    )
    assert (
        "failed to initialise: ValueError: cuda_memory_fraction='1.5': the memory fraction must "
        "be in (0, 1]"
    ) in done.stderr
    done = run_ember(
        ["-c", COMPUTE],
        installed_plugin,
        driver_dir=fake_driver_dir,
        FAKE_CUDA_COUNT="2",
        EMBER_PLATFORMS="cuda",
        EMBER_CUDA_VISIBLE_DEVICES="0,3",
    )
    assert (
        "ValueError: cuda_visible_devices='0,3': GPU 3 does not exist; this process sees 2 GPU(s), "
        "ordinals 0 to 1"
    ) in done.stderr


def test_other_platforms_never_touch_the_driver(installed_plugin, fake_driver_dir, tmp_path):
    trace = tmp_path / "driver_calls"
    code = COMPUTE + "; import ember; print(ember.default_backend())"
    done = run_ember(
        ["-c", code],
        installed_plugin,
        driver_dir=fake_driver_dir,
        FAKE_CUDA_TRACE=str(trace),
        EMBER_PLATFORMS="reference",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0.", "2.", "4.]", "reference"]
    assert not trace.exists()  # the plugin loaded, but the driver was never probed
    # `import ember` alone selects nothing, even with EMBER_PLATFORMS=cuda on a machine
    # without a GPU
    done = run_ember(
        ["-c", "import ember; print('imported')"],
        installed_plugin,
        driver_dir=fake_driver_dir,
        FAKE_CUDA_TRACE=str(trace),
        EMBER_PLATFORMS="cuda",
    )
    assert done.stdout.strip() == "imported" and not trace.exists()


def test_unselected_cuda_is_skipped_for_the_next_platform_with_a_warning(
    installed_plugin, fake_driver_dir
):
    done = run_ember(
        ["-W", "always", "-c", COMPUTE],
        installed_plugin,
        driver_dir=fake_driver_dir,
        FAKE_CUDA_COUNT="0",
        EMBER_PLATFORMS="",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0.", "2.", "4.]"]
    assert "PluginWarning" in done.stderr and "'cuda'" in done.stderr
    assert "No visible GPU devices" in done.stderr


REAL_PJRT = textwrap.dedent(
    """
    from ember_plugin_cuda import driver, libraries, plugin
    from ember_plugin_cuda.driver import DriverReport

    # past the probe and the preload, as on a machine whose driver says it has a GPU
    driver.probe = lambda: DriverReport(1, (12, 9))
    libraries.preload_cuda_libraries = lambda: libraries.Preloaded((), ())
    try:
        plugin.make_backend()
    except Exception as exc:
        print(type(exc).__name__, exc)
    """
)


def test_the_real_pjrt_library_loads_and_says_it_sees_no_gpu(installed_plugin):
    # needs the jax-cuda12-pjrt wheel and no GPU: loading XLA's CUDA plugin, initialising it
    # and creating its client must end in an ember error, not a crash
    if missing_wheels_note():
        pytest.skip("jax-cuda12-pjrt is not installed")
    try:
        driver.probe()
    except driver.DriverUnavailableError:
        pass
    else:
        pytest.skip("this machine has a GPU (the GPU suite covers the real start)")
    done = run_ember(["-c", REAL_PJRT], installed_plugin, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(
        "BackendError XLA's CUDA plugin could not start (1 GPU(s) visible, driver for CUDA 12.9, "
        "options {'platform_name': 'cuda', 'allocator': 'default'}): FAILED_PRECONDITION: No "
        "visible GPU devices."
    ), done.stdout


def test_a_pjrt_plugin_loaded_first_by_someone_else_is_shared(installed_plugin):
    # JAX beside ember in one process (the benchmarks) loads XLA's CUDA plugin under the same
    # name: ember uses that one instead of failing with ALREADY_EXISTS
    if missing_wheels_note():
        pytest.skip("jax-cuda12-pjrt is not installed")
    try:
        driver.probe()
    except driver.DriverUnavailableError:
        pass
    else:
        pytest.skip("this machine has a GPU (the GPU suite covers the real start)")
    loaded_first = (
        "from jaxlib import xla_client\n"
        "xla_client.load_pjrt_plugin_dynamically('cuda', libraries.pjrt_library())\n"
    )
    code = REAL_PJRT.replace("try:\n", loaded_first + "try:\n", 1)
    done = run_ember(["-c", code], installed_plugin, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "FAILED_PRECONDITION: No visible GPU devices." in done.stdout, done.stdout
    assert "ALREADY_EXISTS" not in done.stdout


REAL_FFI = textwrap.dedent(
    """
    from ember_plugin_cuda import libraries
    from ember_plugin_kit import pjrt

    print(pjrt.register_plugin_extension(
        "cuda", libraries.pjrt_library(), libraries.FFI_EXTENSION, "CUDA",
        libraries.LINALG_HANDLER_MODULES))
    """
)


def test_the_real_ffi_handlers_register_with_the_real_pjrt_library(installed_plugin):
    # needs jax-cuda12-pjrt and jax-cuda12-plugin; no GPU is needed to register handlers
    if missing_wheels_note() or libraries.ffi_extension() is None:
        pytest.skip("jax-cuda12-pjrt or jax-cuda12-plugin is not installed")
    done = run_ember(["-c", REAL_FFI], installed_plugin, timeout=300)
    assert done.returncode == 0, done.stderr
    names = done.stdout.strip()
    for handler in (
        "xla_ffi_python_gpu_callback",
        "xla_buffer_python_gpu_callback",
        "cusolver_potrf_ffi",
        "cusolver_gesvdj_ffi",
        "cu_lu_pivots_to_permutation",
    ):
        assert f"'{handler}'" in names
