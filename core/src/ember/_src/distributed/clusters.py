"""Finding the multi-process job this process belongs to: its coordinator, size and rank.

Every launch environment is an ``ember.extend.ClusterEnvironment`` contributed through the
``ember_cluster_environments`` hook. ember's own (``EMBER_*`` variables, Open MPI, SLURM, mpi4py
and Kubernetes Indexed Jobs) come from this module's hook, registered as the ``clusters``
plugin, so they are collected exactly like a third-party plugin's. ``all_environments``
collects them all; ``detect`` picks one and reads its values.

Each environment reads what its launcher exports, as ``jax.distributed.initialize`` does, and
derives the coordinator's port from the job's identity (all processes must agree on it without
talking to each other first).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import itertools
import operator
import os
import re
import socket
import sys
import time
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ember._src import errors
from ember._src.plugin.hookspecs import hookimpl
from ember._src.plugin.manager import manager
from ember._src.plugin.spec import ClusterEnvironment

# JAX's automatic ports lie in the top 4096 ports of the ephemeral range, [61440, 65535].
_PORT_SPAN = 4096
_FIRST_PORT = 65536 - _PORT_SPAN


def _port_for(job_key: int) -> int:
    return job_key % _PORT_SPAN + _FIRST_PORT


# --------------------------------------------------------------------------------------------
# Reading environment variables


def _is_decimal(text: str) -> bool:
    return text.isascii() and text.isdigit()  # str.isdigit alone accepts '²', which int() refuses


def _variable(name: str, context: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"{name} is not set ({context})")
    return value


def _int_variable(name: str, context: str) -> int:
    text = _variable(name, context)
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer ({context})") from None
    if value < 0:
        raise ValueError(f"{name}={text!r} must not be negative ({context})")
    return value


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[ipv6]:port"``) as ``(host, port)``; ValueError if malformed."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not _is_decimal(port_text) or not 0 < int(port_text) < 65536:
        raise ValueError(f"{address!r} is not 'host:port' with a port in 1..65535")
    if host.startswith("[") != host.endswith("]"):
        raise ValueError(f"{address!r} has an unbalanced bracket around its IPv6 host")
    return host, int(port_text)


# --------------------------------------------------------------------------------------------
# EMBER_* variables: the user's or a launcher's explicit description of the job

COORDINATOR_ADDRESS_VAR = "EMBER_COORDINATOR_ADDRESS"
NUM_PROCESSES_VAR = "EMBER_NUM_PROCESSES"
PROCESS_ID_VAR = "EMBER_PROCESS_ID"
LOCAL_DEVICE_IDS_VAR = "EMBER_LOCAL_DEVICE_IDS"

_EXPLICIT = f"read because {COORDINATOR_ADDRESS_VAR} is set"


def _explicit_coordinator_address() -> str:
    address = _variable(COORDINATOR_ADDRESS_VAR, _EXPLICIT).strip()
    try:
        split_address(address)
    except ValueError as exc:
        raise ValueError(f"{COORDINATOR_ADDRESS_VAR}: {exc}") from None
    return address


def local_device_ids_from_environment() -> list[int] | None:
    """``EMBER_LOCAL_DEVICE_IDS`` (comma-separated ints) as a list; None when unset or empty."""
    text = os.environ.get(LOCAL_DEVICE_IDS_VAR, "")
    if not text.strip():
        return None
    ids = []
    for item in text.split(","):
        item = item.strip()
        if not _is_decimal(item):
            raise ValueError(
                f"{LOCAL_DEVICE_IDS_VAR}={text!r} is not a comma-separated list of device ids "
                f"(non-negative integers such as '0,1')"
            )
        ids.append(int(item))
    return ids


def _explicit_environment() -> ClusterEnvironment:
    return ClusterEnvironment(
        name="environment_variables",
        is_present=lambda: COORDINATOR_ADDRESS_VAR in os.environ,
        coordinator_address=_explicit_coordinator_address,
        num_processes=lambda: _int_variable(NUM_PROCESSES_VAR, _EXPLICIT),
        process_id=lambda: _int_variable(PROCESS_ID_VAR, _EXPLICIT),
        local_device_ids=local_device_ids_from_environment,
        priority=1000,
        description=(
            f"{COORDINATOR_ADDRESS_VAR} (with {NUM_PROCESSES_VAR}, {PROCESS_ID_VAR} and "
            f"optionally {LOCAL_DEVICE_IDS_VAR})"
        ),
    )


# --------------------------------------------------------------------------------------------
# Open MPI (mpirun / mpiexec of Open MPI 4 and earlier, whose launcher is ORTE)

OMPI_URI_VAR = "OMPI_MCA_orte_hnp_uri"
_OMPI = f"read because {OMPI_URI_VAR} is set (Open MPI)"

# The launcher's first address in the URI, e.g. "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911"
# or "1314521088.0;tcp6://[fe80::b9b:ac5d,2620:10d:c083::2]:43370".
_OMPI_LAUNCHER_ADDRESS = re.compile(r"tcp://([^,:;/\[\]]+)|tcp6://\[([^,\]]+)")


def _ompi_coordinator_address() -> str:
    uri = _variable(OMPI_URI_VAR, _OMPI)
    job_text = uri.split(".", 1)[0]
    if not _is_decimal(job_text):
        raise ValueError(f"{OMPI_URI_VAR}={uri!r} does not start with a numeric job id")
    # Open MPI's job ids are multiples of 4096: dividing first spreads consecutive jobs over
    # different ports.
    port = _port_for(int(job_text) // _PORT_SPAN)
    match = _OMPI_LAUNCHER_ADDRESS.search(uri)
    if match is None:
        raise ValueError(f"{OMPI_URI_VAR}={uri!r} holds no tcp:// or tcp6:// launcher address")
    ipv4, ipv6 = match.groups()
    return f"{ipv4}:{port}" if ipv4 is not None else f"[{ipv6}]:{port}"


def _ompi_environment() -> ClusterEnvironment:
    return ClusterEnvironment(
        name="ompi",
        is_present=lambda: OMPI_URI_VAR in os.environ,
        coordinator_address=_ompi_coordinator_address,
        num_processes=lambda: _int_variable("OMPI_COMM_WORLD_SIZE", _OMPI),
        process_id=lambda: _int_variable("OMPI_COMM_WORLD_RANK", _OMPI),
        local_device_ids=lambda: [_int_variable("OMPI_COMM_WORLD_LOCAL_RANK", _OMPI)],
        priority=300,
        description=f"{OMPI_URI_VAR}, set by Open MPI's mpirun",
    )


# --------------------------------------------------------------------------------------------
# SLURM (srun)

SLURM_VARS = (
    "SLURM_JOB_ID",
    "SLURM_STEP_NODELIST",
    "SLURM_NTASKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
)
_SLURM = "read by the 'slurm' cluster environment"


def expand_slurm_nodelist(nodelist: str) -> list[str]:
    """Every host of a SLURM host list, in order.

    ``"node[001-003,7],gpu-[1-2]x"`` gives node001, node002, node003, node7, gpu-1x, gpu-2x. A
    range keeps the zero padding of its first bound; several bracket groups in one name
    multiply (``"r[1-2]n[1-2]"``: r1n1, r1n2, r2n1, r2n2). ValueError if malformed.
    """
    try:
        return _hosts(nodelist)
    except ValueError as exc:
        raise ValueError(f"SLURM host list {nodelist!r}: {exc}") from None


def _hosts(nodelist: str) -> list[str]:
    return [host for pattern in _top_level_items(nodelist) for host in _expand(pattern)]


def _top_level_items(nodelist: str) -> list[str]:
    """Split at the commas that are not inside brackets."""
    items, start, depth = [], 0, 0
    for position, char in enumerate(nodelist):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError("nested '['")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("']' without '['")
        elif char == "," and depth == 0:
            items.append(nodelist[start:position])
            start = position + 1
    if depth:
        raise ValueError("'[' without ']'")
    items.append(nodelist[start:])
    if any(not item for item in items):
        raise ValueError("empty host name")
    return items


def _expand(pattern: str) -> list[str]:
    # re.split with a group alternates literal text and bracket contents: [lit, group, lit, ...].
    pieces = re.split(r"\[([^\]]*)\]", pattern)
    choices = [
        [piece] if index % 2 == 0 else _expand_ranges(piece) for index, piece in enumerate(pieces)
    ]
    return ["".join(parts) for parts in itertools.product(*choices)]


def _expand_ranges(ranges: str) -> list[str]:
    """``"001-003,7"`` as ["001", "002", "003", "7"]."""
    numbers = []
    for item in ranges.split(","):
        low, dash, high = item.partition("-")
        if not _is_decimal(low) or (dash and not _is_decimal(high)):
            raise ValueError(f"[{ranges}] is not a list of numbers and ranges such as 001-003")
        if not dash:
            numbers.append(low)
            continue
        if int(high) < int(low):
            raise ValueError(f"range {item!r} ends before it starts")
        numbers += [str(n).zfill(len(low)) for n in range(int(low), int(high) + 1)]
    return numbers


def _slurm_coordinator_address() -> str:
    nodelist = _variable("SLURM_STEP_NODELIST", _SLURM)
    try:
        first_host = _hosts(nodelist)[0]
    except ValueError as exc:
        raise ValueError(f"SLURM_STEP_NODELIST={nodelist!r} is malformed: {exc}") from None
    return f"{first_host}:{_port_for(_int_variable('SLURM_JOB_ID', _SLURM))}"


def _slurm_environment() -> ClusterEnvironment:
    return ClusterEnvironment(
        name="slurm",
        is_present=lambda: all(name in os.environ for name in SLURM_VARS),
        coordinator_address=_slurm_coordinator_address,
        num_processes=lambda: _int_variable("SLURM_NTASKS", _SLURM),
        process_id=lambda: _int_variable("SLURM_PROCID", _SLURM),
        local_device_ids=lambda: [_int_variable("SLURM_LOCALID", _SLURM)],
        priority=200,
        description=f"all of {', '.join(SLURM_VARS)}, set by srun",
    )


# --------------------------------------------------------------------------------------------
# mpi4py (any MPI: MPICH, Intel MPI, Open MPI 5...), only when asked for by name


def _mpi4py_installed() -> bool:
    if sys.modules.get("mpi4py") is not None:
        return True
    return importlib.util.find_spec("mpi4py") is not None


def _mpi() -> Any:
    # Importing mpi4py.MPI initialises MPI, so it happens only once this environment is chosen.
    return importlib.import_module("mpi4py.MPI")


def _mpi4py_coordinator_address() -> str:
    world = _mpi().COMM_WORLD
    address = None
    if world.Get_rank() == 0:
        host = socket.gethostname()
        # A hash of the host name as JAX does, but a stable one (Python's hash() of a string
        # changes from run to run), so a job's port is reproducible.
        address = f"{host}:{_port_for(zlib.crc32(host.encode()))}"
    return world.bcast(address, root=0)


def _mpi4py_local_rank() -> list[int]:
    mpi = _mpi()
    # The processes that share memory with this one are those on its host.
    host_comm = mpi.COMM_WORLD.Split_type(mpi.COMM_TYPE_SHARED)
    try:
        return [int(host_comm.Get_rank())]
    finally:
        host_comm.Free()


def _mpi4py_environment() -> ClusterEnvironment:
    return ClusterEnvironment(
        name="mpi4py",
        is_present=_mpi4py_installed,
        coordinator_address=_mpi4py_coordinator_address,
        num_processes=lambda: int(_mpi().COMM_WORLD.Get_size()),
        process_id=lambda: int(_mpi().COMM_WORLD.Get_rank()),
        local_device_ids=_mpi4py_local_rank,
        priority=150,
        opt_in=True,  # mpi4py being installed does not mean this process was started by MPI
        description="the mpi4py package (pip install mpi4py)",
    )


# --------------------------------------------------------------------------------------------
# Kubernetes Indexed Jobs (and JobSets)

KUBERNETES_PORT = 55527  # JAX's fixed choice: nothing job-specific is known to every pod
NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
# Waits between attempts to find this pod through the API: its IP may not be published yet.
POD_LOOKUP_DELAYS = (0.1, 0.3, 1.0, 3.0, 10.0)
_KUBERNETES = "read by the 'kubernetes' cluster environment"


@dataclass(frozen=True)
class _JobFacts:
    job_name: str
    subdomain: str
    parallelism: int | None  # None when the API is out of reach (no kubernetes package)


def _kubernetes_package() -> Any | None:
    try:
        return importlib.import_module("kubernetes")
    except ImportError:
        return None


def _headless_service_help(job_name: str, found_service: str | None) -> str:
    if found_service is not None:
        return (
            f"the headless Service {found_service!r} selects this pod but is not its subdomain; "
            f"add `subdomain: {found_service}` to the Job's pod template spec"
        )
    return (
        "create a headless Service (clusterIP: None, publishNotReadyAddresses: true, selector "
        f"job-name: {job_name}) and name it as `subdomain:` in the Job's pod template spec"
    )


class _KubernetesApi:
    """The pod, Job and Services seen through the in-cluster API (the ``kubernetes`` package)."""

    def __init__(self, kubernetes: Any):
        kubernetes.config.load_incluster_config()
        self._core = kubernetes.client.CoreV1Api()
        self._batch = kubernetes.client.BatchV1Api()
        self._api_error = kubernetes.client.exceptions.ApiException
        with open(NAMESPACE_FILE) as file:
            self._namespace = file.read().strip()

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except self._api_error as exc:
            hint = ""
            if getattr(exc, "status", None) == 403:
                hint = (
                    "; the pod's service account may not read pods, jobs and services: grant it "
                    "get/list on them in this namespace"
                )
            raise RuntimeError(
                f"Kubernetes API error {exc.status} ({exc.reason}) while finding this pod's "
                f"Job{hint}"
            ) from exc

    def _this_pod(self, hostname: str) -> Any:
        ip = socket.gethostbyname(hostname)
        for delay in (*POD_LOOKUP_DELAYS, None):
            pods = self._call(
                self._core.list_namespaced_pod,
                namespace=self._namespace,
                field_selector=f"status.podIP={ip}",
            ).items
            if len(pods) == 1:
                return pods[0]
            if delay is None:
                raise RuntimeError(
                    f"the Kubernetes API lists {len(pods)} pods with IP {ip} (of {hostname}) "
                    f"in namespace {self._namespace!r}, not one"
                )
            time.sleep(delay)

    def job_facts(self, hostname: str) -> _JobFacts:
        pod = self._this_pod(hostname)
        labels = pod.metadata.labels or {}
        controller = next((o for o in pod.metadata.owner_references or [] if o.controller), None)
        if controller is None or controller.kind != "Job" or "job-name" not in labels:
            raise RuntimeError(
                f"pod {pod.metadata.name!r} was not started by a Kubernetes Job: automatic "
                f"cluster detection supports Indexed Jobs and JobSets"
            )
        job = self._call(
            self._batch.read_namespaced_job, name=labels["job-name"], namespace=self._namespace
        )
        job_name = job.metadata.name
        jobset = (job.metadata.labels or {}).get("jobset.sigs.k8s.io/jobset-name")
        subdomain = jobset or pod.spec.subdomain
        if subdomain is None:
            raise RuntimeError(
                "the pods of a Job reach each other through a headless Service named as their "
                f"subdomain, and pod {pod.metadata.name!r} has none: "
                + _headless_service_help(job_name, self._headless_service(labels))
            )
        return _JobFacts(job_name, subdomain, int(job.spec.parallelism))

    def _headless_service(self, pod_labels: dict[str, str]) -> str | None:
        services = self._call(self._core.list_namespaced_service, self._namespace).items
        for service in services:
            selector = service.spec.selector or {}
            if service.spec.cluster_ip == "None" and all(
                pod_labels.get(key) == value for key, value in selector.items()
            ):
                return service.metadata.name
        return None


def _job_facts_from_hostname(hostname: str, index: int) -> _JobFacts:
    """Without the API: an Indexed Job's pod is named ``<job>-<index>``, and its fully
    qualified name (``/etc/hosts``) is ``<job>-<index>.<subdomain>.<namespace>.svc...``."""
    suffix = f"-{index}"
    if not hostname.endswith(suffix) or len(hostname) == len(suffix):
        raise ValueError(
            f"HOSTNAME={hostname!r} does not end in -{index} (JOB_COMPLETION_INDEX): this pod "
            f"is not named as an Indexed Job's pods are, <job-name>-<index>"
        )
    job_name = hostname[: -len(suffix)]
    fqdn = socket.getfqdn(hostname)
    if not fqdn.startswith(hostname + "."):
        raise RuntimeError(
            f"pod {hostname!r} has no subdomain (its fully qualified name is {fqdn!r}); the pods "
            "of a Job reach each other through a headless Service named as their subdomain: "
            + _headless_service_help(job_name, None)
        )
    subdomain = fqdn[len(hostname) + 1 :].split(".", 1)[0]
    return _JobFacts(job_name, subdomain, None)


class _KubernetesIndexedJob:
    """This pod's Job, looked up once: through the API when the ``kubernetes`` package is
    installed, otherwise from the pod's host name and ``EMBER_NUM_PROCESSES``."""

    def process_id(self) -> int:
        return _int_variable("JOB_COMPLETION_INDEX", _KUBERNETES)

    @functools.cached_property
    def _facts(self) -> _JobFacts:
        hostname = os.environ.get("HOSTNAME") or socket.gethostname()
        kubernetes = _kubernetes_package()
        if kubernetes is not None:
            return _KubernetesApi(kubernetes).job_facts(hostname)
        return _job_facts_from_hostname(hostname, self.process_id())

    def coordinator_address(self) -> str:
        facts = self._facts
        return f"{facts.job_name}-0.{facts.subdomain}:{KUBERNETES_PORT}"

    def num_processes(self) -> int:
        if self._facts.parallelism is not None:
            return self._facts.parallelism
        if NUM_PROCESSES_VAR not in os.environ:
            raise ValueError(
                f"{NUM_PROCESSES_VAR} is not set: without the `kubernetes` package ember cannot "
                f"read the Job's spec.parallelism; set {NUM_PROCESSES_VAR} to it in the pod "
                f"template, or pip install kubernetes (its service account must read pods and jobs)"
            )
        return _int_variable(NUM_PROCESSES_VAR, _KUBERNETES)


