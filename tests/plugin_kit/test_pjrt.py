"""The PJRT bridge on XLA's CPU client (needs jaxlib: run in the `cpu` tox env)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

pjrt = pytest.importorskip("ember_plugin_kit.pjrt")

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402
from ember.errors import CompileError, ExecutionError  # noqa: E402
from ember.extend import Computation  # noqa: E402
from ember_plugin_kit.pjrt import _jaxlib, backend as pjrt_backend  # noqa: E402
from tests.core.util import run_python  # noqa: E402


@pytest.fixture(scope="module")
def cpu():
    return ember.devices("cpu")[0]


def test_compile_error_quotes_the_lowered_op():
    text = "module {\n  func.func @main() {\n    %0 = stablehlo.frobnicate : tensor<f32>\n  }\n}"
    message = "-:3:10: error: custom op 'stablehlo.frobnicate' is unknown"
    described = pjrt.describe_compile_error("jit_f", text, message)
    assert "line 3: %0 = stablehlo.frobnicate : tensor<f32>" in described
    assert "custom op 'stablehlo.frobnicate' is unknown" in described


def test_bad_module_raises_compile_error_naming_the_op(cpu):
    closed = ember.make_jaxpr(lambda x: x)(np.float32(0))
    text = (
        "func.func public @main(%a: tensor<f32>) -> tensor<f32> {\n"
        '  %0 = "stablehlo.no_such_op"(%a) : (tensor<f32>) -> tensor<f32>\n'
        "  return %0 : tensor<f32>\n}"
    )
    bad = Computation("jit_bad", closed, devices=[cpu], text={"cpu": text})
    with pytest.raises(CompileError, match="jit_bad") as info:
        cpu.backend.compile(bad)
    assert "stablehlo.no_such_op" in str(info.value)


def test_float64_survives_the_transfer_under_x64(cpu):
    with ember.config.option("enable_x64", True):
        x = ember.device_put(np.array([1 + 2**-40], np.float64), cpu)
        assert x.dtype == np.float64
        assert np.asarray(x)[0] == 1 + 2**-40
        y = x * 2
        assert np.asarray(y)[0] == 2 + 2**-39


def test_reusing_a_donated_buffer_is_an_execution_error(cpu):
    f = ember.jit(lambda x: x + 1, donate_argnums=0)
    x = ember.device_put(np.zeros(4, np.float32), cpu)
    f(x)
    raw = x._buffer
    executable = f.lower(np.zeros(4, np.float32)).compile()._executable
    with pytest.raises(ExecutionError, match="deleted or donated"):
        executable.execute([raw])


@pytest.mark.slow
def test_copy_between_devices():
    code = (
        "import ember, numpy as np\n"
        "d = ember.devices()\n"
        "assert len(d) == 4, d\n"
        "x = ember.device_put(np.arange(3.0), d[2])\n"
        "y = ember.device_put(x, d[3])\n"
        "assert y.devices() == {d[3]} and (x * 2).devices() == {d[2]}\n"
        "print(np.asarray(y + 1).tolist())\n"
    )
    done = run_python(code, EMBER_CPU_DEVICE_COUNT="4", EMBER_PLATFORMS="cpu")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1.0, 2.0, 3.0]"


@pytest.mark.slow
def test_bad_device_count_is_reported():
    code = (
        "import ember\n"
        "try:\n    ember.devices()\nexcept ember.errors.BackendError as e:\n    print(e)"
    )
    done = run_python(code, EMBER_CPU_DEVICE_COUNT="0", EMBER_PLATFORMS="cpu")
    assert "cpu_device_count must be a positive integer, not 0" in done.stdout


@pytest.mark.slow
def test_jaxlib_is_quiet_by_default():
    code = (
        "import ember, ember.numpy as enp\n"
        "f = ember.jit(lambda x: enp.tanh(x) @ x.T)\n"
        "f(enp.ones((64, 64))).block_until_ready()\n"
    )
    done = run_python(code, EMBER_PLATFORMS="cpu")
    assert done.returncode == 0
    assert done.stderr == ""


def test_executable_reports_hlo_and_memory(cpu):
    compiled = ember.jit(lambda a: enp.sin(a) * 2, device=cpu).lower(np.ones(16, np.float32))
    compiled = compiled.compile()
    assert "sine" in compiled.as_text()
    stats = compiled.memory_analysis()
    assert stats.argument_size_in_bytes == 64
    assert stats.output_size_in_bytes == 64


def test_eager_ops_match_numpy_on_cpu(cpu, rng):
    x = rng.normal(size=(3, 5)).astype(np.float32)
    xd = ember.device_put(x, cpu)
    np.testing.assert_allclose(np.asarray(enp.exp(xd) @ xd.T), np.exp(x) @ x.T, rtol=1e-5)


def _one_device_computation(device, fn=lambda x: x * 2.0):
    closed = ember.make_jaxpr(fn)(np.ones(4, np.float32))
    text = ember.jit(fn, device=device).lower(np.ones(4, np.float32)).as_text()
    return Computation("jit_f", closed, devices=[device], text={"cpu": text})


def test_a_serialized_executable_loads_back_and_runs(cpu):
    computation = _one_device_computation(cpu)
    blob = cpu.backend.compile(computation).serialize()
    loaded = cpu.backend.deserialize_executable(computation, blob)
    x = ember.device_put(np.arange(4, dtype=np.float32), cpu)
    (out,) = loaded.execute([x._buffer])
    np.testing.assert_array_equal(cpu.backend.buffer_to_numpy(out), [0, 2, 4, 6])
    with pytest.raises(CompileError, match="could not load the compiled jit_f"):
        cpu.backend.deserialize_executable(computation, blob[: len(blob) // 2])


def test_the_cache_fingerprint_covers_versions_devices_and_compiler_flags(cpu, monkeypatch):
    computation = _one_device_computation(cpu)
    fingerprint = cpu.backend.cache_fingerprint(computation)
    assert f"jaxlib {pjrt.JAXLIB_VERSION}".encode() in fingerprint
    assert f"devices {cpu.id}:{cpu.device_kind}:0".encode() in fingerprint
    assert fingerprint == cpu.backend.cache_fingerprint(computation)  # deterministic
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/somewhere")
    assert cpu.backend.cache_fingerprint(computation) == fingerprint  # dumping changes nothing
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true --xla_dump_hlo_as_text")
    assert cpu.backend.cache_fingerprint(computation) != fingerprint
    assert pjrt_backend.compiler_flags() == ["--xla_cpu_enable_fast_math=true"]


# -- StableHLO portable artifacts (ember.export) ---------------------------------------------------

ADD_ONE = """module @m {
  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
"""


def test_portable_artifact_round_trip(cpu):
    backend = cpu.backend
    versions = backend.stablehlo_versions()
    assert set(versions) == {"current", "minimum", "week_4", "week_12"}
    artifact = backend.to_portable_artifact(ADD_ONE, versions["week_4"])
    assert artifact.startswith(b"ML\xefR")
    text = backend.from_portable_artifact(artifact)
    assert "func.func public @main" in text and "stablehlo.add" in text
    with pytest.raises(ValueError, match="not a portable artifact"):
        backend.from_portable_artifact(b"ML\xefR" + b"\x00" * 8)
    with pytest.raises(ValueError, match="could not be serialised"):
        backend.to_portable_artifact("module { bad }", versions["week_4"])


def test_dynamic_shapes_are_refined_before_compiling(cpu):
    from ember_plugin_kit.pjrt.backend import has_dynamic_shapes

    assert has_dynamic_shapes("tensor<?x4xf32>") and has_dynamic_shapes("tensor<4x?xi8>")
    assert not has_dynamic_shapes(ADD_ONE)
    text = """module @m {
  func.func private @poly(%arg0: tensor<?xf32>) -> tensor<?xf32> {
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    return %0 : tensor<?xf32>
  }
  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "stablehlo.convert"(%arg0) : (tensor<3xf32>) -> tensor<?xf32>
    %1 = "func.call"(%0) <{callee = @poly}> : (tensor<?xf32>) -> tensor<?xf32>
    %2 = "stablehlo.convert"(%1) : (tensor<?xf32>) -> tensor<3xf32>
    return %2 : tensor<3xf32>
  }
}
"""
    closed = ember.make_jaxpr(lambda x: x + x)(np.zeros(3, np.float32))
    executable = cpu.backend.compile(Computation("poly", closed, devices=[cpu], text={"cpu": text}))
    x = ember.device_put(np.arange(3, dtype=np.float32), cpu)
    (out,) = executable.execute([x._buffer])
    np.testing.assert_array_equal(cpu.backend.buffer_to_numpy(out), [0, 2, 4])


# -- a platform's compiler debug options (the CUDA plugin's ptxas/libdevice directory) ------------


def test_debug_options_reach_every_compile_and_the_cache_fingerprint(cpu):
    plain = _jaxlib.compile_options([cpu.raw])
    assert plain.executable_build_options.debug_options.xla_gpu_cuda_data_dir != "/opt/cuda-x"
    chosen = _jaxlib.compile_options([cpu.raw], {"xla_gpu_cuda_data_dir": "/opt/cuda-x"})
    assert chosen.executable_build_options.debug_options.xla_gpu_cuda_data_dir == "/opt/cuda-x"
    with pytest.raises(ValueError, match="XLA has no compiler debug option 'xla_no_such_flag'"):
        _jaxlib.compile_options([cpu.raw], {"xla_no_such_flag": 1})
    # a backend built with debug options compiles and runs with them; its cache key differs
    backend = pjrt.PjrtBackend(
        "cpu", cpu.backend.client, debug_options={"xla_gpu_cuda_data_dir": "/opt/cuda-x"}
    )
    device = backend.devices()[0]
    computation = _one_device_computation(device)
    x = backend.buffer_from_numpy(np.arange(4, dtype=np.float32), computation.in_avals[0], device)
    (out,) = backend.compile(computation).execute([x])
    np.testing.assert_array_equal(backend.buffer_to_numpy(out), [0, 2, 4, 6])
    assert backend.cache_fingerprint(computation) != cpu.backend.cache_fingerprint(
        _one_device_computation(cpu)
    )


class _FullDevice:
    def memory_stats(self):
        return {"bytes_in_use": 70_000, "bytes_limit": 80_000}

    def __repr__(self):
        return "cuda:0"


def test_a_put_that_does_not_fit_names_the_device_and_its_memory(cpu):
    aval = _one_device_computation(cpu).in_avals[0]
    exc = pjrt.XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 16 bytes")
    message = pjrt_backend.no_room_message(_FullDevice(), aval, 16, exc)
    assert message == (
        "cuda:0 has no room for f32[4] (16 bytes); 70000 of its 80000 bytes are in use: "
        "RESOURCE_EXHAUSTED: Out of memory allocating 16 bytes"
    )


FAKE_EXTENSION = """
calls = []
def ffi_types():
    return {"PlanCache": {"type_id": "id"}}
