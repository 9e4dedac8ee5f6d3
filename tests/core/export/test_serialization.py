"""The export file format: bad files are refused with ExportError naming the problem, and the
golden files written by this version load (everywhere) and run (on a PJRT backend)."""

import json
import pathlib
import struct

import numpy as np
import pytest

import ember
from ember._src.export import serialization
from ember.errors import ExportError
from ember.export import deserialize
from tests.core.export.golden.write_golden import GOLDEN
from tests.core.util import assert_close

GOLDEN_DIR = pathlib.Path(__file__).resolve().parent / "golden"
needs_pjrt = pytest.mark.skipif(
    ember.default_backend() == "reference", reason="runs StableHLO: needs a PJRT backend"
)
MODULE = serialization.MLIR_BYTECODE_MAGIC + b"\x00" * 12


def good_metadata(**changes):
    metadata = {
        "function_name": "f",
        "in_tree": ["tuple", [["tuple", [["leaf"]]], ["dict", [], []]]],
        "out_tree": ["leaf"],
        "in_avals": [{"shape": ["3"], "dtype": "float32"}],
        "out_avals": [{"shape": ["3"], "dtype": "float32"}],
        "in_shardings": [None],
        "out_shardings": [None],
        "platforms": ["cpu"],
        "nr_devices": 1,
        "ordered_effects": [],
        "unordered_effects": [],
        "disabled_checks": [],
        "calling_convention_version": 9,
        "stablehlo_version": "1.15.0",
        "stablehlo_producer_version": "1.17.0",
    }
    metadata.update(changes)
    return metadata


def test_write_then_read_round_trips():
    blob = serialization.write(good_metadata(), MODULE, None)
    assert blob.startswith(b"EMBEREXP")
    metadata, module, vjp = serialization.read(blob)
    assert metadata["function_name"] == "f"
    assert metadata["module_size"] == len(MODULE)
    assert module == MODULE and vjp is None
    exported = deserialize(blob)
    assert exported.fun_name == "f"
    assert exported.in_avals[0].shape == (3,) and exported.in_avals[0].dtype == np.float32
    assert exported.platforms == ("cpu",) and exported.nr_devices == 1
    assert not exported.has_vjp()


def _bad(blob, match):
    with pytest.raises(ExportError, match=match):
        deserialize(blob)


def test_empty_and_foreign_data():
    _bad(b"", "empty")
    _bad(b"PK\x03\x04 a zip file, not an export", "bad magic")
    _bad(b"\x89PNG", "bad magic")
    with pytest.raises(TypeError, match="expects bytes"):
        deserialize("EMBEREXP")


def test_truncated_files_name_what_is_missing():
    blob = serialization.write(good_metadata(), MODULE, None)
    _bad(blob[:5], "truncated .* header")
    _bad(blob[:20], "truncated .* metadata needs")
    _bad(blob[:-3], "truncated .* announces")
    _bad(blob + b"xx", "2 bytes follow the end")


def test_newer_format_version_is_refused():
    blob = bytearray(serialization.write(good_metadata(), MODULE, None))
    struct.pack_into("<H", blob, 8, serialization.FORMAT_VERSION + 1)
    _bad(bytes(blob), "unsupported ember export format version 2")


def _with_metadata(raw: bytes, module=MODULE) -> bytes:
    return struct.pack("<8sHI", b"EMBEREXP", 1, len(raw)) + raw + module


def test_bad_metadata():
    _bad(_with_metadata(b"{not json"), "not JSON")
    _bad(_with_metadata(b"[1, 2]"), "not a JSON object")
    missing = good_metadata(module_size=len(MODULE), vjp_size=0)
    del missing["platforms"]
    _bad(_with_metadata(json.dumps(missing).encode()), "no 'platforms'")
    wrong = good_metadata(module_size=len(MODULE), vjp_size=0, nr_devices="one")
    _bad(_with_metadata(json.dumps(wrong).encode()), "'nr_devices' is 'one', expected int")
    for field, value, match in [
        ("in_avals", [{"shape": ["b / 2"], "dtype": "float32"}], "symbols and expressions"),
        ("in_avals", [{"shape": ["3"], "dtype": "U5"}], "dtype"),
        ("in_tree", ["set", []], "not a pytree structure"),
        ("platforms", [3], "list of names"),
        ("calling_convention_version", 99, "calling convention version 99"),
    ]:
        blob = serialization.write(good_metadata(**{field: value}), MODULE, None)
        _bad(blob, match)
    blob = serialization.write(good_metadata(out_avals=[]), MODULE, None)
    _bad(blob, "does not fit")


def test_artifact_that_is_not_bytecode():
    blob = serialization.write(good_metadata(), b"module { }", None)
    _bad(blob, "not MLIR bytecode")


