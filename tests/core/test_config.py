"""One config system: update, context managers, environment variables."""

import os
import subprocess
import sys

import pytest

import ember
from ember._src.config import config

from .util import run_python


def test_update_and_option_restore():
    assert config.log_compiles is False
    with config.option("log_compiles", True):
        assert config.log_compiles is True
    assert config.log_compiles is False
    config.update("log_compiles", True)
    try:
        assert ember.config.log_compiles is True
    finally:
        config.update("log_compiles", False)


def test_unknown_option_names_the_known_ones():
    with pytest.raises(AttributeError, match="enable_x64"):
        config.update("enable_x65", True)


def test_environment_variable_seeds_an_option():
    env = dict(os.environ, EMBER_ENABLE_X64="1")
    out = subprocess.run(
        [sys.executable, "-c", "import ember; print(ember.config.enable_x64)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip() == "True"


def test_bad_environment_value_is_reported_with_the_variable_name():
    env = dict(os.environ, EMBER_ENABLE_X64="maybe")
    out = subprocess.run(
        [sys.executable, "-c", "import ember"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0
    assert "EMBER_ENABLE_X64" in out.stderr


def test_plugin_options_can_be_set_before_plugins_load():
    # A plugin defines its options when it is imported, which ember does lazily; setting one
    # first must load the plugins rather than call the name unknown.
    code = (
        "import ember\n"
        "ember.config.update('reference_device_count', 3)\n"
        "print(len(ember.devices('reference')))\n"
    )
    result = run_python(code, EMBER_PLATFORMS="reference")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"
