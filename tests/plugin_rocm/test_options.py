"""The ROCm platform's options (the kit's GPU options for ``rocm``): checking, JAX's variables
as fallbacks, the PJRT client options they become, and refusal of changes once started."""

from __future__ import annotations

import pytest
from ember_plugin_rocm import options

from ember import config
from ember.errors import BackendError


def test_the_four_options_mirror_cudas():
    assert options.OPTIONS.names == (
        "rocm_visible_devices",
        "rocm_allocator",
        "rocm_memory_fraction",
        "rocm_preallocate",
    )
    assert config.read("rocm_allocator") == "default"


def test_unset_options_leave_xla_its_defaults(fresh_options):
    assert options.client_options() == {"platform_name": "ROCM", "allocator": "default"}
    assert options.requested_devices(4) is None


def test_options_become_the_pjrt_client_options(fresh_options):
    with (
        config.option("rocm_allocator", "Platform"),
        config.option("rocm_memory_fraction", "0.5"),
        config.option("rocm_preallocate", "no"),
    ):
        assert options.client_options() == {
            "platform_name": "ROCM",
            "allocator": "platform",
            "memory_fraction": 0.5,
            "preallocate": False,
        }


def test_jax_variables_are_honoured_when_the_options_are_unset(fresh_options, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "bfc")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".25")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    assert options.client_options() == {
        "platform_name": "ROCM",
        "allocator": "bfc",
        "memory_fraction": 0.25,
        "preallocate": True,
    }
    with config.option("rocm_memory_fraction", 0.9):
        assert options.client_options()["memory_fraction"] == 0.9


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("rocm_memory_fraction", 0, r"rocm_memory_fraction=0: the memory fraction must be in"),
        ("rocm_memory_fraction", 2, r"rocm_memory_fraction=2: .* \(0, 1\]"),
        (
            "rocm_allocator",
            "cuda_async",
            r"rocm_allocator='cuda_async': the allocator must be one of default, platform, bfc$",
        ),
        ("rocm_preallocate", "sometimes", r"rocm_preallocate='sometimes': expected true or"),
        ("rocm_visible_devices", "a", r"rocm_visible_devices='a': expected GPU ordinals"),
        ("rocm_visible_devices", "0,0", r"rocm_visible_devices='0,0': .* more than once"),
    ],
)
def test_config_update_refuses_a_bad_value_naming_option_and_value(
    fresh_options, name, value, message
):
    with pytest.raises(ValueError, match=message):
        with config.option(name, value):
            pass


def test_visible_devices_are_checked_against_the_gpus_hip_shows(fresh_options, monkeypatch):
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "4,5,6")
    with config.option("rocm_visible_devices", "2,0"):
        assert options.requested_devices(3) == (2, 0)
    with config.option("rocm_visible_devices", [3]):
        with pytest.raises(
            ValueError,
            match=r"^rocm_visible_devices=\[3\]: GPU 3 does not exist; this process sees 3 "
            r"GPU\(s\), ordinals 0 to 2 \(HIP_VISIBLE_DEVICES=4,5,6\)$",
        ):
            options.requested_devices(3)


def test_a_change_after_the_backend_started_is_refused_naming_rocm(fresh_options):
    with config.option("rocm_preallocate", False):
        options.mark_started()
    with pytest.raises(
        BackendError,
        match=r"rocm_preallocate=True cannot take effect: the ROCm backend already started "
        r"with rocm_preallocate=False",
    ):
        with config.option("rocm_preallocate", True):
            pass
