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
    b, twice_plus_one, flat = symbolic_shape("b, 2*b + 1, 784*b")
    assert (str(twice_plus_one), str(flat)) == ("2*b + 1", "784*b")
    assert symbolic_shape(str(twice_plus_one)) == (twice_plus_one,)
    with pytest.raises(ValueError, match="not a dimension"):
        symbolic_shape("b / 2, 4")
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


def test_bind_dims_names_the_expression_that_failed():
    avals = [ember._src.core.get_aval(spec(t)) for t in ("b, 4", "2*b, 4")]
    assert shape_poly.bind_dims(avals, [(3, 4), (6, 4)], ["x", "y"], "f") == {"b": 3}
    with pytest.raises(ShapeMismatchError, match=r"y .*dimension 0 must be 2\*b = 6 \(b = 3"):
        shape_poly.bind_dims(avals, [(3, 4), (7, 4)], ["x", "y"], "f")
    only = [ember._src.core.get_aval(spec("2*b + 1"))]
    assert shape_poly.bind_dims(only, [(9,)], ["x"], "f") == {"b": 4}
    with pytest.raises(ShapeMismatchError, match=r"is 8, but it must be 2\*b \+ 1 for an integer"):
        shape_poly.bind_dims(only, [(8,)], ["x"], "f")
    with pytest.raises(ShapeMismatchError, match=r"is 1, but it must be 2\*b \+ 1 for an integer"):
        shape_poly.bind_dims(only, [(1,)], ["x"], "f")


def test_a_symbol_known_only_in_a_product_is_refused():
    with pytest.raises(ExportError, match="'t' .* cannot be known"):
        shape_poly.symbol_sources([symbolic_shape("b, b*t")], "f")


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


BATCHES = (1, 3, 8, 17)


def _check_at_batches(fun, loaded, make_args, rtol=1e-5, atol=1e-5):
    """The exported program agrees with ``fun`` at several batch sizes: eagerly, inside jit,
    and (through the exported VJP) under grad."""
    for batch in BATCHES:
        args = make_args(batch)
        assert_close(loaded.call(*args), fun(*args), rtol=rtol, atol=atol)
        assert_close(ember.jit(loaded.call)(*args), fun(*args), rtol=rtol, atol=atol)
        argnums = tuple(range(len(args)))
        got = ember.grad(lambda *a: loaded.call(*a).sum(), argnums=argnums)(*args)
        want = ember.grad(lambda *a: fun(*a).sum(), argnums=argnums)(*args)
        for g, w in zip(got, want):
            assert_close(g, w, rtol=rtol * 10, atol=atol)


@needs_pjrt
def test_softmax_cross_entropy_with_mean_over_the_batch(rng):
    def loss(logits, labels):
        log_p = ember.nn.log_softmax(logits, axis=-1)
        return -enp.mean(enp.sum(labels * log_p, axis=-1))

    exported = export(ember.jit(loss))(spec("b, 10"), spec("b, 10"))
    module = exported.mlir_module()
    assert "stablehlo.convert" in module and "get_dimension_size" in module  # b as a value
    loaded = deserialize(exported.serialize(vjp_order=1))

    def make_args(batch):
        labels = np.eye(10, dtype=f32)[rng.integers(0, 10, batch)]
        return rng.normal(size=(batch, 10)).astype(f32), labels

    _check_at_batches(loss, loaded, make_args)


@needs_pjrt
def test_mlp_on_images_flattened_with_reshape(rng):
    w1 = (rng.normal(size=(784, 16)) / 28).astype(f32)
    w2 = rng.normal(size=(16, 10)).astype(f32)

    def mlp(images):
        h = enp.tanh(images.reshape(images.shape[0], -1) @ w1)
        flat = h.reshape(-1) * 2.0  # 16*b
        return flat.reshape(-1, 16) @ w2 + images.reshape(-1, 784).sum(-1, keepdims=True)

    exported = export(ember.jit(mlp))(spec("b, 28, 28"))
    assert "dynamic_reshape" in exported.mlir_module()
    loaded = deserialize(exported.serialize(vjp_order=1))
    _check_at_batches(
        mlp, loaded, lambda b: (rng.normal(size=(b, 28, 28)).astype(f32),), rtol=1e-4, atol=1e-4
    )


