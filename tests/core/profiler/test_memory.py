"""ember.profiler.device_memory_profile: gzip-compressed pprof from the CPU plugin's client."""

import gzip
import json

import pytest

import ember
from ember import profiler
from tests.core.test_config import needs_cpu_plugin
from tests.core.util import run_ok

_CPU_SCRIPT = r"""
import json, sys
import numpy as np
import ember, ember.numpy as enp
from ember import profiler

held = enp.asarray(np.ones((256, 256), np.float32))  # 256 KiB on the device
profile = profiler.device_memory_profile()
profiler.save_device_memory_profile(sys.argv[1])
print(json.dumps({"profile": profile.hex(), "saved": open(sys.argv[1], "rb").read().hex()}))
"""


def _fields(message: bytes):
    """(field number, wire type, value) of a protobuf message (varints and byte strings)."""
    i = 0
    while i < len(message):
        key, i = _varint(message, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(message, i)
        elif wire == 2:
            size, i = _varint(message, i)
            value, i = message[i : i + size], i + size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        yield number, wire, value


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


@needs_cpu_plugin
def test_profile_is_gzip_pprof_naming_the_held_bytes(tmp_path):
    out = run_ok(["-c", _CPU_SCRIPT, str(tmp_path / "memory.prof")], EMBER_PLATFORMS="cpu")
    report = json.loads(out.strip().splitlines()[-1])
    profile = bytes.fromhex(report["profile"])
    assert profile[:2] == b"\x1f\x8b"  # gzip's magic
    assert gzip.decompress(bytes.fromhex(report["saved"]))  # the saved file is one too
    fields = list(_fields(gzip.decompress(profile)))
    strings = [value.decode() for number, _, value in fields if number == 6]  # string_table
    assert strings[0] == ""  # pprof's rule: the table starts with the empty string
    sample_types = [value for number, _, value in fields if number == 1]
    assert sample_types, "a pprof Profile names its sample types first"
    names = {strings[v] for t in sample_types for n, _, v in _fields(t) if n == 1}
    assert {"allocations", "space"} <= names
    samples = [value for number, _, value in fields if number == 2]
    assert samples


def test_without_a_memory_profile_it_is_a_clear_error(tmp_path):
    with pytest.raises(ember.errors.BackendError, match="cannot profile device memory"):
        profiler.device_memory_profile("reference")
    with pytest.raises(ember.errors.BackendError):
        profiler.save_device_memory_profile(tmp_path / "x.prof", backend="reference")
    assert not (tmp_path / "x.prof").exists()
