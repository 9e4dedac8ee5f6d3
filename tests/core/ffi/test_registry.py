"""ember.ffi's registration: capsules, targets and types handed to a platform's backend (now,
or when a program calling one is first lowered for it), include_dir, and the errors."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import ffi
from ember._src.ffi import registry
from tests.core.ffi.conftest import COUNTER, RMS_NORM


def test_pycapsule_wraps_a_ctypes_function_pointer():
    fn = ctypes.pythonapi.Py_IsInitialized
    capsule = ffi.pycapsule(fn)
    assert type(capsule).__name__ == "PyCapsule"
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
    assert get(capsule, None) == ctypes.cast(fn, ctypes.c_void_p).value


def test_pycapsule_refuses_a_null_pointer():
    with pytest.raises(TypeError, match="not a ctypes function pointer"):
        ffi.pycapsule(ctypes.CFUNCTYPE(None)())


def test_bad_registrations():
    capsule = ffi.pycapsule(ctypes.pythonapi.Py_IsInitialized)
    with pytest.raises(TypeError, match="must be a PyCapsule"):
        ffi.register_ffi_target("ember_test_bad", lambda: 0)
    with pytest.raises(TypeError, match="not one: prepare"):
        ffi.register_ffi_target("ember_test_bad", {"execute": capsule, "prepare": 3})
    with pytest.raises(ValueError, match="api_version must be 1"):
        ffi.register_ffi_target("ember_test_bad", capsule, api_version=4)
    with pytest.raises(TypeError, match="platform must be"):
        ffi.register_ffi_target("ember_test_bad", capsule, platform=None)
    with pytest.raises(TypeError, match="'type_id' PyCapsule"):
        ffi.register_ffi_type("ember_test_type", {"type_info": capsule})
    with pytest.raises(NotImplementedError, match="register_ffi_type\\(name"):
        ffi.register_ffi_type_id("ember_test_type", capsule)
    assert "ember_test_bad" not in registry.registered_targets("cpu")


def test_a_target_for_a_platform_that_is_not_running_waits_for_it():
    capsule = ffi.pycapsule(ctypes.pythonapi.Py_IsInitialized)
    ffi.register_ffi_target("ember_test_waiting", capsule, platform="gpu")  # no GPU here
    assert "ember_test_waiting" in registry.registered_targets("cuda")
    assert "ember_test_waiting" in registry.registered_targets("rocm")


def test_the_reference_backend_takes_no_targets():
    ember.devices("reference")  # started: the registration goes to it at once
    capsule = ffi.pycapsule(ctypes.pythonapi.Py_IsInitialized)
    with pytest.raises(NotImplementedError, match="reference backend cannot register"):
        ffi.register_ffi_target("ember_test_on_reference", capsule, platform="reference")
    assert "ember_test_on_reference" not in registry.registered_targets("reference")


def test_include_dir_holds_the_ffi_headers(cpu):
    assert os.path.isfile(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))


def test_xla_keeps_the_first_handler_of_a_name(handlers):
    with pytest.raises(ValueError, match="Duplicate FFI handler"):
        ffi.register_ffi_target(RMS_NORM, ffi.pycapsule(handlers.ScaleCount), platform="cpu")
    x = np.ones((1, 4), np.float32)  # the first handler still runs
    out = ffi.ffi_call(RMS_NORM, ember.ShapeDtypeStruct(x.shape, x.dtype))(x, eps=np.float32(0))
    np.testing.assert_allclose(out, x)
    # the same handler again is fine
    ffi.register_ffi_target(RMS_NORM, ffi.pycapsule(handlers.RmsNorm), platform="cpu")


def test_a_stateful_handler_registered_by_stage_with_its_state_type(handlers):
    # XLA instantiates the state once per compiled program; every run then counts on it
    count = ffi.ffi_call(COUNTER, ember.ShapeDtypeStruct((), np.int32), has_side_effect=True)
    program = ember.jit(lambda: count())
    assert [int(program()) for _ in range(3)] == [1, 2, 3]
    assert int(ember.jit(lambda: count())()) == 1  # another program, another state


_LATE_BACKEND = """
import ctypes, sys
import numpy as np
from ember._src.plugin.manager import manager
from ember import ffi
lib = ctypes.cdll.LoadLibrary(sys.argv[1])
ffi.register_ffi_target("late_rms_norm", ffi.pycapsule(lib.RmsNorm), platform="cpu")
assert "cpu" not in manager().started_platforms()  # registered before the backend exists
import ember
from ember.sharding import Mesh, PartitionSpec as P
x = np.array([[3.0, 4.0], [1.0, 0.0]], np.float32)
call = ffi.ffi_call("late_rms_norm", ember.ShapeDtypeStruct((1, 2), x.dtype))
mesh = Mesh(np.array(ember.devices()), ("b",))
# inside shard_map each of the two devices calls the handler on its own row
f = ember.shard_map(lambda x: call(x, eps=np.float32(0.0)), mesh=mesh, in_specs=P("b"),
                    out_specs=P("b"))
print(np.asarray(ember.jit(f)(x)).tolist())
"""


def test_a_backend_created_after_the_registration_gets_the_target(handlers):
    env = dict(os.environ, EMBER_PLATFORMS="cpu", EMBER_CPU_DEVICE_COUNT="2")
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-c", _LATE_BACKEND, handlers._name],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    # the root mean square of (3, 4) is sqrt(12.5), of (1, 0) sqrt(0.5)
    got = np.array(json.loads(done.stdout.strip().splitlines()[-1]))
    want = [[3 / 12.5**0.5, 4 / 12.5**0.5], [1 / 0.5**0.5, 0.0]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
