"""The plugin kit's part of ember.ffi: XLA's FFI headers from jaxlib, and registering a user's
handler with XLA through the PJRT backend (only the CPU client takes them so far)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("jaxlib")

from ember._src.plugin.manager import backend
from ember_plugin_kit.pjrt import _jaxlib
from ember_plugin_kit.pjrt.backend import PjrtBackend


def test_the_ffi_headers_ship_with_jaxlib():
    include = _jaxlib.ffi_include_dir()
    for header in ("api.h", "c_api.h", "ffi.h"):
        assert os.path.isfile(os.path.join(include, "xla", "ffi", "api", header))


def test_xla_refusing_a_handler_is_a_value_error():
    # Before the first CPU client exists, jaxlib queues registrations (and raises when the
    # client is made): the core hands targets only to a running backend, as here.
    try:
        backend("cpu")
    except Exception as e:  # no cpu plugin, or the platforms chosen leave it out
        pytest.skip(f"no cpu backend: {e}")
    with pytest.raises(ValueError, match="XLA refused FFI target 'ember_kit_test_bad' for cpu"):
        _jaxlib.register_ffi_target("ember_kit_test_bad", "not a capsule", "cpu", 1)


def test_only_the_cpu_client_takes_handlers():
    backend = PjrtBackend.__new__(PjrtBackend)  # no client needed to refuse
    backend.platform = "cuda"
    with pytest.raises(NotImplementedError, match="'ember_kit_test' on cuda"):
        backend.register_ffi_target("ember_kit_test", object(), 1)
    with pytest.raises(NotImplementedError, match="'ember_kit_type' on cuda"):
        backend.register_ffi_type("ember_kit_type", {})
    assert backend.ffi_include_dir() == _jaxlib.ffi_include_dir()
