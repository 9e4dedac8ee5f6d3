"""What the suites of ember's backend plugins (tests/plugin_cuda, plugin_rocm, plugin_tpu) share.

Those suites run in the cpu tox env without the plugin installed (so that the other suites see
only cpu and reference): a test that needs the plugin as users have it, found through its
entry point, makes it look installed in a directory of its own (a dist-info written from the
plugin's pyproject.toml, its sources from the repository) and runs Python there. Stand-in
driver libraries are compiled from C when a C compiler is present.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[1]


class PluginProject:
    """One of ember's plugin directories (``plugin_cuda``, ...): its metadata, an
    installed-looking copy of it, and Python run with that copy."""

    def __init__(self, directory: str):
        self.root = REPO / directory
        self.src = self.root / "src"

    def project(self) -> dict:
        return tomllib.loads((self.root / "pyproject.toml").read_text())["project"]

    def install_site(self, site: pathlib.Path) -> pathlib.Path:
        """Make the plugin look installed under ``site``: a dist-info with the name, version
        and entry points of its pyproject.toml (the sources come from ``src``)."""
        meta = self.project()
        package = meta["name"].replace("-", "_")
        info = site / f"{package}-{meta['version']}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
        )
        (info / "entry_points.txt").write_text(
            "".join(
                f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
                for group, points in meta["entry-points"].items()
            )
        )
        return site

    def run_python(
        self,
        args: list[str],
        site: pathlib.Path | None,
        *,
        timeout: float = 120,
        drop_variables: tuple[str, ...] = ("EMBER_",),
        library_dirs: tuple[pathlib.Path, ...] = (),
        **env: str,
    ) -> subprocess.CompletedProcess:
        """``python ARGS`` with the plugin installed through ``site`` (None: as this
        environment has it), the variables starting with ``drop_variables`` taken only from
        ``env``, and ``library_dirs`` searched first for shared libraries."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith(drop_variables)}
        if site is not None:
            path = [str(site), str(self.src), *filter(None, [os.environ.get("PYTHONPATH")])]
            environ["PYTHONPATH"] = os.pathsep.join(path)
        if library_dirs:
            found = [*map(str, library_dirs), *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
            environ["LD_LIBRARY_PATH"] = os.pathsep.join(found)
        environ.update(env)
        return subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environ,
            cwd=REPO,
        )


def compile_shared_library(
    directory: pathlib.Path, name: str, source: str, *flags: str
) -> pathlib.Path:
    """``directory/name``, a shared library built from C ``source`` (the calling test skips
    where there is no C compiler)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build a stand-in library")
    directory.mkdir(parents=True, exist_ok=True)
    path, source_file = directory / name, directory / f"{name}.c"
    source_file.write_text(source)
    command = [compiler, "-shared", "-fPIC", "-o", str(path), str(source_file), *flags]
    subprocess.run(command, check=True, timeout=120, capture_output=True)
    return path