@needs_pjrt
def test_artifact_that_does_not_parse_fails_clearly():
    exported = deserialize(serialization.write(good_metadata(), MODULE, None))
    with pytest.raises(ExportError, match="bad StableHLO artifact"):
        exported.call(np.zeros(3, np.float32))


# -- golden files: written by this version, loaded by every later one ---------------------------


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_files_load(name):
    blob = (GOLDEN_DIR / name).read_bytes()
    exported = deserialize(blob)
    fun, args, options, vjp_order = GOLDEN[name]
    assert exported.fun_name == fun.__name__
    assert exported.platforms == tuple(options.get("platforms", ("cpu",)))
    assert [a.shape for a in exported.in_avals] == [tuple(a.shape) for a in ember.tree.leaves(args)]
    assert exported.has_vjp() == (vjp_order > 0)


def _golden(name):
    return deserialize((GOLDEN_DIR / name).read_bytes())


def _np_mlp(params, x):
    return np.tanh(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _mlp_inputs():
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(3, 5)).astype(np.float32),
        "b1": rng.normal(size=5).astype(np.float32),
        "w2": rng.normal(size=(5, 2)).astype(np.float32),
        "b2": rng.normal(size=2).astype(np.float32),
    }
    return params, rng.normal(size=(4, 3)).astype(np.float32)


@needs_pjrt
def test_golden_mlp_runs_and_differentiates():
    exported = _golden("mlp_vjp1.emberexp")
    params, x = _mlp_inputs()
    assert_close(exported.call(params, x), _np_mlp(params, x), rtol=1e-5)

    def loss(p):
        return ember.numpy.sum(exported.call(p, x) ** 2)

    fun = GOLDEN["mlp_vjp1.emberexp"][0]
    grads = ember.grad(loss)(params)
    expected = ember.grad(lambda p: ember.numpy.sum(fun(p, x) ** 2))(params)
    for key in params:
        assert_close(grads[key], expected[key], rtol=1e-4, atol=1e-5)


@needs_pjrt
def test_golden_mixed_dtypes_run():
    exported = _golden("mixed_dtypes.emberexp")
    count = np.array([1, 2, 3], np.int32)
    flags = np.array([True, False, True])
    out = exported.call(count, np.float32(1.5), flags)
    assert out["total"].dtype == np.int32 and int(out["total"]) == 6
    assert out["scaled"][0].dtype == np.int32
    np.testing.assert_array_equal(out["scaled"][0], count * 2)
    assert_close(out["scaled"][1], np.where(flags, 1.5, -1.5))


@needs_pjrt
def test_golden_scan_runs():
    exported = _golden("scan.emberexp")
    xs = np.arange(10, dtype=np.float32).reshape(5, 2)
    last, sums = exported.call(xs)
    assert_close(sums, np.cumsum(xs, axis=0))
    assert_close(last, xs.sum(axis=0))


@needs_pjrt
def test_golden_two_platform_export_runs_on_cpu():
    exported = _golden("softplus_cpu_cuda.emberexp")
    x = np.linspace(-3, 3, 6).astype(np.float32)
    assert_close(exported.call(x), np.logaddexp(x, 0.0), rtol=1e-5)


@needs_pjrt
def test_golden_polymorphic_program_runs_at_any_batch_size():
    exported = _golden("batched_affine_poly_vjp1.emberexp")
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    for batch in (1, 4):
        x = np.ones((batch, 3), np.float32)
        assert_close(exported.call(x, w), x @ w + 1)
        assert_close(
            ember.grad(lambda v: exported.call(v, w).sum())(x), np.tile(w.sum(1), (batch, 1))
        )


def test_mesh_metadata_is_checked():
    mesh = {"axis_names": ["x"], "axis_sizes": [2], "axis_types": ["Auto"]}
    blob = serialization.write(
        good_metadata(mesh=mesh, nr_devices=2, in_shardings=[["x"]]), MODULE, None
    )
    exported = deserialize(blob)
    assert exported.nr_devices == 2 and exported.mesh.shape_tuple == (("x", 2),)
    assert exported.in_shardings_hlo == ("{devices=[2]0,1}",) and exported.out_specs == (None,)
    _bad(serialization.write(good_metadata(mesh=mesh), MODULE, None), "nr_devices is 1.*has 2")
    _bad(serialization.write(good_metadata(mesh=[]), MODULE, None), "'mesh' is \\[\\]")
    _bad(serialization.write(good_metadata(in_shardings=[["x"]]), MODULE, None), "one device")
    _bad(serialization.write(good_metadata(in_shardings=[]), MODULE, None), "shardings do not")
