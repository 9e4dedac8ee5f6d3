"""Exported (exported.py) and export (exporting.py, tested here too): round trips against
NumPy, grad through the exported VJP, multi-platform exports, and the checks made when
exporting and calling."""

import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import EmberTypeError, ExportError, ShapeMismatchError
from ember.export import Exported, deserialize, export
from tests.core.util import assert_close

pytestmark = pytest.mark.skipif(
    ember.default_backend() == "reference", reason="exports StableHLO: needs a PJRT backend"
)
f32 = np.float32


def spec(shape, dtype=f32):
    return ember.ShapeDtypeStruct(shape, dtype)


def round_trip(fun, *args, vjp_order=0, **kwargs) -> Exported:
    return deserialize(export(ember.jit(fun))(*args, **kwargs).serialize(vjp_order=vjp_order))


def test_fields_mirror_jax():
    exported = export(ember.jit(lambda x, y: (x * y, x.sum())))(spec((2, 3)), spec((2, 3)))
    assert exported.fun_name == "<lambda>"
    assert [a.shape for a in exported.in_avals] == [(2, 3), (2, 3)]
    assert [a.shape for a in exported.out_avals] == [(2, 3), ()]
    assert exported.in_tree == ember.tree.structure(((1, 2), {}))
    assert exported.out_tree == ember.tree.structure((1, 2))
    assert exported.platforms == ("cpu",)
    assert exported.nr_devices == 1
    assert exported.in_shardings_hlo == (None, None)
    assert exported.ordered_effects == () and exported.unordered_effects == ()
    assert exported.calling_convention_version == 9
    assert exported.module_kept_var_idx == (0, 1) and not exported.uses_global_constants
    assert ember.export.default_export_platform() == "cpu"
    assert exported.mlir_module_serialized.startswith(b"ML\xefR")
    assert "func.func public @main" in exported.mlir_module()
    assert exported.stablehlo_version == "1.15.0"
    blob = exported.serialize()
    assert isinstance(blob, bytes) and deserialize(blob).serialize() == blob


