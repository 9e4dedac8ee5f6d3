"""The CUDA platform's options: checking, JAX's variables as fallbacks, the PJRT client
options they become, and refusal of changes once the backend started."""

from __future__ import annotations

import pytest
from ember_plugin_cuda import options

from ember import config
from ember.errors import BackendError


def test_unset_options_leave_xla_its_defaults(fresh_options):
    assert options.client_options() == {"platform_name": "cuda", "allocator": "default"}
    assert options.requested_devices(4) is None


def test_options_become_the_pjrt_client_options(fresh_options):
    with (
        config.option("cuda_allocator", "CUDA_ASYNC"),
        config.option("cuda_memory_fraction", "0.5"),
        config.option("cuda_preallocate", "false"),
    ):
        assert options.client_options() == {
            "platform_name": "cuda",
            "allocator": "cuda_async",
            "memory_fraction": 0.5,
            "preallocate": False,
        }
    with config.option("cuda_memory_fraction", 1), config.option("cuda_preallocate", True):
        found = options.client_options()
    assert found["memory_fraction"] == 1.0 and found["preallocate"] is True


def test_jax_variables_are_honoured_when_the_options_are_unset(fresh_options, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".25")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    assert options.client_options() == {
        "platform_name": "cuda",
        "allocator": "platform",
        "memory_fraction": 0.25,
        "preallocate": False,
    }
    # XLA_CLIENT_MEM_FRACTION is JAX's newer name and wins; ember's own option beats both
    monkeypatch.setenv("XLA_CLIENT_MEM_FRACTION", "0.6")
    assert options.client_options()["memory_fraction"] == 0.6
    with config.option("cuda_memory_fraction", 0.9):
        assert options.client_options()["memory_fraction"] == 0.9


def test_a_bad_jax_variable_is_named_in_the_error(fresh_options, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", "1.5")
    with pytest.raises(ValueError, match=r"XLA_PYTHON_CLIENT_MEM_FRACTION='1.5': .* in \(0, 1\]"):
        options.client_options()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "cuda_memory_fraction",
            0,
            r"cuda_memory_fraction=0: the memory fraction must be in \(0, 1\]",
        ),
        ("cuda_memory_fraction", 1.01, r"cuda_memory_fraction=1.01: .* \(0, 1\]"),
        ("cuda_memory_fraction", -0.5, r"cuda_memory_fraction=-0.5: "),
        ("cuda_memory_fraction", "half", r"cuda_memory_fraction='half': "),
        ("cuda_memory_fraction", float("nan"), r"cuda_memory_fraction=nan: "),
        ("cuda_memory_fraction", True, r"cuda_memory_fraction=True: "),
        (
            "cuda_allocator",
            "malloc",
            r"cuda_allocator='malloc': the allocator must be one of "
            r"default, platform, bfc, cuda_async, vmm",
        ),
        ("cuda_preallocate", "maybe", r"cuda_preallocate='maybe': expected true or false"),
        ("cuda_visible_devices", "0,x", r"cuda_visible_devices='0,x': expected GPU ordinals"),
        ("cuda_visible_devices", [0, -1], r"cuda_visible_devices=\[0, -1\]: .* negative"),
        ("cuda_visible_devices", "1,1", r"cuda_visible_devices='1,1': .* more than once"),
        ("cuda_visible_devices", [0.5], r"cuda_visible_devices=\[0.5\]: expected a list of int"),
        ("cuda_visible_devices", 3, r"cuda_visible_devices=3: expected a list"),
    ],
)
def test_config_update_refuses_a_bad_value_naming_option_and_value(
    fresh_options, name, value, message
):
    with pytest.raises(ValueError, match=message):
        with config.option(name, value):
            pass


def test_visible_devices_are_checked_against_the_gpus_present(fresh_options, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    with config.option("cuda_visible_devices", "1, 0"):
        assert options.requested_devices(2) == (1, 0)
    with config.option("cuda_visible_devices", [0, 2]):
        with pytest.raises(
            ValueError,
            match=r"cuda_visible_devices=\[0, 2\]: GPU 2 does not exist; this process sees 2 "
            r"GPU\(s\), ordinals 0 to 1 \(CUDA_VISIBLE_DEVICES=2,3\)",
        ):
            options.requested_devices(2)
    with config.option("cuda_visible_devices", ""):
        assert options.requested_devices(2) is None


def test_a_change_after_the_backend_started_is_refused(fresh_options):
    with config.option("cuda_memory_fraction", 0.5):
        options.mark_started()
        with config.option("cuda_memory_fraction", "0.50"):  # the same value: allowed
            pass
    with pytest.raises(
        BackendError,
        match=r"cuda_memory_fraction=0.3 cannot take effect: .*"
        r"started with cuda_memory_fraction=0.5",
    ):
        with config.option("cuda_memory_fraction", 0.3):
            pass
    with pytest.raises(
        BackendError,
        match=r"cuda_allocator='bfc' cannot take effect: .*"
        r"started with cuda_allocator='default'",
    ):
        with config.option("cuda_allocator", "bfc"):
            pass
