"""The TPU plugin's hooks, and why the ``tpu`` backend does not start off a TPU: the PCI bus
and libtpu are checked first, so the answer comes in well under a second."""

from __future__ import annotations

import time

import pytest
from ember_plugin_tpu import chips, library, plugin

from ember import config
from ember.errors import BackendError
from ember.extend import CollectiveRegistry
from ember_plugin_kit import pjrt
from tests.plugin_tpu.util import HAVE_LIBTPU, NEEDS_LIBTPU, PLUGIN_SRC, run_python


def test_the_platform_is_tpu_above_cuda_with_named_topologies():
    (spec,) = plugin.ember_platforms()
    assert (spec.name, spec.priority) == ("tpu", 600)
    assert spec.make_backend is plugin.make_backend
    assert spec.make_topology is plugin.make_topology


def test_xla_runs_every_collective_on_tpu():
    registry = CollectiveRegistry()
    plugin.ember_register_collectives(registry)
    for name in plugin.XLA_COLLECTIVES:
        assert registry.implementation("tpu", name) == "xla"


def test_multi_host_slices_use_xlas_coordination_service():
    assert isinstance(plugin.ember_distributed_runtime(), pjrt.XlaCoordination)


def test_the_cluster_environments_are_gke_and_gce_tpus():
    names = [env.name for env in plugin.ember_cluster_environments()]
    assert names == ["gke_tpu", "gce_tpu"]


def test_no_tpu_chip_is_the_reason_and_it_comes_at_once(pci_bus, monkeypatch):
    monkeypatch.setattr(chips, "PCI_DEVICES", str(pci_bus))
    monkeypatch.setattr(library, "library_path", lambda: "/nowhere/libtpu.so")
    start = time.perf_counter()
    with pytest.raises(BackendError, match=r"no TPU on this machine: no Google TPU chip") as info:
        plugin.make_backend()
    assert time.perf_counter() - start < 1.0
    assert "get_topology_desc('v5e:2x2', 'tpu')" in str(info.value)


def test_no_chip_and_no_libtpu_says_both(pci_bus, monkeypatch):
    monkeypatch.setattr(chips, "PCI_DEVICES", str(pci_bus))

    def missing():
        raise library.MissingLibtpuError("libtpu is not installed: pip install ...")

    monkeypatch.setattr(library, "library_path", missing)
    with pytest.raises(BackendError, match=r"no TPU on this machine.*; libtpu is not installed"):
        plugin.make_backend()
    with pytest.raises(BackendError, match=r"TPU topologies need libtpu: libtpu is not"):
        plugin.make_topology("v5e:2x2")


def test_chips_without_libtpu_name_libtpu_only(monkeypatch):
    monkeypatch.setattr(chips, "find_chips", lambda: chips.TpuChips(4, "v5e"))

    def missing():
        raise library.MissingLibtpuError("libtpu 0.0.30 is installed, but ...")

    monkeypatch.setattr(library, "library_path", missing)
    with pytest.raises(BackendError, match=r"^libtpu 0.0.30 is installed, but"):
        plugin.make_backend()


def test_import_ember_neither_loads_libtpu_nor_jaxlib_for_the_plugin():
    done = run_python(
        [
            "-c",
            "import sys, ember_plugin_tpu.plugin, ember\n"
            "print('libtpu' in sys.modules, 'jaxlib' in sys.modules)",
        ],
        PLUGIN_SRC,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.skipif(not HAVE_LIBTPU, reason=NEEDS_LIBTPU)
def test_off_a_tpu_the_backend_fails_fast_without_the_metadata_stall():
    # A fresh process with the real PCI bus and the real libtpu: no TPU here, and the answer
    # comes in seconds (libtpu's metadata retries would take minutes).
    code = (
        "import time, ember_plugin_tpu.plugin as p\n"
        "from ember_plugin_tpu import chips\n"
        "start = time.perf_counter()\n"
        "try:\n"
        "    p.make_backend()\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, round(time.perf_counter() - start, 3), exc)\n"
    )
    done = run_python(["-c", code], PLUGIN_SRC, timeout=60)
    assert done.returncode == 0, done.stderr
    name, seconds, reason = done.stdout.split(" ", 2)
    if "no TPU on this machine" not in reason:
        pytest.skip(f"this machine has a TPU: {reason}")
    assert name == "BackendError" and float(seconds) < 5.0


class StandInClient:
    platform_version = "stand-in libtpu"

    def devices(self):
        return []


def test_on_a_tpu_vm_the_client_is_made_without_the_gpu_job_options(monkeypatch):
    # libtpu refuses node_id/num_nodes ("Unexpected option name passed to
    # PJRT_Client_Create: num_nodes"): the job reaches it as the coordination client only.
    calls = []

    def make_plugin_client(name, path, options, job, **kwargs):
        calls.append((name, path, options, kwargs))
        return StandInClient()

    monkeypatch.setattr(chips, "find_chips", lambda: chips.TpuChips(4, "v5e"))
    monkeypatch.setattr(library, "library_path", lambda: "/opt/libtpu.so")
    monkeypatch.setattr(library, "installed_version", lambda: "0.0.42.1")
    monkeypatch.setattr(pjrt, "make_plugin_client", make_plugin_client)
    backend = plugin.make_backend()
    assert calls == [("tpu", "/opt/libtpu.so", {}, {"job_options": False})]
    with config.option("tpu_client_options", "ml_framework_name:ember"):
        plugin.make_backend()
    assert calls[-1][2] == {"ml_framework_name": "ember"}
    assert backend.versions()["libtpu"] == "0.0.42.1"
    assert backend.versions()["TPU chips on this host"] == "4 x v5e"


def test_a_client_that_fails_on_the_chips_names_them(monkeypatch):
    def make_plugin_client(*args, **kwargs):
        raise pjrt.XlaRuntimeError("NOT_FOUND: TPU initialization failed: device busy")

    monkeypatch.setattr(chips, "find_chips", lambda: chips.TpuChips(8, "v6e"))
    monkeypatch.setattr(library, "library_path", lambda: "/opt/libtpu.so")
    monkeypatch.setattr(pjrt, "make_plugin_client", make_plugin_client)
    with pytest.raises(BackendError, match=r"libtpu could not start on this machine's 8 TPU v6e"):
        plugin.make_backend()
