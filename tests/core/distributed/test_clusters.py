"""Cluster detection: every built-in environment in a simulated launch environment, the choice
between environments, and environments contributed by plugins."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import socket
import sys
import types
from types import SimpleNamespace

import pytest

from ember._src.distributed import clusters
from ember._src.distributed.clusters import (
    DetectedCluster,
    all_environments,
    builtin_environments,
    detect,
    expand_slurm_nodelist,
)
from ember._src.plugin import manager as manager_module
from ember._src.plugin.hookspecs import hookimpl
from ember._src.plugin.manager import PluginSource
from ember.errors import PluginError, PluginWarning
from ember.extend import ClusterEnvironment

LAUNCHER_VARIABLES = [
    "EMBER_COORDINATOR_ADDRESS",
    "EMBER_NUM_PROCESSES",
    "EMBER_PROCESS_ID",
    "EMBER_LOCAL_DEVICE_IDS",
    "OMPI_MCA_orte_hnp_uri",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    *clusters.SLURM_VARS,
    "KUBERNETES_SERVICE_HOST",
    "JOB_COMPLETION_INDEX",
    "HOSTNAME",
]


@pytest.fixture(autouse=True)
def bare_environment(monkeypatch):
    """No launcher variables, no mpi4py and no kubernetes package, whatever this machine has."""
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # None in sys.modules makes an import fail, as if the package were not installed.
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    monkeypatch.setitem(sys.modules, "kubernetes", None)


def set_env(monkeypatch, **variables):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def detected(method=None):
    return detect(method, builtin_environments())


def test_nothing_present_gives_none():
    assert detected() is None


# -- EMBER_* variables ------------------------------------------------------------------------


def test_environment_variables(monkeypatch):
    set_env(
        monkeypatch,
        EMBER_COORDINATOR_ADDRESS="10.0.0.1:1234",
        EMBER_NUM_PROCESSES="4",
        EMBER_PROCESS_ID="3",
        EMBER_LOCAL_DEVICE_IDS="0, 2",
    )
    assert detected() == DetectedCluster("environment_variables", "10.0.0.1:1234", 4, 3, [0, 2])


def test_environment_variables_without_local_devices(monkeypatch):
    set_env(monkeypatch, EMBER_COORDINATOR_ADDRESS="[::1]:80", EMBER_NUM_PROCESSES="1")
    set_env(monkeypatch, EMBER_PROCESS_ID="0", EMBER_LOCAL_DEVICE_IDS="")
    assert detected() == DetectedCluster("environment_variables", "[::1]:80", 1, 0, None)


@pytest.mark.parametrize(
    "variables,message",
    [
        ({"EMBER_NUM_PROCESSES": "2"}, "EMBER_PROCESS_ID is not set"),
        ({"EMBER_PROCESS_ID": "0"}, "EMBER_NUM_PROCESSES is not set"),
        ({"EMBER_NUM_PROCESSES": "two", "EMBER_PROCESS_ID": "0"}, "EMBER_NUM_PROCESSES='two'"),
        ({"EMBER_NUM_PROCESSES": "2", "EMBER_PROCESS_ID": "-1"}, "EMBER_PROCESS_ID='-1'"),
        (
            {"EMBER_NUM_PROCESSES": "2", "EMBER_PROCESS_ID": "0", "EMBER_LOCAL_DEVICE_IDS": "0,x"},
            "EMBER_LOCAL_DEVICE_IDS='0,x'",
        ),
        ({"EMBER_NUM_PROCESSES": "2", "EMBER_PROCESS_ID": "2"}, "process_id 2 and num_proc"),
        ({"EMBER_NUM_PROCESSES": "0", "EMBER_PROCESS_ID": "0"}, "num_processes 0"),
    ],
)
def test_environment_variables_bad_values(monkeypatch, variables, message):
    set_env(monkeypatch, EMBER_COORDINATOR_ADDRESS="host:1234", **variables)
    with pytest.raises(ValueError, match=message):
        detected()


@pytest.mark.parametrize("address", ["host", "host:", ":80", "host:http", "host:70000", "[::1:80"])
def test_environment_variables_bad_address(monkeypatch, address):
    set_env(monkeypatch, EMBER_COORDINATOR_ADDRESS=address, EMBER_NUM_PROCESSES="1")
    set_env(monkeypatch, EMBER_PROCESS_ID="0")
    with pytest.raises(ValueError, match=re.escape(f"EMBER_COORDINATOR_ADDRESS: {address!r}")):
        detected()


# -- Open MPI ---------------------------------------------------------------------------------


def test_open_mpi(monkeypatch):
    set_env(
        monkeypatch,
        OMPI_MCA_orte_hnp_uri="1531576320.0;tcp://10.96.0.1,10.148.0.1,10.108.0.1:34911",
        OMPI_COMM_WORLD_SIZE="8",
        OMPI_COMM_WORLD_RANK="5",
        OMPI_COMM_WORLD_LOCAL_RANK="1",
    )
    # 1531576320 // 4096 = 373920; 373920 % 4096 = 1184; 1184 + 61440 = 62624
    assert detected() == DetectedCluster("ompi", "10.96.0.1:62624", 8, 5, [1])


def test_open_mpi_ipv6_launcher(monkeypatch):
    uri = "1314521088.0;tcp6://[fe80::b9b:ac5d:9cf0:b858,2620:10d:c083:150e::3000:2]:43370"
    set_env(monkeypatch, OMPI_MCA_orte_hnp_uri=uri, OMPI_COMM_WORLD_SIZE="2")
    set_env(monkeypatch, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_LOCAL_RANK="0")
    port = 1314521088 // 4096 % 4096 + 61440
    assert detected().coordinator_address == f"[fe80::b9b:ac5d:9cf0:b858]:{port}"


@pytest.mark.parametrize(
    "uri,message",
    [("garbage", "numeric job id"), ("123.0;udp://10.0.0.1:5", "no tcp:// or tcp6://")],
)
def test_open_mpi_bad_uri(monkeypatch, uri, message):
    set_env(monkeypatch, OMPI_MCA_orte_hnp_uri=uri, OMPI_COMM_WORLD_SIZE="2")
    with pytest.raises(ValueError, match=f"OMPI_MCA_orte_hnp_uri={uri!r}.*{message}"):
        detected()


def test_open_mpi_missing_size(monkeypatch):
    set_env(monkeypatch, OMPI_MCA_orte_hnp_uri="4096.0;tcp://10.0.0.1:5")
    with pytest.raises(ValueError, match="OMPI_COMM_WORLD_SIZE is not set.*Open MPI"):
        detected()


# -- SLURM ------------------------------------------------------------------------------------


SLURM = dict(
    SLURM_JOB_ID="12345",
    SLURM_STEP_NODELIST="node[001-003,7],gpu-[1-2]x",
    SLURM_NTASKS="6",
    SLURM_PROCID="4",
    SLURM_LOCALID="1",
)


def test_slurm(monkeypatch):
    set_env(monkeypatch, **SLURM)
    # 12345 % 4096 = 57
    assert detected() == DetectedCluster("slurm", "node001:61497", 6, 4, [1])


def test_slurm_needs_every_variable(monkeypatch):
    set_env(monkeypatch, **SLURM)
    monkeypatch.delenv("SLURM_STEP_NODELIST")  # salloc without srun: not a job step
    assert detected() is None
    with pytest.raises(RuntimeError, match="looks for all of SLURM_JOB_ID, SLURM_STEP_NODELIST"):
        detected("slurm")


@pytest.mark.parametrize(
    "nodelist,hosts",
    [
        ("node001", ["node001"]),
        ("node001,host2", ["node001", "host2"]),
        (
            "node[001-003,7],gpu-[1-2]x",
            ["node001", "node002", "node003", "node7"] + ["gpu-1x", "gpu-2x"],
        ),
        ("node[8-10]", ["node8", "node9", "node10"]),
        ("node[08-10]", ["node08", "node09", "node10"]),
        ("[1-2]", ["1", "2"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("a[5],b", ["a5", "b"]),
        ("host-1.example.com", ["host-1.example.com"]),
    ],
)
def test_slurm_nodelist_expansion(nodelist, hosts):
    assert expand_slurm_nodelist(nodelist) == hosts


@pytest.mark.parametrize(
    "nodelist,message",
    [
        ("node[1-3", "'\\[' without '\\]'"),
        ("node1-3]", "'\\]' without '\\['"),
        ("node[[1]]", "nested"),
        ("node[3-1]", "ends before it starts"),
        ("node[a-b]", "not a list of numbers"),
        ("node[]", "not a list of numbers"),
        ("node1,,node2", "empty host name"),
        ("", "empty host name"),
    ],
)
def test_slurm_nodelist_errors(nodelist, message):
    with pytest.raises(ValueError, match=message):
        expand_slurm_nodelist(nodelist)


def test_slurm_bad_nodelist_names_the_variable(monkeypatch):
    set_env(monkeypatch, **{**SLURM, "SLURM_STEP_NODELIST": "node[1-"})
    with pytest.raises(ValueError, match=r"SLURM_STEP_NODELIST='node\[1-' is malformed"):
        detected()


def test_slurm_bad_count(monkeypatch):
    set_env(monkeypatch, **{**SLURM, "SLURM_NTASKS": "many"})
    with pytest.raises(ValueError, match="SLURM_NTASKS='many' is not an integer"):
        detected()


# -- mpi4py -----------------------------------------------------------------------------------


class FakeComm:
    """One rank of a simulated MPI job; records the collectives it takes part in."""

    def __init__(self, rank, size, local_rank, root_says="root-host:1"):
        self.rank, self.size, self.local_rank, self.root_says = rank, size, local_rank, root_says
        self.calls = []

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def bcast(self, value, root):
        self.calls.append(("bcast", value, root))
        return value if self.rank == root else self.root_says

    def Split_type(self, split_type):
        self.calls.append(("Split_type", split_type))
        free = lambda: self.calls.append("Free")
        return SimpleNamespace(Get_rank=lambda: self.local_rank, Free=free)


@pytest.fixture
def fake_mpi(monkeypatch):
    def install(comm):
        package = types.ModuleType("mpi4py")
        mpi = types.ModuleType("mpi4py.MPI")
        mpi.COMM_WORLD = comm
        mpi.COMM_TYPE_SHARED = "shared"
        package.MPI = mpi
        monkeypatch.setitem(sys.modules, "mpi4py", package)
        monkeypatch.setitem(sys.modules, "mpi4py.MPI", mpi)
        return comm

    return install


def test_mpi4py_is_opt_in(fake_mpi):
    fake_mpi(FakeComm(rank=0, size=2, local_rank=0))
    assert detected() is None


def test_mpi4py_rank_zero_broadcasts_its_host(fake_mpi, monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "head-node")
    comm = fake_mpi(FakeComm(rank=0, size=4, local_rank=0))
    found = detected("mpi4py")
    port = clusters._port_for(clusters.zlib.crc32(b"head-node"))
    assert 61440 <= port <= 65535
    assert found == DetectedCluster("mpi4py", f"head-node:{port}", 4, 0, [0])
    assert comm.calls == [("bcast", f"head-node:{port}", 0), ("Split_type", "shared"), "Free"]


def test_mpi4py_other_ranks_take_the_broadcast(fake_mpi):
    comm = fake_mpi(FakeComm(rank=3, size=4, local_rank=1, root_says="head-node:62000"))
    assert detected("mpi4py") == DetectedCluster("mpi4py", "head-node:62000", 4, 3, [1])
    assert comm.calls[0] == ("bcast", None, 0)


def test_mpi4py_not_installed():
    with pytest.raises(RuntimeError, match="'mpi4py'.*looks for the mpi4py package"):
        detected("mpi4py")


def test_mpi4py_does_not_initialise_mpi_when_not_chosen(fake_mpi, monkeypatch):
    fake_mpi(FakeComm(rank=0, size=2, local_rank=0))
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)  # importing MPI would now fail
    set_env(monkeypatch, **SLURM)
    assert detected().name == "slurm"


# -- Kubernetes -------------------------------------------------------------------------------


def kubernetes_pod(monkeypatch, *, hostname="trainer-2", index="2", fqdn=None):
    set_env(monkeypatch, KUBERNETES_SERVICE_HOST="10.0.0.1", JOB_COMPLETION_INDEX=index)
    set_env(monkeypatch, HOSTNAME=hostname)
    fqdn = fqdn or f"{hostname}.workers.default.svc.cluster.local"
    monkeypatch.setattr(socket, "getfqdn", lambda name=None: fqdn)


def test_kubernetes_without_the_package(monkeypatch):
    kubernetes_pod(monkeypatch)
    set_env(monkeypatch, EMBER_NUM_PROCESSES="4")
    assert detected() == DetectedCluster("kubernetes", "trainer-0.workers:55527", 4, 2, None)


def test_kubernetes_without_the_package_needs_the_count(monkeypatch):
    kubernetes_pod(monkeypatch)
    with pytest.raises(ValueError, match="EMBER_NUM_PROCESSES is not set.*spec.parallelism"):
        detected()


def test_kubernetes_needs_an_indexed_job(monkeypatch):
    set_env(monkeypatch, KUBERNETES_SERVICE_HOST="10.0.0.1")
    assert detected() is None  # a pod, but not of an Indexed Job
    with pytest.raises(RuntimeError, match="JOB_COMPLETION_INDEX"):
        detected("kubernetes")


def test_kubernetes_hostname_not_of_an_indexed_job(monkeypatch):
    kubernetes_pod(monkeypatch, hostname="trainer-abcde")
    set_env(monkeypatch, EMBER_NUM_PROCESSES="4")
    with pytest.raises(ValueError, match="HOSTNAME='trainer-abcde' does not end in -2"):
        detected()


def test_kubernetes_without_subdomain(monkeypatch):
    kubernetes_pod(monkeypatch, fqdn="trainer-2")
    set_env(monkeypatch, EMBER_NUM_PROCESSES="4")
    with pytest.raises(RuntimeError, match="no subdomain.*headless Service"):
        detected()


class FakeApiError(Exception):
    def __init__(self, status, reason):
        super().__init__(reason)
        self.status, self.reason = status, reason


def fake_kubernetes(
    monkeypatch,
    tmp_path,
    *,
    pods,
    job_labels=None,
    subdomain="workers",
    services=(),
    list_error=None,
):
    """A ``kubernetes`` package whose API knows one namespace."""
    namespace = tmp_path / "namespace"
    namespace.write_text("team-a\n")
    monkeypatch.setattr(clusters, "NAMESPACE_FILE", str(namespace))
    monkeypatch.setattr(clusters, "POD_LOOKUP_DELAYS", (0.0, 0.0))
    monkeypatch.setattr(socket, "gethostbyname", lambda name: "10.1.2.3")
    calls = []

    def list_namespaced_pod(namespace, field_selector):
        calls.append(("pods", namespace, field_selector))
        if list_error:
            raise list_error
        return SimpleNamespace(items=pods)

    def read_namespaced_job(name, namespace):
        calls.append(("job", namespace, name))
        metadata = SimpleNamespace(name=name, labels=job_labels or {})
        return SimpleNamespace(metadata=metadata, spec=SimpleNamespace(parallelism=8))

    def list_namespaced_service(namespace):
        return SimpleNamespace(items=list(services))

    package = types.ModuleType("kubernetes")
    package.config = SimpleNamespace(load_incluster_config=lambda: calls.append("config"))
    package.client = SimpleNamespace(
        CoreV1Api=lambda: SimpleNamespace(
            list_namespaced_pod=list_namespaced_pod,
            list_namespaced_service=list_namespaced_service,
        ),
        BatchV1Api=lambda: SimpleNamespace(read_namespaced_job=read_namespaced_job),
        exceptions=SimpleNamespace(ApiException=FakeApiError),
    )
    monkeypatch.setitem(sys.modules, "kubernetes", package)
    return calls


def job_pod(*, subdomain="workers", kind="Job", labels=None):
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name="trainer-2-xyz",
            labels={"job-name": "trainer"} if labels is None else labels,
            owner_references=[SimpleNamespace(controller=True, kind=kind)],
        ),
        spec=SimpleNamespace(subdomain=subdomain),
    )


def test_kubernetes_through_the_api(monkeypatch, tmp_path):
    kubernetes_pod(monkeypatch)
    calls = fake_kubernetes(monkeypatch, tmp_path, pods=[job_pod()])
    assert detected() == DetectedCluster("kubernetes", "trainer-0.workers:55527", 8, 2, None)
    assert calls == [
        "config",
        ("pods", "team-a", "status.podIP=10.1.2.3"),
        ("job", "team-a", "trainer"),
    ]  # looked up once, though two values come from it


def test_kubernetes_jobset_names_the_subdomain(monkeypatch, tmp_path):
    kubernetes_pod(monkeypatch)
    labels = {"jobset.sigs.k8s.io/jobset-name": "my-jobset"}
    fake_kubernetes(monkeypatch, tmp_path, pods=[job_pod(subdomain=None)], job_labels=labels)
    assert detected().coordinator_address == "trainer-0.my-jobset:55527"


def test_kubernetes_api_without_subdomain_points_at_the_service(monkeypatch, tmp_path):
    kubernetes_pod(monkeypatch)
    service = SimpleNamespace(
        metadata=SimpleNamespace(name="svc-a"),
        spec=SimpleNamespace(cluster_ip="None", selector={"job-name": "trainer"}),
    )
    fake_kubernetes(monkeypatch, tmp_path, pods=[job_pod(subdomain=None)], services=[service])
    with pytest.raises(RuntimeError, match="'svc-a' selects this pod.*`subdomain: svc-a`"):
        detected()


def test_kubernetes_api_pod_not_from_a_job(monkeypatch, tmp_path):
    kubernetes_pod(monkeypatch)
    fake_kubernetes(monkeypatch, tmp_path, pods=[job_pod(kind="StatefulSet")])
    with pytest.raises(RuntimeError, match="not started by a Kubernetes Job"):
        detected()


def test_kubernetes_api_pod_never_found(monkeypatch, tmp_path):
    kubernetes_pod(monkeypatch)
    calls = fake_kubernetes(monkeypatch, tmp_path, pods=[])
    with pytest.raises(RuntimeError, match="lists 0 pods with IP 10.1.2.3"):
        detected()
    assert len([c for c in calls if c[0] == "pods"]) == 3  # two retries, then the error


def test_kubernetes_api_forbidden(monkeypatch, tmp_path):
    kubernetes_pod(monkeypatch)
    error = FakeApiError(403, "Forbidden")
    fake_kubernetes(monkeypatch, tmp_path, pods=[], list_error=error)
    with pytest.raises(RuntimeError, match="API error 403 \\(Forbidden\\).*service account"):
        detected()


# -- Choosing ---------------------------------------------------------------------------------


def environment(
    name, *, present=True, priority=0, opt_in=False, address="h:1", count=2, process=0, local=None
):
    return ClusterEnvironment(
        name=name,
        is_present=lambda: present,
        coordinator_address=lambda: address,
        num_processes=lambda: count,
        process_id=lambda: process,
        priority=priority,
        local_device_ids=local,
        opt_in=opt_in,
        description=f"the {name} marker",
    )


def test_highest_priority_present_environment_wins():
    environments = [
        environment("low", priority=1),
        environment("absent", present=False, priority=9),
        environment("high", priority=5),
        environment("optin", priority=10, opt_in=True),
    ]
    assert detect(None, environments).name == "high"


def test_ties_keep_the_given_order():
    environments = [environment("first", priority=3), environment("second", priority=3)]
    assert detect(None, environments).name == "first"


def test_builtin_order_matches_jax(monkeypatch):
    set_env(monkeypatch, **SLURM)
    set_env(monkeypatch, OMPI_MCA_orte_hnp_uri="4096.0;tcp://10.0.0.9:1", OMPI_COMM_WORLD_SIZE="2")
    set_env(monkeypatch, OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_LOCAL_RANK="1")
    assert detected().name == "ompi"
    set_env(monkeypatch, EMBER_COORDINATOR_ADDRESS="me:5", EMBER_NUM_PROCESSES="1")
    set_env(monkeypatch, EMBER_PROCESS_ID="0")
    assert detected().name == "environment_variables"


def test_method_by_name_overrides_priority(monkeypatch):
    set_env(monkeypatch, **SLURM)
    set_env(monkeypatch, OMPI_MCA_orte_hnp_uri="4096.0;tcp://10.0.0.9:1")
    assert detected("slurm").name == "slurm"


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown cluster_detection_method 'pbs'.*'slurm'"):
        detected("pbs")
    with pytest.raises(TypeError, match="str or None"):
        detected(3)


def test_named_but_absent_says_what_it_looks_for():
    with pytest.raises(RuntimeError, match="does not run under 'ompi'.*OMPI_MCA_orte_hnp_uri"):
        detected("ompi")


def test_local_device_ids_are_read_and_checked():
    found = detect(None, [environment("x", local=lambda: (1, 0))])
    assert found.local_device_ids == [1, 0]
    with pytest.raises(ValueError, match="local_device_ids \\[-1\\]"):
        detect(None, [environment("x", local=lambda: [-1])])


@pytest.mark.parametrize(
    "fields,error,message",
    [
        ({"address": 5}, TypeError, "coordinator address 5"),
        ({"address": "nohost"}, ValueError, "bad coordinator address"),
        ({"count": "2"}, TypeError, "num_processes '2', not an integer"),
        ({"process": True}, TypeError, "process_id True"),
        ({"process": 2}, ValueError, "process_id 2 and num_processes 2"),
    ],
)
def test_invalid_values_from_an_environment(fields, error, message):
    with pytest.raises(error, match=message):
        detect(None, [environment("plugged", **fields)])


def test_is_present_raising_names_the_environment():
    def broken():
        raise OSError("no /proc")

    bad = ClusterEnvironment("broken", broken, str, int, int)
    with pytest.raises(PluginError, match="is_present of cluster environment 'broken'.*no /proc"):
        detect(None, [bad])


# -- Collecting through the plugin hook -------------------------------------------------------


@pytest.fixture
def plugins(monkeypatch):
    """Install the given plugin modules as the process's plugins (restored afterwards)."""

    def install(*modules):
        monkeypatch.setattr(manager_module, "_manager", manager_module._manager)
        sources = [PluginSource(name=m.__name__, module=m.__name__, obj=m) for m in modules]
        return manager_module.reset(sources=sources)

    return install


