"""python -m ember export inspect FILE [--mlir]."""

import os
import pathlib
import subprocess
import sys

import pytest

import ember

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"


def run_cli(*args, platforms=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    if platforms:
        env["EMBER_PLATFORMS"] = platforms
    return subprocess.run(
        [sys.executable, "-m", "ember", "export", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_inspect_prints_the_metadata_without_a_backend():
    done = run_cli("inspect", str(GOLDEN / "mlp_vjp1.emberexp"), platforms="reference")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "ember export, format version 1" in out
    assert "function            mlp" in out
    assert "platforms           cpu" in out
    assert "args[0]['w1']     f32[3,5]" in out
    assert "args[1]           f32[4,3]" in out
    assert "out               f32[4,2]" in out
    assert "StableHLO >= 1.15.0" in out
    assert "VJP                 order 1" in out
    assert "module " in out and "metadata " in out


@pytest.mark.skipif(ember.default_backend() == "reference", reason="needs a PJRT backend")
def test_inspect_mlir_prints_the_module():
    done = run_cli("inspect", "--mlir", str(GOLDEN / "softplus_cpu_cuda.emberexp"))
    assert done.returncode == 0, done.stderr
    assert "platforms           cpu, cuda" in done.stdout
    assert "stablehlo.case" in done.stdout


def test_bad_files_exit_1_with_the_reason(tmp_path):
    bad = tmp_path / "bad.emberexp"
    bad.write_bytes(b"EMBEREXP\x07\x00")
    done = run_cli("inspect", str(bad), platforms="reference")
    assert done.returncode == 1
    assert "truncated" in done.stderr and "Traceback" not in done.stderr
    done = run_cli("inspect", str(tmp_path / "missing.emberexp"), platforms="reference")
    assert done.returncode == 1 and "cannot read" in done.stderr


def test_inspect_prints_devices_and_shardings():
    done = run_cli("inspect", str(GOLDEN / "sharded_affine_2dev.emberexp"), platforms="reference")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "devices             2, over the mesh batch=2 (axis types Auto)" in out
    assert "args[0]           f32[4,3]          PartitionSpec('batch')  {devices=[2,1]0,1}" in out
    assert "args[1]           f32[3,2]          PartitionSpec()  {replicated}" in out
    assert "out               f32[4,2]          PartitionSpec('batch')  {devices=[2,1]0,1}" in out
    one_device = run_cli("inspect", str(GOLDEN / "scan.emberexp"), platforms="reference")
    assert "devices             1\n" in one_device.stdout
    assert "PartitionSpec" not in one_device.stdout
