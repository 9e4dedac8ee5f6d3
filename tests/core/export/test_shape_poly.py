"""Shape polymorphism: symbolic_shape, the two-trace check, the generalised module, and calls
at several sizes (eagerly, inside jit, under grad) with their shape checks."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src.export import calling, shape_poly
from ember.errors import CompileError, ExportError, ShapeMismatchError
from ember.export import SymbolicDim, deserialize, export, symbolic_shape
from tests.core.util import assert_close

f32 = np.float32
needs_pjrt = pytest.mark.skipif(
    ember.default_backend() == "reference", reason="exports StableHLO: needs a PJRT backend"
)


def spec(text, dtype=f32):
    return ember.ShapeDtypeStruct(symbolic_shape(text), dtype)


def test_symbolic_shape_parses_names_and_integers():
    assert symbolic_shape("b, 4") == (SymbolicDim("b"), 4)
    assert symbolic_shape("(batch, seq, 8)") == (SymbolicDim("batch"), SymbolicDim("seq"), 8)
    assert symbolic_shape("") == ()
    assert str(symbolic_shape("b")[0]) == "b"
    with pytest.raises(ValueError, match="no expressions"):
        symbolic_shape("2*b, 4")
    with pytest.raises(TypeError):
        symbolic_shape(("b", 4))


def test_bind_dims_names_the_argument_and_the_symbol():
    avals = [
        ember.ShapeDtypeStruct(symbolic_shape("b, 4"), f32),
        ember.ShapeDtypeStruct(symbolic_shape("b"), f32),
    ]
    avals = [ember._src.core.get_aval(a) for a in avals]
    assert shape_poly.bind_dims(avals, [(3, 4), (3,)], ["x", "y"], "f") == {"b": 3}
    with pytest.raises(ShapeMismatchError, match="y .*symbolic dimension b is 5 there but 3 in x"):
        shape_poly.bind_dims(avals, [(3, 4), (5,)], ["x", "y"], "f")
    with pytest.raises(ShapeMismatchError, match=r"x .* exported for shape \(b, 4\)"):
        shape_poly.bind_dims(avals, [(3, 5), (3,)], ["x", "y"], "f")
    with pytest.raises(ShapeMismatchError, match="must be >= 1, got 0"):
        shape_poly.bind_dims(avals, [(0, 4), (0,)], ["x", "y"], "f")


@needs_pjrt
def test_mlp_at_several_batch_sizes_eagerly_in_jit_and_under_grad(rng):
    w1 = rng.normal(size=(4, 8)).astype(f32)
    w2 = rng.normal(size=(8, 2)).astype(f32)

    def mlp(params, x):
        h = enp.maximum(x @ params[0] + 0.5, 0.0)
        return enp.sum(h @ params[1], axis=-1)

    exported = export(ember.jit(mlp))(
        (ember.ShapeDtypeStruct((4, 8), f32), ember.ShapeDtypeStruct((8, 2), f32)), spec("b, 4")
    )
    assert [str(a.shape) for a in exported.out_avals] == ["(b,)"]
    assert "tensor<?x4xf32>" in exported.mlir_module()
    assert "shape_assertion" in exported.mlir_module()
    loaded = deserialize(exported.serialize(vjp_order=1))
    assert loaded.is_polymorphic
    assert str(loaded.in_avals[2].shape) == "(b, 4)"
    for batch in (1, 3, 7):
        x = rng.normal(size=(batch, 4)).astype(f32)
        want = (np.maximum(x @ w1 + 0.5, 0) @ w2).sum(-1)
        assert_close(loaded.call((w1, w2), x), want, rtol=1e-5, atol=1e-5)
        assert_close(ember.jit(lambda p, v: loaded.call(p, v) + 1)((w1, w2), x), want + 1, 1e-5)
        got = ember.grad(lambda p, v: loaded.call(p, v).sum())((w1, w2), x)
        expected = ember.grad(lambda p, v: mlp(p, v).sum())((w1, w2), x)
        for g, e in zip(got, expected):
            assert_close(g, e, rtol=1e-4, atol=1e-5)


@needs_pjrt
@pytest.mark.parametrize(
    "fun, specs, args",
    [
        (lambda x: x.reshape(x.shape[0], 2, 2).sum(-1), ["b, 4"], [(3, 4)]),
        (lambda x, y: x.T @ y, ["b, 4", "b, c"], [(5, 4), (5, 2)]),
        (lambda x: x + enp.arange(x.shape[0], dtype=f32), ["b"], [(6,)]),
        (lambda x: ember.nn.softmax(x, axis=-1), ["b, 5"], [(2, 5)]),
        (lambda x: enp.where(x > 3, x, 0.0) + enp.zeros(x.shape), ["b, c"], [(2, 3)]),
    ],
    ids=["reshape", "transpose-matmul", "iota", "softmax", "where-zeros"],
)
def test_supported_operations_match_the_original(fun, specs, args):
    exported = export(ember.jit(fun), platforms=("cpu", "cuda"))(*[spec(s) for s in specs])
    loaded = deserialize(exported.serialize())
    values = [np.arange(np.prod(s), dtype=f32).reshape(s) for s in args]
    assert_close(loaded.call(*values), fun(*values), rtol=1e-5, atol=1e-6)


@needs_pjrt
@pytest.mark.parametrize(
    "fun, match",
    [
        (lambda x: x.mean(axis=0), "div .* depends on the value of a symbolic dimension"),
        (lambda x: x.reshape(-1), "reshape .* not a constant or one symbol"),
        (lambda x: x[1:], "slice .* not a constant or one symbol"),
        (lambda x: enp.concatenate([x, x]), "concatenate .* not a constant or one symbol"),
    ],
    ids=["mean", "flatten", "slice", "concatenate"],
)
def test_unsupported_operations_are_refused_by_name(fun, match):
    with pytest.raises(ExportError, match=match):
        export(ember.jit(fun))(spec("b, 4"))


@needs_pjrt
def test_call_checks_symbolic_dimensions_agree():
    exported = deserialize(
        export(ember.jit(lambda x, y: x * y[:, None]))(spec("b, 4"), spec("b")).serialize()
    )
    with pytest.raises(ShapeMismatchError, match=r"args\[1\].*symbolic dimension b is 2 there"):
        exported.call(np.ones((3, 4), f32), np.ones(2, f32))
    with pytest.raises(ShapeMismatchError, match=r"args\[0\].*exported for shape \(b, 4\)"):
        exported.call(np.ones((3, 5), f32), np.ones(3, f32))


@needs_pjrt
def test_the_module_asserts_its_constraints_itself():
    """Bypassing the call's own checks, the shape assertions in the module fail the compile,
    naming the constraint."""
    exported = deserialize(
        export(ember.jit(lambda x, y: (x.sum(), y.sum())))(spec("b, 4"), spec("b")).serialize()
    )
    unchecked = _Unchecked(exported)

    def call(x, y):
        return calling.call_exported_p.bind(x, y, exported=unchecked)

    with pytest.raises(CompileError, match=r"symbolic dimension b: dimension 0 of args\[1\] is 2"):
        ember.jit(call)(np.ones((3, 4), f32), np.ones(2, f32))
    with pytest.raises(CompileError, match=r"symbolic dimension b .* must be >= 1, got 0"):
        ember.jit(call)(np.ones((0, 4), f32), np.ones(0, f32))


class _Unchecked:
    """An exported program whose result shapes are computed without checking the arguments."""

    def __init__(self, exported):
        self._exported = exported

    def __getattr__(self, name):
        return getattr(self._exported, name)

    def out_avals_for(self, avals):
        return list(self._exported.out_avals)  # scalars: no symbol to bind
