"""ember.profiler's traces: XLA's profiler through the CPU plugin (in a fresh process with the
cpu platform), and the clear errors without a backend that has a profiler."""

import json

import pytest

import ember
from ember import profiler
from tests.core.test_config import needs_cpu_plugin
from tests.core.util import run_ok

# Run once per module in a process of its own: traces a jitted function with annotations and a
# named_scope, with and without the Perfetto file, and reports what it found as JSON.
_CPU_SCRIPT = r"""
import glob, gzip, json, os, sys
import numpy as np
import ember, ember.numpy as enp
from ember import profiler

log_dir = sys.argv[1]
x = enp.asarray(np.arange(64, dtype=np.float32))

def body(a):
    with ember.named_scope("scope_in_trace"):
        return enp.sin(a) * 2.0

f = ember.jit(body)
f(x)
step = profiler.annotate_function(lambda a: f(a), name="annotated_function_name")
report = {}
with profiler.trace(os.path.join(log_dir, "plain")):
    with profiler.TraceAnnotation("annotation_name_set_by_test", batch=3):
        f(x).block_until_ready()
    with profiler.StepTraceAnnotation("train_step_name", step_num=7):
        step(x).block_until_ready()
    try:
        profiler.start_trace(os.path.join(log_dir, "second"))
    except RuntimeError as e:
        report["second_start"] = str(e)
try:
    profiler.stop_trace()
except RuntimeError as e:
    report["stop_without_start"] = str(e)
with profiler.trace(os.path.join(log_dir, "perfetto"), create_perfetto_trace=True):
    with profiler.TraceAnnotation("annotation_in_perfetto"):
        f(x).block_until_ready()
files = {}
for path in glob.glob(os.path.join(log_dir, "*", "plugins", "profile", "*", "*")):
    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    names = ["annotation_name_set_by_test", "train_step_name", "annotated_function_name",
             "scope_in_trace", "annotation_in_perfetto"]
    files[os.path.relpath(path, log_dir)] = {
        "size": len(data), "found": [n for n in names if n.encode() in data],
        "json": path.endswith(".json.gz") and isinstance(json.loads(data), dict),
    }
report["files"] = files
server = profiler.start_server(0)
try:
    profiler.start_server(0)
except ValueError as e:
    report["second_server"] = str(e)
profiler.stop_server()
try:
    profiler.stop_server()
except ValueError as e:
    report["stop_server_twice"] = str(e)
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("profiles")
    out = run_ok(["-c", _CPU_SCRIPT, str(log_dir)], EMBER_PLATFORMS="cpu")
    return json.loads(out.strip().splitlines()[-1])


def _files(report, run, suffix):
    return {
        path: facts
        for path, facts in report["files"].items()
        if path.startswith(run + "/") and path.endswith(suffix)
    }


@needs_cpu_plugin
def test_trace_writes_an_xplane_with_the_annotations_and_scopes(cpu_report):
    (facts,) = _files(cpu_report, "plain", ".xplane.pb").values()
    assert facts["size"] > 0
    assert set(facts["found"]) == {
        "annotation_name_set_by_test",
        "train_step_name",
        "annotated_function_name",
        "scope_in_trace",  # XLA's op names carry the named_scope names
    }
    assert not _files(cpu_report, "plain", "perfetto_trace.json.gz")


@needs_cpu_plugin
def test_perfetto_trace_is_written_when_asked(cpu_report):
    (facts,) = _files(cpu_report, "perfetto", "perfetto_trace.json.gz").values()
    assert facts["json"] and "annotation_in_perfetto" in facts["found"]


@needs_cpu_plugin
def test_one_trace_and_one_server_at_a_time(cpu_report):
    assert cpu_report["second_start"] == (
        "Profile has already been started. Only one profile may be run at a time."
    )
    assert cpu_report["stop_without_start"] == "No profile started"
    assert cpu_report["second_server"] == "Only one profiler server can be active at a time."
    assert cpu_report["stop_server_twice"] == "No active profiler server."


def test_without_a_profiler_starting_a_trace_is_a_clear_error(tmp_path):
    if ember.default_backend() != "reference":
        pytest.skip("checks the reference backend, which has no profiler")
    with pytest.raises(ember.errors.BackendError, match="needs a backend with a profiler"):
        profiler.start_trace(tmp_path)
    with pytest.raises(ember.errors.BackendError, match="'reference', has none"):
        profiler.start_server(0)
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()  # the failed start left nothing running


def test_annotations_work_without_a_trace():
    with profiler.TraceAnnotation("nothing records this", k=1) as span:
        assert span.name == "nothing records this" and span.metadata == {"k": 1}
    step = profiler.StepTraceAnnotation("step", step_num=2)
    assert step.metadata == {"_r": 1, "step_num": 2}

    def add(a, b=1):
        return a + b

    annotated = profiler.annotate_function(add, name="adding", kind="test")
    assert annotated(2, b=3) == 5 and annotated.__name__ == "add"