@needs_pjrt
def test_a_whole_train_step_with_a_symbolic_batch(rng):
    params = {
        "w1": (rng.normal(size=(784, 16)) / 28).astype(f32),
        "b1": np.zeros(16, f32),
        "w2": (rng.normal(size=(16, 10)) / 4).astype(f32),
    }

    def loss_fn(p, images, labels):
        h = ember.nn.relu(images.reshape(images.shape[0], -1) @ p["w1"] + p["b1"])
        logits = h @ p["w2"]
        nll = -enp.mean(enp.sum(ember.nn.one_hot(labels, 10) * ember.nn.log_softmax(logits), -1))
        return nll, enp.mean(enp.argmax(logits, -1) == labels)

    @ember.jit
    def train_step(p, images, labels):
        (loss, accuracy), grads = ember.value_and_grad(loss_fn, has_aux=True)(p, images, labels)
        new = ember.tree_util.tree_map(lambda w, g: w - 0.1 * g, p, grads)
        return new, loss, accuracy

    param_specs = ember.tree_util.tree_map(lambda a: ember.ShapeDtypeStruct(a.shape, f32), params)
    exported = export(train_step)(param_specs, spec("b, 28, 28"), spec("b", np.int32))
    loaded = deserialize(exported.serialize())
    for batch in BATCHES:
        images = rng.normal(size=(batch, 28, 28)).astype(f32)
        labels = rng.integers(0, 10, batch).astype(np.int32)
        got, want = loaded.call(params, images, labels), train_step(params, images, labels)
        for g, w in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(want)):
            assert_close(g, w, rtol=1e-5, atol=1e-6)


@needs_pjrt
@pytest.mark.parametrize(
    "fun, in_spec, out_shape",
    [
        (lambda x: enp.concatenate([x, x]) * 2.0, "b, 4", "(2*b, 4)"),
        (lambda x: enp.var(x, axis=0) + enp.std(x), "b, 4", "(4,)"),
        (lambda x: x * (x.shape[0] * 2) + x * (1 / x.size) + x / x.shape[0], "b, 4", "(b, 4)"),
        (lambda x: x[1:] - x[:-1], "b, 4", "(b - 1, 4)"),
        (lambda x: enp.concatenate([x, enp.zeros((1, 4), f32)]) / x.shape[0], "b, 4", "(b + 1, 4)"),
        (lambda x: x.reshape(-1) + 1.0, "b, 4", "(4*b,)"),
        (lambda x: x * (enp.arange(x.shape[0]) * (x.shape[0] + 1))[:, None], "b, 4", "(b, 4)"),
    ],
    ids=[
        "concatenate",
        "var",
        "shape-arithmetic",
        "affine-slices",
        "pad-and-divide",
        "flatten",
        "integer-values",
    ],
)
def test_dimension_expressions_and_symbol_values(rng, fun, in_spec, out_shape):
    exported = export(ember.jit(fun))(spec(in_spec))
    loaded = deserialize(exported.serialize(vjp_order=1))
    assert str(loaded.out_avals[0].shape) == out_shape
    _check_at_batches(fun, loaded, lambda b: (rng.normal(size=(b, 4)).astype(f32),))


