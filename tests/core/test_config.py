"""One config system: update, context managers, environment variables."""

import importlib.util
import os
import subprocess
import sys

import pytest

import ember
from ember._src.config import Config, config
from tests.core.util import run_python


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


@pytest.mark.slow
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


@pytest.mark.slow
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


needs_cpu_plugin = pytest.mark.skipif(
    importlib.util.find_spec("jaxlib") is None
    or importlib.util.find_spec("ember_plugin_cpu") is None,
    reason="needs the CPU plugin (jaxlib)",
)


def test_aliases_validation_and_is_set_on_a_private_config():
    cfg = Config()
    seen = []

    def no_odd(value):
        if value % 2:
            raise ember.errors.BackendError(f"odd value {value}")

    cfg.define("widgets", 2, help="test", aliases=("num_widgets",), validate=no_odd)
    assert not cfg.is_set("widgets")
    cfg.update("num_widgets", 4)
    assert cfg.widgets == 4 and cfg.read("num_widgets") == 4 and cfg.num_widgets == 4
    assert cfg.is_set("widgets") and cfg.is_set("num_widgets")
    with pytest.raises(ember.errors.BackendError, match=r"odd value 5 \(at .*test_config.py"):
        cfg.update("widgets", 5)
    assert cfg.widgets == 4  # a refused value is not stored
    with cfg.option("num_widgets", 6):
        seen.append(cfg.widgets)
    assert seen == [6] and cfg.widgets == 4
    with pytest.raises(ValueError, match="already taken"):
        cfg.define("gadgets", 1, help="test", aliases=("num_widgets",))


def _count_after_late_update(platform, option, env):
    code = (
        "import ember, ember.numpy as enp\n"
        f"print(len(ember.devices({platform!r})))\n"
        f"ember.config.update({option!r}, len(ember.devices({platform!r})))  # same: fine\n"
        "try:\n"
        f"    ember.config.update({option!r}, 5)\n"
        "except ember.errors.BackendError as e:\n"
        "    print('BackendError:', e)\n"
        f"print(ember.config.read({option!r}), len(ember.devices({platform!r})))\n"
    )
    return run_python(code, **env)


@pytest.mark.slow
def test_reference_device_count_after_start_is_an_error():
    done = _count_after_late_update(
        "reference", "reference_device_count", {"EMBER_PLATFORMS": "reference"}
    )
    assert done.returncode == 0, done.stderr
    first, error, last = done.stdout.strip().splitlines()
    assert first == "1"
    assert "reference_device_count=5 cannot take effect" in error
    assert "already started with 1 device(s)" in error
    assert "EMBER_REFERENCE_DEVICE_COUNT=5" in error and "(at <string>:5" in error
    assert last == "1 1"


@pytest.mark.slow
@needs_cpu_plugin
def test_cpu_device_count_after_start_is_an_error():
    done = _count_after_late_update("cpu", "num_cpu_devices", {"EMBER_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr
    first, error, last = done.stdout.strip().splitlines()
    assert first == "1"
    assert "cpu_device_count=5 cannot take effect: the CPU backend already started" in error
    assert "EMBER_CPU_DEVICE_COUNT=5" in error and "before the first computation" in error
    assert last == "1 1"


@pytest.mark.slow
@needs_cpu_plugin
def test_num_cpu_devices_is_an_alias_of_cpu_device_count():
    code = (
        "import ember\n"
        "ember.config.update('num_cpu_devices', 3)\n"
        "print(ember.config.cpu_device_count, ember.device_count('cpu'))\n"
    )
    done = run_python(code, EMBER_PLATFORMS="cpu")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3 3"


@pytest.mark.slow
@needs_cpu_plugin
@pytest.mark.parametrize(
    "env, expected",
    [
        ({"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}, "3"),
        # the last occurrence wins, as in XLA; other flags are left alone
        (
            {
                "XLA_FLAGS": "--xla_force_host_platform_device_count=2 "
                "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=6"
            },
            "6",
        ),
        # ember's own setting, when given, wins over XLA's flag
        (
            {
                "XLA_FLAGS": "--xla_force_host_platform_device_count=3",
                "EMBER_CPU_DEVICE_COUNT": "2",
            },
            "2",
        ),
        ({"XLA_FLAGS": ""}, "1"),
    ],
)
def test_xla_flags_device_count_is_honoured_when_ember_option_is_unset(env, expected):
    base = {k: v for k, v in os.environ.items() if k != "EMBER_CPU_DEVICE_COUNT"}
    env = {"EMBER_PLATFORMS": "cpu", **env}
    done = subprocess.run(
        [sys.executable, "-c", "import ember; print(ember.device_count('cpu'))"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **env},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


@pytest.mark.slow
@needs_cpu_plugin
def test_bad_device_count_in_xla_flags_is_reported():
    code = (
        "import ember\n"
        "try:\n    ember.devices('cpu')\nexcept ember.errors.BackendError as e:\n    print(e)"
    )
    env = {k: v for k, v in os.environ.items() if k != "EMBER_CPU_DEVICE_COUNT"}
    env.update(EMBER_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=0")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert "xla_force_host_platform_device_count must be a positive integer, not 0" in done.stdout