def ffi_handlers():
    return {"xla_ffi_python_gpu_callback": "handler-1", "dce_sink": "handler-2"}
def register_custom_type(c_api, name, type_id):
    calls.append(("type", c_api, name, type_id))
def register_custom_call_target(c_api, name, fn, platform, api_version, traits):
    calls.append(("target", c_api, name, fn, platform, api_version, traits))
"""


def test_a_plugin_extensions_ffi_handlers_are_registered_once(tmp_path, monkeypatch):
    (tmp_path / "ember_test_ffi_extension.py").write_text(FAKE_EXTENSION)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_jaxlib, "_registered_extensions", {})
    loads = []
    monkeypatch.setattr(_jaxlib, "plugin_c_api", lambda *a: loads.append(a) or "c-api")
    register = pjrt.register_plugin_extension
    names = register("gpux", "/lib/gpux.so", "ember_test_ffi_extension", "CUDA")
    assert names == ["xla_ffi_python_gpu_callback", "dce_sink"]
    assert loads == [("gpux", "/lib/gpux.so")]
    extension = importlib.import_module("ember_test_ffi_extension")
    assert extension.calls == [
        ("type", "c-api", "PlanCache", {"type_id": "id"}),
        ("target", "c-api", "xla_ffi_python_gpu_callback", "handler-1", "CUDA", 1, 0),
        ("target", "c-api", "dce_sink", "handler-2", "CUDA", 1, 0),
    ]
    # a second start in the process registers nothing again
    assert register("gpux", "/lib/gpux.so", "ember_test_ffi_extension", "CUDA") == names
    assert len(extension.calls) == 3 and len(loads) == 1
    with pytest.raises(ModuleNotFoundError):
        register("gpux", "/lib/gpux.so", "ember_test_no_such_extension", "CUDA")


def test_handler_modules_register_through_the_extension(tmp_path, monkeypatch):
    (tmp_path / "ember_test_ffi_extension3.py").write_text(FAKE_EXTENSION)
    (tmp_path / "ember_test_solver_handlers.py").write_text(
        "def registrations():\n    return {'vendor_potrf_ffi': 'handler-3'}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_jaxlib, "_registered_extensions", {})
    monkeypatch.setattr(_jaxlib, "plugin_c_api", lambda *a: "c-api")
    names = pjrt.register_plugin_extension(
        "gpux", "/l.so", "ember_test_ffi_extension3", "CUDA", ("ember_test_solver_handlers",)
    )
    assert names == ["xla_ffi_python_gpu_callback", "dce_sink", "vendor_potrf_ffi"]
    extension = importlib.import_module("ember_test_ffi_extension3")
    assert extension.calls[-1] == ("target", "c-api", "vendor_potrf_ffi", "handler-3", "CUDA", 1, 0)


def test_an_extension_of_a_plugin_another_jaxlib_user_loaded_registers_nothing(
    tmp_path, monkeypatch
):
    (tmp_path / "ember_test_ffi_extension2.py").write_text(FAKE_EXTENSION)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_jaxlib, "_registered_extensions", {})
    monkeypatch.setattr(_jaxlib, "plugin_c_api", lambda *a: None)  # JAX loaded it first
    assert (
        pjrt.register_plugin_extension("gpux", "/l.so", "ember_test_ffi_extension2", "CUDA") == []
    )
