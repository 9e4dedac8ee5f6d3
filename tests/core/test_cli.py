"""``python -m ember``: help, the doctor's exit status and its --verbose detail, config."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

FAKE_PLUGINS = pathlib.Path(__file__).parent / "fake_plugins"
BAD_FAKES = ("fake_broken", "fake_misspelled", "fake_old_api", "fake_failing_init")


def ember_cli(*args: str, fakes: bool = False, **env: str) -> subprocess.CompletedProcess:
    """Run ``python -m ember ARGS`` in a fresh interpreter (with the fake plugins if asked)."""
    environ = {**os.environ, "EMBER_PLATFORMS": "", **env}
    if fakes:
        environ["PYTHONPATH"] = os.pathsep.join(
            [str(FAKE_PLUGINS), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    return subprocess.run(
        [sys.executable, "-m", "ember", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
    )


def disabled_except(*kept: str) -> str:
    return ",".join(name for name in BAD_FAKES if name not in kept)


@pytest.mark.slow
def test_help_lists_the_commands_and_options():
    done = ember_cli("--help")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "usage: python -m ember" in out
    assert "doctor" in out and "config" in out and "--version" in out
    assert "EMBER_PLATFORMS" in out


def test_doctor_help_describes_verbose_and_the_exit_status():
    done = ember_cli("doctor", "--help")
    assert done.returncode == 0, done.stderr
    assert "--verbose" in done.stdout and "status 1" in done.stdout


def test_no_command_prints_help_and_fails():
    done = ember_cli()
    assert done.returncode == 2
    assert "doctor" in done.stdout and "config" in done.stdout


@pytest.mark.slow
def test_unknown_command_is_a_usage_error():
    done = ember_cli("doctr")
    assert done.returncode == 2
    assert "invalid choice: 'doctr'" in done.stderr


@pytest.mark.slow
def test_doctor_on_a_healthy_installation_exits_0():
    done = ember_cli("doctor", EMBER_PLATFORMS="reference")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reference    ok" in done.stdout
    assert "no problems found" in done.stdout


@pytest.mark.slow
def test_doctor_with_unknown_platform_exits_1_listing_the_available_ones():
    done = ember_cli("doctor", EMBER_PLATFORMS="tpuu")
    assert done.returncode == 1
    problems = done.stdout.split("problems (1):")[1]
    assert "unknown platform 'tpuu' (from EMBER_PLATFORMS=tpuu)" in problems
    assert "available platforms:" in problems and "reference" in problems


@pytest.mark.slow
def test_doctor_exits_1_for_a_platform_that_fails_to_start():
    done = ember_cli(
        "doctor", fakes=True, EMBER_DISABLE_PLUGINS=disabled_except("fake_failing_init")
    )
    assert done.returncode == 1, done.stdout
    assert "platform 'fakefail' failed to initialise: OSError: no such accelerator" in done.stdout


@pytest.mark.slow
def test_doctor_exits_1_for_an_incompatible_plugin():
    done = ember_cli("doctor", fakes=True, EMBER_DISABLE_PLUGINS=disabled_except("fake_old_api"))
    assert done.returncode == 1, done.stdout
    assert "plugin 'fake_old_api' incompatible: written for ember plugin API" in done.stdout


@pytest.mark.slow
def test_doctor_exits_0_when_the_broken_plugins_are_disabled():
    # blocked on purpose (EMBER_DISABLE_PLUGINS) is not a problem
    done = ember_cli("doctor", fakes=True, EMBER_DISABLE_PLUGINS=disabled_except())
    assert done.returncode == 0, done.stdout
    assert "fake_broken  blocked" in done.stdout and "no problems found" in done.stdout


@pytest.mark.slow
def test_verbose_adds_full_tracebacks_config_and_paths():
    env = {"EMBER_REFERENCE_DEVICE_COUNT": "2"}
    short = ember_cli("doctor", fakes=True, **env)
    full = ember_cli("doctor", "--verbose", fakes=True, **env)
    assert short.returncode == full.returncode == 1
    # the import failure's traceback is long: cut to its last lines without --verbose
    broken = 'File "{}"'.format(FAKE_PLUGINS / "ember_fake_broken.py")
    assert broken in short.stdout and broken in full.stdout
    assert "      | ..." in short.stdout and "      | ..." not in full.stdout
    assert "in _load_one" in full.stdout.split("fake_broken  failed")[1]
    assert "in _load_one" not in short.stdout.split("fake_broken  failed")[1]
    assert full.stdout.count("| Traceback (most recent call last):") >= 3
    # every option's value and where it came from
    assert "config (" in full.stdout and "config (" not in short.stdout
    assert "reference_device_count   2          (from EMBER_REFERENCE_DEVICE_COUNT=2)" in (
        full.stdout
    )
    assert "enable_x64               False      (default)" in full.stdout
    # where each library and plugin module is loaded from
    numpy_line = next(line for line in full.stdout.splitlines() if line.startswith("  numpy "))
    assert numpy_line.rstrip().endswith(os.path.join("numpy", "__init__.py"))
    assert f"from {FAKE_PLUGINS / 'ember_fake_broken.py'}" in full.stdout
    assert sys.executable in full.stdout


def test_config_lists_every_option_with_its_environment_variable():
    done = ember_cli("config", EMBER_PLATFORMS="reference", EMBER_ENABLE_X64="1")
    assert done.returncode == 0, done.stderr
    assert "enable_x64 = True" in done.stdout
    assert "EMBER_ENABLE_X64:" in done.stdout
    assert "reference_device_count = 1" in done.stdout  # a plugin's option is listed too


@pytest.mark.slow
def test_version():
    import ember

    done = ember_cli("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"ember {ember.__version__}"


@pytest.mark.slow
def test_doctor_names_each_first_party_plugin_installed_or_not():
    done = ember_cli("doctor", EMBER_PLATFORMS="reference")
    plugins = done.stdout.split("plugins (", 1)[1].split("\n\n", 1)[0]
    absent = plugins.partition("ember's plugins not installed:")[2]
    for name, what in (
        ("ember-plugin-cpu", "XLA's CPU backend"),
        ("ember-plugin-cuda", "NVIDIA GPUs"),
        ("ember-plugin-rocm", "AMD GPUs"),
        ("ember-plugin-tpu", "Google TPUs"),
    ):
        installed = f" {name} 0." in plugins
        assert installed != (name in absent and what in absent), (name, plugins)