def test_mlp_round_trip_matches_numpy(rng):
    sizes = [6, 16, 16, 3]
    params = [
        (rng.normal(size=(m, n)).astype(f32), rng.normal(size=n).astype(f32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.normal(size=(8, 6)).astype(f32)

    def mlp(params, x):
        for w, b in params[:-1]:
            x = enp.maximum(x @ w + b, 0.0)
        w, b = params[-1]
        return x @ w + b

    expected = x
    for w, b in params[:-1]:
        expected = np.maximum(expected @ w + b, 0)
    expected = expected @ params[-1][0] + params[-1][1]
    exported = round_trip(mlp, params, x)  # concrete arguments work as well as specs
    assert_close(exported.call(params, x), expected, rtol=1e-4, atol=1e-5)


def test_pytrees_in_and_out_and_keyword_arguments():
    def f(a, pair, *, scale):
        return {"out": [a["x"] * scale, None], "sum": pair[0] + pair[1]}

    args = ({"x": spec((3,))}, (spec((2,)), spec((2,))))
    exported = round_trip(f, *args, scale=spec(()))
    x, p, q = np.arange(3, dtype=f32), np.ones(2, f32), np.full(2, 2.0, f32)
    out = exported.call({"x": x}, (p, q), scale=f32(3))
    assert out["out"][1] is None
    assert_close(out["out"][0], x * 3)
    assert_close(out["sum"], p + q)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint32, np.bool_, np.float16])
def test_dtypes_round_trip(dtype):
    x = (np.arange(6) % 2 if dtype == np.bool_ else np.arange(6)).astype(dtype)
    exported = round_trip(lambda v: (v, v[::-1]), spec((6,), dtype))
    same, reversed_ = exported.call(x)
    assert same.dtype == dtype and reversed_.dtype == dtype
    np.testing.assert_array_equal(reversed_, x[::-1])


def test_scan_round_trip():
    def cumulative_product(xs):
        return lax.scan(lambda c, x: (c * x, c * x), f32(1.0), xs)

    xs = np.linspace(0.5, 1.5, 7).astype(f32)
    last, products = round_trip(cumulative_product, spec((7,))).call(xs)
    assert_close(products, np.cumprod(xs), rtol=1e-5)
    assert_close(last, np.prod(xs), rtol=1e-5)


def test_closed_over_constants_are_part_of_the_program():
    table = np.arange(12, dtype=f32).reshape(3, 4)
    exported = round_trip(lambda x: x @ table, spec((2, 3)))
    x = np.ones((2, 3), f32)
    assert_close(exported.call(x), x @ table)


def test_grad_through_deserialized_vjp_matches_original(rng):
    def loss(w, x):
        return enp.mean(enp.tanh(x @ w) ** 2)

    w = rng.normal(size=(4, 2)).astype(f32)
    x = rng.normal(size=(5, 4)).astype(f32)
    exported = round_trip(loss, spec((4, 2)), spec((5, 4)), vjp_order=1)
    assert exported.has_vjp()
    got = ember.grad(exported.call, argnums=(0, 1))(w, x)
    want = ember.grad(loss, argnums=(0, 1))(w, x)
    for g, e in zip(got, want):
        assert_close(g, e, rtol=1e-5, atol=1e-6)
    # ... and inside jit, and with value_and_grad
    value, g = ember.jit(ember.value_and_grad(exported.call))(w, x)
    assert_close(value, loss(w, x), rtol=1e-6)
    assert_close(g, want[0], rtol=1e-5, atol=1e-6)


def test_second_order_vjp():
    exported = round_trip(lambda x: enp.sum(enp.sin(x)), spec((3,)), vjp_order=2)
    x = np.array([0.1, 0.5, 1.0], f32)
    hess_diag = ember.grad(lambda v: ember.grad(exported.call)(v).sum())(x)
    assert_close(hess_diag, -np.sin(x), rtol=1e-5)


def test_without_vjp_grad_is_refused():
    exported = round_trip(lambda x: enp.sum(x * x), spec((3,)))
    assert not exported.has_vjp()
    with pytest.raises(EmberTypeError, match="has no VJP.*vjp_order=1"):
        ember.grad(exported.call)(np.ones(3, f32))
    with pytest.raises(ValueError, match="without its VJP"):
        exported.vjp()


def test_vjp_needs_floating_inputs():
    exported = export(ember.jit(lambda n, x: x * n))(spec((), np.int32), spec(()))
    with pytest.raises(EmberTypeError, match="floating-point"):
        exported.serialize(vjp_order=1)


def test_multi_platform_export_runs_on_cpu():
    exported = export(ember.jit(lambda x: enp.exp(x) - 1.0), platforms=("cpu", "cuda", "tpu"))(
        spec((4,))
    )
    text = exported.mlir_module()
    assert '{jax.global_constant = "_platform_index"}' in text
    assert "stablehlo.case" in text
    for name in ("_ember_cpu_main", "_ember_cuda_main", "_ember_tpu_main"):
        assert f"@{name}" in text
    loaded = deserialize(exported.serialize())
    assert loaded.platforms == ("cpu", "cuda", "tpu")
    x = np.linspace(-1, 1, 4).astype(f32)
    assert_close(loaded.call(x), np.expm1(x), rtol=1e-5, atol=1e-6)
    assert_close(ember.jit(lambda v: loaded.call(v) * 2)(x), 2 * np.expm1(x), rtol=1e-5)


def test_export_for_a_platform_without_its_hardware_then_call_is_refused():
    exported = export(ember.jit(enp.sin), platforms=("cuda",))(spec((3,)))
    assert exported.platforms == ("cuda",)
    with pytest.raises(ExportError, match="exported for platforms cuda, but the default backend"):
        deserialize(exported.serialize()).call(np.ones(3, f32))


def test_export_requires_a_jit_function():
    with pytest.raises(TypeError, match="ember.jit function"):
        export(np.sin)
    with pytest.raises(TypeError, match="sequence of names"):
        export(ember.jit(enp.sin), platforms="cpu")
    with pytest.raises(ExportError, match="reference backend"):
        export(ember.jit(enp.sin), platforms=("reference",))(spec((2,)))


def test_call_checks_arguments_and_names_them():
    exported = round_trip(lambda p, x: p["w"] * x, {"w": spec((3,))}, spec((3,)))
    w = {"w": np.ones(3, f32)}
    with pytest.raises(ShapeMismatchError, match=r"argument args\[1\] .* shape \(4,\).* \(3,\)"):
        exported.call(w, np.ones(4, f32))
    with pytest.raises(EmberTypeError, match=r"argument args\[0\]\['w'\] .* dtype i32"):
        exported.call({"w": np.ones(3, np.int32)}, np.ones(3, f32))
    with pytest.raises(EmberTypeError, match="structure"):
        exported.call(np.ones(3, f32), np.ones(3, f32))
    # A Python scalar is weakly typed: it takes the exported dtype.
    scalar = round_trip(lambda x: x * 2, spec((), np.float32))
    assert_close(scalar.call(1.5), 3.0)


def test_call_checks_the_device_count():
    exported = round_trip(enp.sin, spec((2,)))
    exported.nr_devices = 2
    with pytest.raises(ExportError, match="exported for 2 devices"):
        exported.call(np.ones(2, f32))


def test_reference_backend_alone_gives_a_clear_error(tmp_path):
    program = (
        "import numpy as np, ember\n"
        "from ember.export import export\n"
        "try:\n"
        "    export(ember.jit(lambda x: x + 1))(np.ones(2, np.float32))\n"
        "except ember.errors.ExportError as e:\n"
        "    print('ExportError:', e)\n"
    )
    env = {"EMBER_PLATFORMS": "reference", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "ExportError: ember.export needs a backend that reads and writes StableHLO" in (
        done.stdout
    )
