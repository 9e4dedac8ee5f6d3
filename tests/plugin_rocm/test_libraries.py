"""Finding the ROCm parts: the PJRT library where its wheel is installed (a fake
site-packages tree), and every ROCm runtime library it links that is missing, read from its
ELF needs (stand-in libraries built here; the real jax-rocm7-pjrt wheel when installed)."""

from __future__ import annotations

import importlib
import itertools
import pathlib
import sys
from dataclasses import dataclass

import pytest
from ember_plugin_rocm import libraries
from ember_plugin_rocm.libraries import MissingRocmPartError

FAKE_JAX_PLUGINS = "ember_test_rocm_jax_plugins"


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(libraries, "PJRT_PACKAGE", f"{FAKE_JAX_PLUGINS}.xla_rocm7")
    importlib.invalidate_caches()
    yield tmp_path
    monkeypatch.undo()
    for name in list(sys.modules):
        if name.partition(".")[0] == FAKE_JAX_PLUGINS:
            del sys.modules[name]


def test_the_pjrt_library_is_found_where_its_wheel_is_installed(site):
    package = site / FAKE_JAX_PLUGINS / "xla_rocm7"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    (package / "xla_rocm_plugin.so").write_bytes(b"\x7fELF")
    assert libraries.pjrt_library() == str(package / "xla_rocm_plugin.so")


def test_a_missing_pjrt_wheel_is_named_with_the_install_command(site):
    with pytest.raises(
        MissingRocmPartError,
        match=r"^missing ROCm wheel: jax-rocm7-pjrt \(XLA's ROCm PJRT plugin, package "
        rf"{FAKE_JAX_PLUGINS}.xla_rocm7\) is not installed; pip install "
        r"'ember-plugin-rocm\[rocm7\]'$",
    ):
        libraries.pjrt_library()


def test_rocm_path_names_where_rocm_is(monkeypatch):
    monkeypatch.delenv("ROCM_PATH", raising=False)
    assert libraries.rocm_library_dirs() == ["/opt/rocm/lib"]
    monkeypatch.setenv("ROCM_PATH", "/opt/rocm-7.0.2")
    assert libraries.rocm_library_dirs() == ["/opt/rocm-7.0.2/lib"]


# Stand-ins get names of their own in each test: a library once loaded stays loaded, and the
# loader would find it by soname in the next test.
_stand_in_names = itertools.count()


@dataclass
class StandIn:
    """A stand-in PJRT library linking two stand-in runtime libraries found through its run
    path ($ORIGIN/rocm), as XLA's ROCm plugin links HIP and RCCL."""

    plugin: pathlib.Path
    rocm: pathlib.Path
    hip: str
    rccl: str


@pytest.fixture
def stand_in(compile_library, tmp_path) -> StandIn:
    n = next(_stand_in_names)
    rocm = tmp_path / "rocm"
    hip, rccl = f"libember_hip_stand_in{n}.so.7", f"libember_rccl_stand_in{n}.so.1"
    for soname in (hip, rccl):
        source = "int f(void) { return 7; }\n"
        compile_library(soname, source, f"-Wl,-soname,{soname}", directory=rocm)
    plugin = compile_library(
        "stand_in_pjrt.so",
        "int g(void) { return 1; }\n",
        f"-L{rocm}",
        "-Wl,--no-as-needed",
        f"-l:{hip}",
        f"-l:{rccl}",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/rocm",
        directory=tmp_path,
    )
    return StandIn(plugin, rocm, hip, rccl)


def test_nothing_is_missing_when_the_run_path_has_everything(stand_in):
    assert libraries.missing_runtime(str(stand_in.plugin)) == []
    libraries.load_runtime(str(stand_in.plugin))  # no error


def test_each_missing_library_is_named(stand_in, monkeypatch):
    nowhere = stand_in.rocm.parent / "no_rocm_here"
    monkeypatch.setenv("ROCM_PATH", str(nowhere))
    (stand_in.rocm / stand_in.hip).unlink()
    (stand_in.rocm / stand_in.rccl).unlink()
    with pytest.raises(MissingRocmPartError) as caught:
        libraries.load_runtime(str(stand_in.plugin))
    lines = str(caught.value).splitlines()
    assert lines[0] == (
        f"missing ROCm runtime libraries: {stand_in.hip}, {stand_in.rccl} (needed by "
        f"stand_in_pjrt.so of jax-rocm7-pjrt; looked for in its run path, {nowhere / 'lib'} "
        "and the loader's path):"
    )
    assert lines[1].startswith(f"  {stand_in.hip}: cannot open shared object file")
    assert lines[2].startswith(f"  {stand_in.rccl}: cannot open shared object file")
    assert lines[3].startswith("install ROCm 7")


def test_a_library_of_another_rocm_release_is_named(stand_in):
    older = stand_in.rocm / stand_in.hip.replace(".so.7", ".so.6")
    (stand_in.rocm / stand_in.hip).rename(older)
    (missing,) = libraries.missing_runtime(str(stand_in.plugin))
    assert missing.soname == stand_in.hip
    assert missing.other_versions == (str(older),)
    message = libraries.runtime_message(str(stand_in.plugin), [missing])
    assert f"(found another version: {older})" in message
    assert message.endswith(
        "another ROCm release is installed: this plugin's PJRT library (jax-rocm7-pjrt 0.10.2) "
        "needs ROCm 7; install ROCm 7, or point ROCM_PATH at it"
    )


def test_libraries_in_rocm_path_are_found_and_loaded(stand_in, monkeypatch, tmp_path):
    moved = tmp_path / "opt_rocm" / "lib"
    moved.mkdir(parents=True)
    for path in stand_in.rocm.glob("*.so.*"):
        path.rename(moved / path.name)
    monkeypatch.setenv("ROCM_PATH", str(moved.parent))
    assert libraries.missing_runtime(str(stand_in.plugin)) == []


# The ROCm runtime libraries jax-rocm7-pjrt 0.10.2's xla_rocm_plugin.so links (its DT_NEEDED
# entries, in order, before the system's own libm, libc, ...).
ROCM_7_RUNTIME = (
    "librocprofiler-sdk.so.1",
    "librccl.so.1",
    "libhipblaslt.so.1",
    "libhipfft.so.0",
    "libMIOpen.so.1",
    "librocblas.so.5",
    "librocm_smi64.so.1",
    "libamdhip64.so.7",
)


def test_the_real_pjrt_library_names_the_missing_rocm_runtime():
    # needs the jax-rocm7-pjrt wheel (155 MB: not installed in CI) and no ROCm here
    try:
        library = libraries.pjrt_library()
    except MissingRocmPartError:
        pytest.skip("jax-rocm7-pjrt is not installed")
    missing = libraries.missing_runtime(library)
    if not missing:
        pytest.skip("ROCm 7 is installed here")
    assert tuple(m.soname for m in missing) == ROCM_7_RUNTIME
    with pytest.raises(MissingRocmPartError, match=r"^missing ROCm runtime libraries: "):
        libraries.load_runtime(library)
