"""The C++ handlers of handlers.cc, compiled once per test module against the XLA FFI headers
``ember.ffi.include_dir()`` names, loaded with ctypes and registered for cpu."""

from __future__ import annotations

import ctypes
import pathlib
import shutil
import subprocess

import pytest

import ember
from ember import ffi

HANDLERS = pathlib.Path(__file__).with_name("handlers.cc")

# XLA's registry of handlers is process-wide and keeps a name's first handler: these names
# are the tests' own, registered once per process.
RMS_NORM = "ember_test_rms_norm"
SCALE_COUNT = "ember_test_scale_count"
COUNTER = "ember_test_counter"  # stateful: a dict of handlers by stage
COUNTER_STATE = "ember_test_counter_state"
_registered: list[ctypes.CDLL] = []


@pytest.fixture(scope="module")
def cpu():
    try:
        return ember.devices("cpu")[0]
    except Exception as e:  # no cpu plugin, or the platforms chosen leave it out
        pytest.skip(f"no cpu device: {e}")


@pytest.fixture(scope="module")
def handlers(cpu, tmp_path_factory):
    """The compiled library, its handlers registered for cpu (as RMS_NORM, SCALE_COUNT and
    COUNTER, with its state's type COUNTER_STATE)."""
    if _registered:
        return _registered[0]
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) on PATH to build the FFI handlers")
    library = tmp_path_factory.mktemp("ffi") / "libhandlers.so"
    command = [compiler, "-shared", "-fPIC", "-std=c++17", "-O1", "-w"]
    command += [f"-I{ffi.include_dir()}", str(HANDLERS), "-o", str(library)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert built.returncode == 0, built.stderr
    lib = ctypes.cdll.LoadLibrary(str(library))
    ffi.register_ffi_target(RMS_NORM, ffi.pycapsule(lib.RmsNorm), platform="cpu")
    ffi.register_ffi_target(SCALE_COUNT, ffi.pycapsule(lib.ScaleCount), platform="cpu")
    lib.CounterTypeId.restype = lib.CounterTypeInfo.restype = ctypes.c_void_p
    state = {
        "type_id": ffi.pycapsule(ctypes.c_void_p(lib.CounterTypeId())),
        "type_info": ffi.pycapsule(ctypes.c_void_p(lib.CounterTypeInfo())),
    }
    ffi.register_ffi_type(COUNTER_STATE, state, platform="cpu")
    stages = {
        "instantiate": ffi.pycapsule(lib.CounterInstantiate),
        "execute": ffi.pycapsule(lib.CounterExecute),
    }
    ffi.register_ffi_target(COUNTER, stages, platform="cpu")
    _registered.append(lib)
    return lib