def _kubernetes_environment() -> ClusterEnvironment:
    job = _KubernetesIndexedJob()
    return ClusterEnvironment(
        name="kubernetes",
        is_present=lambda: all(
            name in os.environ for name in ("KUBERNETES_SERVICE_HOST", "JOB_COMPLETION_INDEX")
        ),
        coordinator_address=job.coordinator_address,
        num_processes=job.num_processes,
        process_id=job.process_id,
        priority=100,
        description=(
            "KUBERNETES_SERVICE_HOST and JOB_COMPLETION_INDEX, set in the pods of an Indexed Job"
        ),
    )


# --------------------------------------------------------------------------------------------
# The hook, collection and choice


def builtin_environments() -> list[ClusterEnvironment]:
    """ember's own environments (fresh objects: the Kubernetes one caches what it looks up)."""
    return [
        _explicit_environment(),
        _ompi_environment(),
        _slurm_environment(),
        _mpi4py_environment(),
        _kubernetes_environment(),
    ]


@hookimpl
def ember_cluster_environments() -> list[ClusterEnvironment]:
    return builtin_environments()


def all_environments() -> list[ClusterEnvironment]:
    """Every plugin's environments, highest priority first (ties keep the plugins' order).

    A plugin whose hook raises or returns something else than ClusterEnvironments raises
    ``ember.errors.PluginError`` naming it. Of two environments with one name, the one of higher
    priority (or the earlier plugin's) is kept, with a ``PluginWarning``.
    """
    plugins = manager()
    plugins.load()
    collected: list[tuple[ClusterEnvironment, str]] = []
    for impl in plugins.pm.hook.ember_cluster_environments.get_hookimpls():
        plugin = plugins.pm.get_name(impl.plugin)
        try:
            environments = impl.function()
        except Exception as exc:
            raise errors.PluginError(
                f"plugin {plugin!r} failed in ember_cluster_environments: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        for environment in environments or []:
            if not isinstance(environment, ClusterEnvironment):
                raise errors.PluginError(
                    f"plugin {plugin!r}: ember_cluster_environments returned {environment!r}, "
                    f"not an ember.extend.ClusterEnvironment"
                )
            collected.append((environment, plugin))
    collected.sort(key=lambda pair: -pair[0].priority)  # stable: ties keep the plugins' order
    kept: dict[str, str] = {}
    result = []
    for environment, plugin in collected:
        if environment.name in kept:
            warnings.warn(
                f"cluster environment {environment.name!r} of plugin {plugin!r} is ignored: "
                f"plugin {kept[environment.name]!r} provides one of that name first",
                errors.PluginWarning,
                stacklevel=2,
            )
            continue
        kept[environment.name] = plugin
        result.append(environment)
    return result


@dataclass(frozen=True)
class DetectedCluster:
    """The values read from the chosen cluster environment."""

    name: str
    coordinator_address: str
    num_processes: int
    process_id: int
    local_device_ids: list[int] | None


def detect(
    method: str | None, environments: Sequence[ClusterEnvironment]
) -> DetectedCluster | None:
    """Read the job's description from one of ``environments``.

    ``method=None`` takes the present, non-opt-in environment of highest priority (ties: the
    order given) and gives None when none is present. A name takes that environment: ValueError
    if no environment has the name, RuntimeError if it is not present here. The environment's
    values are read in a fixed order (address, count, id, local devices) on every process,
    since some (mpi4py) are collective operations; ValueError or TypeError if one is invalid.
    """
    environment = _choose(method, environments)
    if environment is None:
        return None
    return _read(environment)


def _choose(
    method: str | None, environments: Sequence[ClusterEnvironment]
) -> ClusterEnvironment | None:
    if method is None:
        automatic = [e for e in environments if not e.opt_in]
        return next((e for e in sorted(automatic, key=lambda e: -e.priority) if _present(e)), None)
    if not isinstance(method, str):
        raise TypeError(f"cluster_detection_method must be a str or None, not {method!r}")
    named = next((e for e in environments if e.name == method), None)
    if named is None:
        known = ", ".join(repr(e.name) for e in environments) or "none"
        raise ValueError(f"unknown cluster_detection_method {method!r}; known: {known}")
    if not _present(named):
        looks_for = f": it looks for {named.description}" if named.description else ""
        raise RuntimeError(
            f"cluster_detection_method={method!r}, but this process does not run under "
            f"{method!r}{looks_for}"
        )
    return named


def _present(environment: ClusterEnvironment) -> bool:
    try:
        return bool(environment.is_present())
    except Exception as exc:
        raise errors.PluginError(
            f"is_present of cluster environment {environment.name!r} raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _read(environment: ClusterEnvironment) -> DetectedCluster:
    name = environment.name
    address = environment.coordinator_address()
    if not isinstance(address, str):
        raise TypeError(f"cluster environment {name!r} gave coordinator address {address!r}")
    try:
        split_address(address)
    except ValueError as exc:
        raise ValueError(
            f"cluster environment {name!r} gave a bad coordinator address: {exc}"
        ) from None
    count = _as_int(environment.num_processes(), name, "num_processes")
    process = _as_int(environment.process_id(), name, "process_id")
    if count < 1 or not 0 <= process < count:
        raise ValueError(
            f"cluster environment {name!r} gave process_id {process} and num_processes {count}: "
            f"expected 0 <= process_id < num_processes"
        )
    local = environment.local_device_ids() if environment.local_device_ids else None
    if local is not None:
        local = [_as_int(i, name, "local_device_ids") for i in local]
        if any(i < 0 for i in local):
            raise ValueError(f"cluster environment {name!r} gave local_device_ids {local}")
    return DetectedCluster(name, address, count, process, local)


def _as_int(value: Any, environment: str, field: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"cluster environment {environment!r} gave {field} {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"cluster environment {environment!r} gave {field} {value!r}, not an integer"
        ) from None
