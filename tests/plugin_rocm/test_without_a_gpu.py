"""The plugin installed on a machine that cannot use it: ``import ember`` and the other
platforms are unaffected, ``python -m ember doctor`` shows the plugin with the real reason
within seconds, and ``EMBER_PLATFORMS=rocm`` fails with that reason. Each test runs Python in
a subprocess with the plugin installed; they skip on a machine with an AMD GPU driver."""

from __future__ import annotations

import os
import textwrap
import time

import pytest
from ember_plugin_rocm import driver, libraries

from tests.plugin_rocm.util import run_ember

COMPUTE = "import ember.numpy as enp; print(enp.arange(3.0) * 2)"


@pytest.fixture(scope="module", autouse=True)
def no_amd_driver():
    if os.path.exists(driver.KFD_DEVICE):
        pytest.skip(f"this machine has an AMD GPU driver ({driver.KFD_DEVICE})")


def platform_line(output: str) -> str:
    """The doctor's line under platform rocm: its status message."""
    lines = output.splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.startswith("  rocm ") and "priority" in line
    )
    return lines[at + 1].strip()


def what_else_is_missing() -> str:
    """The note the plugin adds to the driver's reason, as this machine has things."""
    try:
        missing = libraries.missing_runtime(libraries.pjrt_library())
    except libraries.MissingRocmPartError:
        return (
            "; the ROCm PJRT wheel is not installed either (pip install 'ember-plugin-rocm[rocm7]')"
        )
    if not missing:
        return ""
    return f"; ROCm runtime libraries are missing too: {', '.join(m.soname for m in missing)}"


NO_KFD = (
    "BackendError: no AMD GPU driver: /dev/kfd does not exist (the amdgpu kernel driver is not "
    "loaded here; a container needs --device=/dev/kfd --device=/dev/dri)"
)


def test_doctor_shows_the_plugin_and_the_reason_within_seconds(installed_plugin):
    started = time.monotonic()
    done = run_ember(["-m", "ember", "doctor"], installed_plugin)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    assert "  rocm         ok            ember-plugin-rocm 0.1.0  [ember_plugin_rocm.plugin]" in (
        done.stdout
    )
    assert "rocm         failed           plugin rocm, priority 500" in done.stdout
    assert platform_line(done.stdout) == NO_KFD + what_else_is_missing()
    assert "platform 'rocm' failed to initialise: " + NO_KFD in done.stdout.split("problems (")[1]
    assert "  reference    ok" in done.stdout
    assert took < 15, f"the doctor took {took:.1f} s"


def test_ember_platforms_rocm_fails_with_the_reason(installed_plugin):
    done = run_ember(["-c", COMPUTE], installed_plugin, EMBER_PLATFORMS="rocm")
    assert done.returncode == 1
    assert (
        "ember.errors.BackendError: platform 'rocm' (plugin 'rocm') failed to initialise: " + NO_KFD
    ) in done.stderr
    assert "Segmentation" not in done.stderr


def test_a_bad_option_in_the_environment_fails_the_platform_naming_it(installed_plugin):
    done = run_ember(
        ["-c", COMPUTE],
        installed_plugin,
        EMBER_PLATFORMS="rocm",
        EMBER_ROCM_ALLOCATOR="cuda_async",
    )
    assert (
        "failed to initialise: ValueError: rocm_allocator='cuda_async': the allocator must be "
        "one of default, platform, bfc"
    ) in done.stderr


def test_other_platforms_and_import_never_start_rocm(installed_plugin):
    code = COMPUTE + "; import ember; print(ember.default_backend())"
    done = run_ember(["-c", code], installed_plugin, EMBER_PLATFORMS="reference")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0.", "2.", "4.]", "reference"]
    done = run_ember(
        ["-c", "import ember; print('imported')"], installed_plugin, EMBER_PLATFORMS="rocm"
    )
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stderr


def test_unselected_rocm_is_skipped_for_the_next_platform_with_a_warning(installed_plugin):
    done = run_ember(["-W", "always", "-c", COMPUTE], installed_plugin, EMBER_PLATFORMS="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0.", "2.", "4.]"]
    assert "PluginWarning" in done.stderr and "'rocm'" in done.stderr
    assert "/dev/kfd does not exist" in done.stderr


REAL_PJRT = textwrap.dedent(
    """
    from ember_plugin_rocm import driver, plugin
    from ember_plugin_rocm.driver import DriverReport

    # past the driver probe, as on a machine whose driver says it has a GPU
    driver.probe = lambda **kwargs: DriverReport(1, 70051831)
    try:
        plugin.make_backend()
    except Exception as exc:
        print(type(exc).__name__, exc)
    """
)


def test_the_real_pjrt_library_is_refused_naming_the_missing_rocm_runtime(installed_plugin):
    # needs the jax-rocm7-pjrt wheel (not in CI) and no ROCm here: the plugin names every
    # ROCm library the PJRT library links and does not find, before jaxlib would load it
    try:
        library = libraries.pjrt_library()
    except libraries.MissingRocmPartError:
        pytest.skip("jax-rocm7-pjrt is not installed")
    if not libraries.missing_runtime(library):
        pytest.skip("ROCm 7 is installed here")
    done = run_ember(["-c", REAL_PJRT], installed_plugin, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "BackendError missing ROCm runtime libraries: librocprofiler-sdk.so.1, librccl.so.1, "
        "libhipblaslt.so.1, libhipfft.so.0, libMIOpen.so.1, librocblas.so.5, "
        "librocm_smi64.so.1, libamdhip64.so.7 (needed by xla_rocm_plugin.so of jax-rocm7-pjrt;"
    ), done.stdout
    assert "  libamdhip64.so.7: cannot open shared object file" in done.stdout