def plugin_module(name, hook):
    module = types.ModuleType(name)
    module.ember_cluster_environments = hookimpl(hook)
    return module


def test_registered_as_the_clusters_plugin():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = pathlib.Path(__file__).parents[3] / "core" / "pyproject.toml"
    entry_points = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    assert entry_points["ember_plugins"]["clusters"] == clusters.__name__


def test_builtins_come_through_the_hook(plugins):
    plugins(clusters)
    names = [e.name for e in all_environments()]
    assert names == ["environment_variables", "ompi", "slurm", "mpi4py", "kubernetes"]


def test_third_party_environment_is_detected(plugins, monkeypatch):
    monkeypatch.setenv("PBS_JOBID", "77.server")
    pbs = environment("pbs", priority=250, address="pbs-head:7000", count=3, process=1)
    pbs = dataclasses.replace(pbs, is_present=lambda: "PBS_JOBID" in os.environ)
    plugins(clusters, plugin_module("ember_plugin_pbs", lambda: [pbs]))
    environments = all_environments()
    assert [e.name for e in environments][:4] == ["environment_variables", "ompi", "pbs", "slurm"]
    set_env(monkeypatch, **SLURM)  # SLURM is present too, but the plugin's priority is higher
    assert detect(None, environments) == DetectedCluster("pbs", "pbs-head:7000", 3, 1, None)
    assert detect("slurm", environments).name == "slurm"


def test_hook_raising_names_the_plugin(plugins):
    def hook():
        raise KeyError("SCHEDULER_HOME")

    plugins(clusters, plugin_module("ember_plugin_bad", hook))
    with pytest.raises(PluginError, match="'ember_plugin_bad' failed in ember_cluster_environ"):
        all_environments()


def test_hook_returning_something_else(plugins):
    plugins(plugin_module("ember_plugin_odd", lambda: ["slurm"]))
    with pytest.raises(PluginError, match="'ember_plugin_odd'.*returned 'slurm', not an"):
        all_environments()


def test_duplicate_name_keeps_the_higher_priority(plugins):
    mine = environment("slurm", priority=500, address="mine:1")
    plugins(clusters, plugin_module("ember_plugin_slurm2", lambda: [mine]))
    with pytest.warns(PluginWarning, match="'slurm' of plugin 'ember.*clusters' is ignored"):
        environments = all_environments()
    assert [e for e in environments if e.name == "slurm"] == [mine]
