"""The launch environments of multi-host TPU slices, for ``ember.distributed.initialize()``.

Every host of a slice runs one process. On GKE the TPU node's pod has the slice's workers in
``TPU_WORKER_HOSTNAMES`` and its own index in ``TPU_WORKER_ID``; on a Cloud TPU VM (GCE) the
VM's metadata server has them (``worker-network-endpoints``, ``agent-worker-number``). A
multislice job (Megascale) adds ``MEGASCALE_NUM_SLICES``, ``MEGASCALE_SLICE_ID`` and
``MEGASCALE_COORDINATOR_ADDRESS``, as environment variables or in the metadata's ``tpu-env``.
Process ids run slice by slice; the coordinator is process 0's host, on port 8482, as JAX's.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from ember.extend import ClusterEnvironment
from ember_plugin_tpu import chips

COORDINATOR_PORT = 8482

# Above ember's Kubernetes environment (100): a GKE TPU pod is also a Kubernetes pod, and the
# TPU variables describe its slice better than a Job's spec.
GKE_PRIORITY = 150
GCE_PRIORITY = 140

# The metadata server of a Cloud TPU VM, and how long ember waits for its answers.
METADATA_HOST_VARIABLE = "GCE_METADATA_IP"
METADATA_HOST = "metadata.google.internal"
METADATA_TIMEOUT_S = 10.0

MetadataReader = Callable[[str], str]


class MetadataError(RuntimeError):
    """The metadata server did not answer a key within the deadline."""


def read_metadata(key: str, timeout_s: float = METADATA_TIMEOUT_S) -> str:
    """An attribute of this VM from the GCE metadata server, retried until ``timeout_s``."""
    host = os.environ.get(METADATA_HOST_VARIABLE, METADATA_HOST)
    request = urllib.request.Request(
        f"http://{host}/computeMetadata/v1/instance/attributes/{key}",
        headers={"Metadata-Flavor": "Google"},
    )
    deadline = time.monotonic() + timeout_s
    last = "no attempt"
    while time.monotonic() < deadline:
        try:
            remaining = max(deadline - time.monotonic(), 0.1)
            with urllib.request.urlopen(request, timeout=remaining) as response:
                return response.read().decode()
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
            time.sleep(min(0.5, max(deadline - time.monotonic(), 0)))
    raise MetadataError(
        f"the TPU VM's metadata server ({host}) did not give {key!r} within {timeout_s:g} s: {last}"
    )


def parse_workers(endpoints: str) -> list[str]:
    """Worker hosts from ``worker-network-endpoints`` or ``TPU_WORKER_HOSTNAMES``: a comma
    list of hostnames, or of ``name:id:address`` triples (the address is taken)."""
    hosts = []
    for worker in endpoints.split(","):
        parts = worker.strip().split(":")
        if len(parts) == 1 and parts[0]:
            hosts.append(parts[0])
        elif len(parts) == 3:
            hosts.append(parts[2])
        else:
            raise ValueError(f"unsupported TPU worker endpoint {worker!r} in {endpoints!r}")
    return hosts


def parse_tpu_env(text: str) -> dict[str, str]:
    """The ``tpu-env`` metadata attribute (lines ``KEY: 'value'``) as a dict."""
    found = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            found[key.strip()] = value.strip().strip("'")
    return found


class TpuSlice:
    """The job of one TPU environment, read on first use. ``workers()``: this slice's hosts
    in process order; ``worker_id()``: this host's index in them; ``setting(name)``: a
    Megascale variable, from the environment or the environment's metadata."""

    def __init__(
        self,
        workers: Callable[[], list[str]],
        worker_id: Callable[[], int],
        setting: Callable[[str], str | None],
    ):
        self.workers, self.worker_id, self.setting = workers, worker_id, setting

    def num_processes(self) -> int:
        return len(self.workers()) * int(self.setting("MEGASCALE_NUM_SLICES") or 1)

    def process_id(self) -> int:
        slice_id = int(self.setting("MEGASCALE_SLICE_ID") or 0)
        return self.worker_id() + slice_id * len(self.workers())

    def coordinator_address(self) -> str:
        host = self.setting("MEGASCALE_COORDINATOR_ADDRESS") or self.workers()[0]
        return f"{host.split(':')[0]}:{COORDINATOR_PORT}"


def gke_slice() -> TpuSlice:
    def worker_id() -> int:
        value = os.environ.get("TPU_WORKER_ID", "")
        if not value.isdigit():
            raise ValueError(f"TPU_WORKER_ID={value!r} is not this worker's index")
        return int(value)

    return TpuSlice(
        lambda: parse_workers(os.environ["TPU_WORKER_HOSTNAMES"]), worker_id, os.environ.get
    )


def gce_slice(read: MetadataReader = read_metadata) -> TpuSlice:
    def setting(name: str) -> str | None:
        if name in os.environ:
            return os.environ[name]
        return parse_tpu_env(read("tpu-env")).get(name)

    return TpuSlice(
        lambda: parse_workers(read("worker-network-endpoints")),
        lambda: int(read("agent-worker-number").strip()),
        setting,
    )


def on_gke_tpu() -> bool:
    return "TPU_WORKER_HOSTNAMES" in os.environ and "TPU_WORKER_ID" in os.environ


def on_gce_tpu() -> bool:
    """A Cloud TPU VM outside GKE: TPU chips on the PCI bus, no GKE variables, and metadata
    not switched off. Reads files only: the metadata server is asked once chosen."""
    if on_gke_tpu() or os.environ.get("TPU_SKIP_MDS_QUERY"):
        return False
    return chips.find_chips() is not None


def environments(read: MetadataReader = read_metadata) -> list[ClusterEnvironment]:
    gke, gce = gke_slice(), gce_slice(read)
    return [
        ClusterEnvironment(
            name="gke_tpu",
            is_present=on_gke_tpu,
            coordinator_address=gke.coordinator_address,
            num_processes=gke.num_processes,
            process_id=gke.process_id,
            priority=GKE_PRIORITY,
            description="a TPU slice on GKE (TPU_WORKER_HOSTNAMES, TPU_WORKER_ID)",
        ),
        ClusterEnvironment(
            name="gce_tpu",
            is_present=on_gce_tpu,
            coordinator_address=gce.coordinator_address,
            num_processes=gce.num_processes,
            process_id=gce.process_id,
            priority=GCE_PRIORITY,
            description="a Cloud TPU VM slice (the VM's metadata server)",
        ),
    ]
