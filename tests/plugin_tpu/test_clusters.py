"""Multi-host TPU slices: GKE's TPU variables and a Cloud TPU VM's metadata (a stand-in
reader), single-slice and multislice."""

from __future__ import annotations

import pytest
from ember_plugin_tpu import chips, clusters

TPU_VARIABLES = (
    "TPU_WORKER_HOSTNAMES",
    "TPU_WORKER_ID",
    "MEGASCALE_NUM_SLICES",
    "MEGASCALE_SLICE_ID",
    "MEGASCALE_COORDINATOR_ADDRESS",
    "TPU_SKIP_MDS_QUERY",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in TPU_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def by_name(read=clusters.read_metadata):
    return {env.name: env for env in clusters.environments(read)}


def test_gke_tpu_reads_the_workers_and_this_workers_index(monkeypatch):
    gke = by_name()["gke_tpu"]
    assert not gke.is_present()
    monkeypatch.setenv("TPU_WORKER_HOSTNAMES", "w-0.svc,w-1.svc,w-2.svc,w-3.svc")
    monkeypatch.setenv("TPU_WORKER_ID", "2")
    assert gke.is_present()
    assert (gke.coordinator_address(), gke.num_processes(), gke.process_id()) == (
        "w-0.svc:8482",
        4,
        2,
    )


def test_gke_multislice_numbers_processes_slice_by_slice(monkeypatch):
    monkeypatch.setenv("TPU_WORKER_HOSTNAMES", "a-0,a-1")
    monkeypatch.setenv("TPU_WORKER_ID", "1")
    monkeypatch.setenv("MEGASCALE_NUM_SLICES", "3")
    monkeypatch.setenv("MEGASCALE_SLICE_ID", "2")
    monkeypatch.setenv("MEGASCALE_COORDINATOR_ADDRESS", "coord-host:9999")
    gke = by_name()["gke_tpu"]
    assert (gke.coordinator_address(), gke.num_processes(), gke.process_id()) == (
        "coord-host:8482",
        6,
        5,
    )


def test_a_bad_worker_id_is_refused(monkeypatch):
    monkeypatch.setenv("TPU_WORKER_HOSTNAMES", "a-0,a-1")
    monkeypatch.setenv("TPU_WORKER_ID", "one")
    with pytest.raises(ValueError, match="TPU_WORKER_ID='one'"):
        by_name()["gke_tpu"].process_id()


def test_gce_tpu_needs_chips_and_asks_the_metadata_only_when_chosen(monkeypatch):
    asked = []
    metadata = {
        "worker-network-endpoints": "t1v-n-0:w0:10.0.0.2,t1v-n-1:w1:10.0.0.3",
        "agent-worker-number": "1\n",
        "tpu-env": "ACCELERATOR_TYPE: 'v5litepod-16'\nMEGASCALE_NUM_SLICES: '2'\n"
        "MEGASCALE_SLICE_ID: '1'\n",
    }

    def read(key):
        asked.append(key)
        return metadata[key]

    gce = by_name(read)["gce_tpu"]
    monkeypatch.setattr(chips, "find_chips", lambda: None)
    assert not gce.is_present()
    monkeypatch.setattr(chips, "find_chips", lambda: chips.TpuChips(4, "v5e"))
    assert gce.is_present() and asked == []
    monkeypatch.setenv("TPU_SKIP_MDS_QUERY", "1")
    assert not gce.is_present()
    assert (gce.coordinator_address(), gce.num_processes(), gce.process_id()) == (
        "10.0.0.2:8482",
        4,
        3,
    )


def test_on_gke_the_gce_environment_stands_aside(monkeypatch):
    monkeypatch.setattr(chips, "find_chips", lambda: chips.TpuChips(4, "v5e"))
    monkeypatch.setenv("TPU_WORKER_HOSTNAMES", "a-0")
    monkeypatch.setenv("TPU_WORKER_ID", "0")
    envs = by_name(lambda key: "")
    assert envs["gke_tpu"].is_present() and not envs["gce_tpu"].is_present()
    assert envs["gke_tpu"].priority > envs["gce_tpu"].priority > 100  # above Kubernetes


def test_worker_lists_take_hostnames_or_addresses_of_triples():
    assert clusters.parse_workers("h0,h1") == ["h0", "h1"]
    assert clusters.parse_workers("n0:w0:10.0.0.1, n1:w1:10.0.0.2") == ["10.0.0.1", "10.0.0.2"]
    with pytest.raises(ValueError, match="unsupported TPU worker endpoint"):
        clusters.parse_workers("a:b")


def test_an_unanswered_metadata_server_is_an_error_within_its_deadline(monkeypatch):
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")  # the discard port: refused at once
    with pytest.raises(clusters.MetadataError, match=r"did not give 'agent-worker-number'"):
        clusters.read_metadata("agent-worker-number", timeout_s=1.0)
