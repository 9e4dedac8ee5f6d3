"""The kit's GPU helpers, apart from any vendor: the options class two platforms use side by
side, a driver call with a deadline, and reading what a shared library needs."""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest

from ember import config
from ember.errors import BackendError
from ember_plugin_kit.gpu import GpuOptions, call_within, dynamic_section, missing_libraries


class ProbeError(Exception):
    pass


def make_options(platform: str) -> GpuOptions:
    options = GpuOptions(
        platform,
        display_name=platform.upper(),
        allocators=("default", "platform"),
        visibility_variable="EMBER_TEST_VISIBLE",
        allocator_help="test allocators.",
    )
    options.define()
    options.define()  # idempotent
    return options


def test_two_platforms_options_are_independent(monkeypatch):
    for name in ("XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION"):
        monkeypatch.delenv(name, raising=False)
    first, second = make_options("kitgpua"), make_options("kitgpub")
    assert first.names == (
        "kitgpua_visible_devices",
        "kitgpua_allocator",
        "kitgpua_memory_fraction",
        "kitgpua_preallocate",
    )
    with config.option("kitgpua_memory_fraction", "0.3"):
        assert first.client_options("A") == {
            "platform_name": "A",
            "allocator": "default",
            "memory_fraction": 0.3,
        }
        assert second.client_options("B") == {"platform_name": "B", "allocator": "default"}
        first.mark_started()
    with pytest.raises(BackendError, match="the KITGPUA backend already started"):
        with config.option("kitgpua_memory_fraction", "0.4"):
            pass
    with config.option("kitgpub_memory_fraction", "0.4"):  # the other platform did not start
        assert second.client_options("B")["memory_fraction"] == 0.4
    with pytest.raises(ValueError, match=r"kitgpub_allocator='vmm': .* one of default, platform$"):
        with config.option("kitgpub_allocator", "vmm"):
            pass


def test_call_within_answers_raises_or_gives_up():
    assert call_within(lambda: 7, 1, error=ProbeError, timeout_message="late") == 7

    def fails():
        raise ProbeError("no driver")

    with pytest.raises(ProbeError, match="^no driver$"):
        call_within(fails, 1, error=ProbeError, timeout_message="late")
    with pytest.raises(ZeroDivisionError):  # not the probe's error: passed on as it is
        call_within(lambda: 1 / 0, 1, error=ProbeError, timeout_message="late")
    release = threading.Event()
    try:
        with pytest.raises(ProbeError, match="^late$"):
            call_within(lambda: release.wait(10), 0.1, error=ProbeError, timeout_message="late")
    finally:
        release.set()


def test_a_libraries_needs_and_run_path_are_read_from_its_elf_header(tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    (tmp_path / "a.c").write_text("int f(void) { return 1; }\n")
    library = tmp_path / "libneeds.so"
    flags = ["-Wl,--no-as-needed", "-lm", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/deps:/opt/x"]
    command = [compiler, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "a.c"), *flags]
    subprocess.run(command, check=True, timeout=120, capture_output=True)
    section = dynamic_section(str(library))
    assert section.needed[0] == "libm.so.6" and "libc.so.6" in section.needed
    assert section.search_path == (str(tmp_path / "deps"), "/opt/x")
    assert missing_libraries(str(library)) == []


def test_a_file_that_is_not_elf_is_refused(tmp_path):
    (tmp_path / "text.so").write_text("not a library")
    with pytest.raises(ValueError, match="is not an ELF file"):
        dynamic_section(str(tmp_path / "text.so"))
