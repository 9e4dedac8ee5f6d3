"""Finding libtpu, refusing versions that do not pair with jaxlib 0.10.2, and the
environment libtpu reads when it loads."""

from __future__ import annotations

import importlib.util
import os

import pytest
from ember_plugin_tpu import library


def test_tpu_library_path_names_a_custom_build(tmp_path, monkeypatch):
    built = tmp_path / "libtpu.so"
    built.write_bytes(b"")
    monkeypatch.setenv("TPU_LIBRARY_PATH", str(built))
    assert library.library_path() == str(built)
    monkeypatch.setenv("TPU_LIBRARY_PATH", str(tmp_path / "missing.so"))
    with pytest.raises(library.MissingLibtpuError, match="missing.so is not a file"):
        library.library_path()


def test_without_libtpu_the_error_says_what_to_install(monkeypatch):
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "libtpu" else real(name)
    )
    with pytest.raises(library.MissingLibtpuError, match=r"libtpu is not installed: pip install"):
        library.library_path()


def test_a_libtpu_of_another_release_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    (tmp_path / "libtpu").mkdir()
    (tmp_path / "libtpu" / "__init__.py").write_text("")
    (tmp_path / "libtpu" / "libtpu.so").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(library, "installed_version", lambda: "0.0.30")
    with pytest.raises(library.MissingLibtpuError, match=r"libtpu 0.0.30 is installed, but"):
        library.library_path()
    monkeypatch.setattr(library, "installed_version", lambda: "0.0.42.1")
    found = library.library_path()
    assert found.endswith(os.path.join("libtpu", "libtpu.so"))


def test_off_a_tpu_vm_libtpu_does_not_ask_for_a_metadata_server(monkeypatch):
    monkeypatch.delenv("TPU_SKIP_MDS_QUERY", raising=False)
    library.prepare_environment(on_a_tpu_vm=True)
    assert "TPU_SKIP_MDS_QUERY" not in os.environ
    library.prepare_environment(on_a_tpu_vm=False)
    assert os.environ["TPU_SKIP_MDS_QUERY"] == "1"
    monkeypatch.setenv("TPU_SKIP_MDS_QUERY", "0")  # the user's choice stays
    library.prepare_environment(on_a_tpu_vm=False)
    assert os.environ["TPU_SKIP_MDS_QUERY"] == "0"