@needs_pjrt
def test_products_of_symbols():
    def flatten(x):
        return x.reshape(-1) * x.shape[1]

    exported = export(ember.jit(flatten))(spec("b, t"))
    loaded = deserialize(exported.serialize())
    assert str(loaded.out_avals[0].shape) == "(b*t,)"
    for shape in ((1, 1), (3, 5), (4, 2)):
        x = np.arange(np.prod(shape), dtype=f32).reshape(shape)
        assert_close(loaded.call(x), flatten(x))


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
        (lambda x: x[: x.shape[0] // 2], "slice in .* at .*test_shape_poly.py:.* no expression"),
        (lambda x: x[::2], "slice in .* no expression k\\*b \\+ c"),
        (lambda x: x * (x.shape[0] ** 0.5), "mul in .* depends on the symbolic dimensions"),
        (lambda x: enp.cumsum(x, axis=0), "slice in .* at .*test_shape_poly.py.* no expression"),
        (
            lambda x: enp.pad(x, ((0, x.shape[0]), (0, 0))),
            "stablehlo.pad in .* at .*test_shape_poly.py:.* in an attribute",
        ),
        (
            lambda x: enp.take(x, enp.array([0, 2]), axis=1),
            "in <lambda> at .*test_shape_poly.py:.* depends on the symbolic dimensions",
        ),
    ],
    ids=["slice-half", "strided-slice", "square-root-of-b", "cumsum", "pad", "gather"],
)
def test_unsupported_operations_are_refused_by_name(fun, match):
    with pytest.raises(ExportError, match=match):
        export(ember.jit(fun))(spec("b, 4"))


@needs_pjrt
def test_expressions_in_the_input_spec_are_checked_on_call_and_in_the_module():
    def f(x, y):
        return enp.concatenate([x, x]) + y

    exported = deserialize(export(ember.jit(f))(spec("b, 4"), spec("2*b, 4")).serialize())
    assert str(exported.in_avals[1].shape) == "(2*b, 4)"
    x = np.arange(12, dtype=f32).reshape(3, 4)
    assert_close(exported.call(x, np.ones((6, 4), f32)), f(x, np.ones((6, 4), f32)))
    with pytest.raises(ShapeMismatchError, match=r"args\[1\] .*must be 2\*b = 6 \(b = 3"):
        exported.call(x, np.ones((5, 4), f32))
    sums = deserialize(
        export(ember.jit(lambda x, y: (x.sum(), y.sum())))(spec("b, 4"), spec("2*b, 4")).serialize()
    )
    unchecked = _Unchecked(sums)

    def call(x, y):
        return calling.call_exported_p.bind(x, y, exported=unchecked)

    with pytest.raises(CompileError, match=r"dimension 0 of args\[1\] must be 2\*b: it is 5"):
        ember.jit(call)(x, np.ones((5, 4), f32))

    (b,) = symbolic_shape("b")
    twice = ember.ShapeDtypeStruct((2 * b, 4), f32)  # as JAX users build it
    alone = deserialize(export(ember.jit(lambda y: y * 2.0))(twice).serialize())
    assert_close(alone.call(np.ones((4, 4), f32)), np.full((4, 4), 2.0, f32))
    with pytest.raises(ShapeMismatchError, match=r"is 5, but it must be 2\*b for an integer b"):
        alone.call(np.ones((5, 4), f32))
    unchecked = _Unchecked(deserialize(export(ember.jit(enp.sum))(spec("2*b, 4")).serialize()))
    with pytest.raises(CompileError, match=r"must be 2\*b for an integer b: it is 5"):
        ember.jit(lambda y: calling.call_exported_p.bind(y, exported=unchecked))(
            np.ones((5, 4), f32)
        )


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
    """An exported program whose result shapes are given, the arguments left unchecked."""

    def __init__(self, exported, out_avals=None):
        self._exported = exported
        self._out_avals = out_avals

    def __getattr__(self, name):
        return getattr(self._exported, name)

    def out_avals_for(self, avals):
        if self._out_avals is not None:
            return [ember._src.core.get_aval(a) for a in self._out_avals]
        return list(self._exported.out_avals)  # scalars: no symbol to bind
