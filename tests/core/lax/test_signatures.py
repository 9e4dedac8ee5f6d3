"""ember.lax functions take JAX 0.10's parameter names and keywords: keyword calls port,
the keywords JAX added behave as JAX's (checked against NumPy), and values that ember cannot
honour raise NotImplementedError naming the function."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember
from ember import lax, nn
from tests.core.util import assert_close

RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------------------------
# Parameter names: keyword calls written for JAX work unchanged


def _x(shape=(2, 3), dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


X = _x()
KEYWORD_CALLS = [
    ("argmax", dict(operand=X, axis=1, index_dtype=np.int32), np.argmax(X, 1).astype(np.int32)),
    ("argmin", dict(operand=X, axis=0, index_dtype=np.int32), np.argmin(X, 0).astype(np.int32)),
    ("bitcast_convert_type", dict(operand=X, new_dtype=np.int32), X.view(np.int32)),
    (
        "broadcast_in_dim",
        dict(operand=X, shape=(4, 2, 3), broadcast_dimensions=(1, 2)),
        np.broadcast_to(X, (4, 2, 3)),
    ),
    ("convert_element_type", dict(operand=X, new_dtype=np.int32), X.astype(np.int32)),
    (
        "pad",
        dict(operand=X, padding_value=np.float32(0), padding_config=[(1, 0, 0), (0, 2, 0)]),
        np.pad(X, [(1, 0), (0, 2)]),
    ),
    ("reduce_sum", dict(operand=X, axes=(0,)), X.sum(0)),
    ("reduce_max", dict(operand=X, axes=(1,)), X.max(1)),
    ("reduce_min", dict(operand=X, axes=(0, 1)), X.min()),
    ("reduce_prod", dict(operand=X, axes=(1,)), X.prod(1)),
    ("reduce_and", dict(operand=X > 0, axes=(1,)), (X > 0).all(1)),
    ("reduce_or", dict(operand=X > 0, axes=(0,)), (X > 0).any(0)),
    ("reshape", dict(operand=X, new_sizes=(3, 2)), X.reshape(3, 2)),
    ("rev", dict(operand=X, dimensions=(1,)), X[:, ::-1]),
    (
        "slice",
        dict(operand=X, start_indices=(0, 1), limit_indices=(2, 3), strides=(1, 1)),
        X[:, 1:3],
    ),
    ("transpose", dict(operand=X, permutation=(1, 0)), X.T),
    ("squeeze", dict(array=X[None], dimensions=(0,)), X),
    ("expand_dims", dict(array=X, dimensions=(0,)), X[None]),
    ("cummax", dict(operand=X, axis=1), np.maximum.accumulate(X, 1)),
    ("cummin", dict(operand=X, axis=0), np.minimum.accumulate(X, 0)),
    ("sort", dict(operand=X, dimension=1), np.sort(X, 1)),
    ("iota", dict(dtype=np.int32, size=5), np.arange(5, dtype=np.int32)),
]


@pytest.mark.parametrize("name,kwargs,expected", KEYWORD_CALLS, ids=[c[0] for c in KEYWORD_CALLS])
def test_keyword_calls_use_jax_names(name, kwargs, expected):
    out = getattr(lax, name)(**kwargs)
    assert_close(out, expected)
    assert np.asarray(out).dtype == np.asarray(expected).dtype


def test_iota_is_one_dimensional_and_broadcasted_iota_keeps_n_d():
    assert np.asarray(lax.iota(np.float32, 3)).tolist() == [0.0, 1.0, 2.0]
    assert_close(lax.broadcasted_iota(np.int32, (2, 3), 1), np.tile(np.arange(3), (2, 1)))


def test_convert_element_type_has_no_weak_type_parameter():
    assert "weak_type" not in inspect.signature(lax.convert_element_type).parameters
    assert np.asarray(lax.convert_element_type(1.5, np.float16)).dtype == np.float16


# --------------------------------------------------------------------------------------------
# accuracy= on the transcendental functions

TRANSCENDENTAL = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "rsqrt": lambda v: 1 / np.sqrt(v),
    "cbrt": np.cbrt,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "logistic": lambda v: 1 / (1 + np.exp(-v)),
}


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_accuracy_none_is_the_default(name):
    x = RNG.uniform(0.1, 2.0, (5,)).astype(np.float32)
    assert_close(getattr(lax, name)(x, accuracy=None), TRANSCENDENTAL[name](x), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_other_accuracy_is_refused_by_name(name):
    with pytest.raises(NotImplementedError, match=name):
        getattr(lax, name)(np.float32(1.0), accuracy="highest")


# --------------------------------------------------------------------------------------------
# New keywords with real behaviour


def test_mul_out_dtype_casts_before_multiplying():
    x, y = np.float32(2.7), np.float32(3.6)
    out = lax.mul(x, y, out_dtype=np.int32)
    assert np.asarray(out).dtype == np.int32 and int(out) == 6
    assert_close(lax.mul(x, y), x * y)


def test_mul_is_still_recognised_as_a_monoid_by_reduce():
    x = _x((3, 4))
    jaxpr = str(ember.make_jaxpr(lambda v: lax.reduce(v, np.float32(1), lax.mul, (1,)))(x))
    assert "reduce_prod" in jaxpr
    assert_close(lax.reduce(x, np.float32(1), lax.mul, (1,)), x.prod(1), rtol=1e-5)


def test_reshape_dimensions_transposes_first():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = lax.reshape(x, (4, 6), dimensions=(2, 0, 1))
    assert_close(out, x.transpose(2, 0, 1).reshape(4, 6))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_top_k_axis(axis):
    x = RNG.permutation(60).astype(np.float32).reshape(3, 4, 5)
    values, indices = lax.top_k(x, 2, axis=axis)
    order = np.argsort(-x, axis=axis, kind="stable")
    expected_idx = np.take(order, [0, 1], axis=axis)
    assert_close(indices, expected_idx)
    assert_close(values, np.take_along_axis(x, expected_idx, axis))


def test_top_k_bad_axis():
    with pytest.raises(ValueError, match="axis"):
        lax.top_k(np.zeros((2, 3)), 1, axis=2)


@pytest.mark.parametrize("batch_size", [1, 3, 4, 7, 10])
def test_map_batch_size_matches_plain_map(batch_size):
    xs = {"a": _x((7, 2)), "b": np.arange(7, dtype=np.int32)}

    def f(t):
        return {"s": ember.numpy.sum(t["a"]) * t["b"], "a": t["a"] + 1}

    expected = {
        "s": xs["a"].sum(1) * xs["b"],
        "a": xs["a"] + 1,
    }
    out = lax.map(f, xs, batch_size=batch_size)
    assert_close(out["s"], expected["s"], rtol=1e-5)
    assert_close(out["a"], expected["a"])
    jitted = ember.jit(lambda v: lax.map(f, v, batch_size=batch_size))(xs)
    assert_close(jitted["s"], expected["s"], rtol=1e-5)


def test_map_batch_size_is_batched_and_differentiable():
    xs = _x((5,))
    grad = ember.grad(lambda v: ember.numpy.sum(lax.map(lambda t: t**2, v, batch_size=2)))(xs)
    assert_close(grad, 2 * xs, rtol=1e-5)


def test_map_batch_size_must_be_positive():
    with pytest.raises(ValueError, match="batch_size"):
        lax.map(lambda t: t, np.zeros(3), batch_size=0)


@pytest.mark.parametrize("unroll", [None, 1, 2, True, False])
def test_fori_loop_unroll(unroll):
    out = lax.fori_loop(0, 6, lambda i, v: v * 2 + i, np.float32(1), unroll=unroll)
    expected = np.float32(1)
    for i in range(6):
        expected = expected * 2 + i
    assert_close(out, expected)


def test_fori_loop_unroll_needs_static_bounds():
    def run(n):
        return lax.fori_loop(0, n, lambda i, v: v + i, 0, unroll=2)

    with pytest.raises(ValueError, match="unroll"):
        ember.jit(run)(4)
    assert int(ember.jit(lambda n: lax.fori_loop(0, n, lambda i, v: v + i, 0))(4)) == 6


def test_cond_and_switch_legacy_operand_keyword():
    assert int(lax.cond(True, lambda a: a + 1, lambda a: a - 1, operand=3)) == 4
    assert int(lax.cond(False, lambda a: a + 1, lambda a: a - 1, operand=3)) == 2
    assert int(lax.switch(1, [lambda a: a, lambda a: -a], operand=2)) == -2
    with pytest.raises(TypeError, match="operand"):
        lax.cond(True, lambda a, b: a, lambda a, b: b, 1, operand=2)
    with pytest.raises(TypeError, match="operand"):
        lax.switch(0, [lambda a, b: a], 1, operand=2)


def test_scan_split_transpose_false_only():
    carry, ys = lax.scan(lambda c, x: (c + x, c), 0.0, np.arange(3.0), _split_transpose=False)
    assert float(carry) == 3.0 and np.asarray(ys).tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(NotImplementedError, match="_split_transpose"):
        lax.scan(lambda c, x: (c, x), 0.0, np.arange(3.0), _split_transpose=True)


@pytest.mark.parametrize("computation", [lax.add, lax.max, lax.mul])
def test_reduce_window_default_strides_and_padding(computation):
    x = _x((4, 5))
    out = lax.reduce_window(x, np.float32(0 if computation is lax.add else 1), computation, (2, 3))
    explicit = lax.reduce_window(
        x, np.float32(0 if computation is lax.add else 1), computation, (2, 3), (1, 1), "VALID"
    )
    assert np.asarray(out).shape == (3, 3)
    assert_close(out, explicit)
    if computation is lax.add:
        windows = np.lib.stride_tricks.sliding_window_view(x, (2, 3))
        assert_close(out, windows.sum((-1, -2)), rtol=1e-5)


def _bits(key, **kwargs):
    return lax.rng_bit_generator(key, (2, 3), **kwargs)[1]


OUT_SHARDING_CALLS = {
    "broadcast_in_dim": (
        lambda v, **k: lax.broadcast_in_dim(v, (4, 2), (0,), **k),
        lambda x: np.broadcast_to(x[:, None], (4, 2)),
    ),
    "reshape": (lambda v, **k: lax.reshape(v, (2, 2), **k), lambda x: x.reshape(2, 2)),
    "broadcast": (lambda v, **k: lax.broadcast(v, (3,), **k), lambda x: np.tile(x, (3, 1))),
    "dot_general": (
        lambda v, **k: lax.dot_general(v, v, (((), ()), ((), ())), **k),
        lambda x: np.outer(x, x),
    ),
    "conv_general_dilated": (
        lambda v, **k: lax.conv_general_dilated(
            lax.reshape(v, (1, 1, 4)), lax.reshape(v[:2], (1, 1, 2)), (1,), "VALID", **k
        ),
        lambda x: np.correlate(x, x[:2]).reshape(1, 1, 3),
    ),
    "rng_bit_generator": (
        lambda v, **k: _bits(lax.convert_element_type(v, np.uint32), **k),
        lambda x: None,
    ),
    "reduce_sum": (
        lambda v, **k: lax.reduce_sum(lax.reshape(v, (2, 2)), (1,), **k),
        lambda x: x.reshape(2, 2).sum(1),
    ),
}


@pytest.mark.parametrize("name", sorted(OUT_SHARDING_CALLS))
def test_out_sharding_is_a_sharding_constraint(name):
    call, expected = OUT_SHARDING_CALLS[name]
    x = np.arange(4, dtype=np.float32)
    mesh = ember.sharding.Mesh(np.array(ember.devices()[:1]), ("x",))
    layout = ember.sharding.NamedSharding(mesh, ember.sharding.PartitionSpec("x"))
    if expected(x) is not None:
        assert_close(call(x, out_sharding=None), expected(x))
    assert_close(call(x, out_sharding=layout), call(x, out_sharding=None))
    text = ember.jit(lambda v: call(v, out_sharding=layout)).lower(x).as_text()
    assert "sharding_constraint" in text


# --------------------------------------------------------------------------------------------
# Collectives: axis_index_groups=None (the whole axis) only, as JAX under shard_map

GROUPED = {
    "psum": lambda v, **k: lax.psum(v, "i", **k),
    "pmean": lambda v, **k: lax.pmean(v, "i", **k),
    "pmax": lambda v, **k: lax.pmax(v, "i", **k),
    "pmin": lambda v, **k: lax.pmin(v, "i", **k),
    "all_gather": lambda v, **k: lax.all_gather(v, "i", **k),
    "all_to_all": lambda v, **k: lax.all_to_all(v, "i", 0, 0, **k),
    "psum_scatter": lambda v, **k: lax.psum_scatter(v, "i", **k),
}
REFERENCE = {
    "psum": lambda x: np.broadcast_to(x.sum(0), x.shape),
    "pmean": lambda x: np.broadcast_to(x.mean(0), x.shape),
    "pmax": lambda x: np.broadcast_to(x.max(0), x.shape),
    "pmin": lambda x: np.broadcast_to(x.min(0), x.shape),
    "all_gather": lambda x: np.broadcast_to(x, (2, *x.shape)),
    "all_to_all": lambda x: np.swapaxes(x, 0, 1),
    "psum_scatter": lambda x: x.sum(0),
}


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_axis_index_groups_none_is_the_whole_axis(name):
    x = _x((2, 2))
    out = ember.vmap(lambda v: GROUPED[name](v, axis_index_groups=None), axis_name="i")(x)
    assert_close(out, REFERENCE[name](x), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_axis_index_groups_are_refused_by_name(name):
    x = _x((2, 2))
    with pytest.raises(NotImplementedError, match=name):
        ember.vmap(lambda v: GROUPED[name](v, axis_index_groups=[[0], [1]]), axis_name="i")(x)


def test_all_gather_to():
    x = _x((2, 3))
    for to in ("varying", "invarying"):  # the same values; they differ in type in shard_map
        out = ember.vmap(lambda v, to=to: lax.all_gather(v, "i", to=to), axis_name="i")(x)
        assert_close(out, np.broadcast_to(x, (2, 2, 3)))
    with pytest.raises(NotImplementedError, match="to="):
        ember.vmap(lambda v: lax.all_gather(v, "i", to="reduced"), axis_name="i")(x)
    with pytest.raises(ValueError, match="Allowed `to` values"):
        ember.vmap(lambda v: lax.all_gather(v, "i", to="replicated"), axis_name="i")(x)


def test_pcast_and_pvary_signatures():
    # JAX 0.10.2: pcast(x, axis_name, *, to); pvary(x, axis_name) is its older spelling
    params = inspect.signature(lax.pcast).parameters
    assert list(params) == ["x", "axis_name", "to"]
    assert params["to"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(lax.pvary).parameters) == ["x", "axis_name"]
    x = _x((2, 3))
    out = ember.vmap(lambda v: lax.pcast(x=v, axis_name="i", to="varying"), axis_name="i")(x)
    assert_close(out, x)


# --------------------------------------------------------------------------------------------
# ember.nn: logsumexp/standardize where=, standardize algorithm=, attention masking keywords


def _masked_logsumexp(x, where, axis):
    masked = np.where(where, x.astype(np.float64), -np.inf)
    top = np.max(masked, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    total = np.sum(np.where(where, np.exp(masked - top), 0), axis=axis, keepdims=True)
    return np.squeeze(np.log(total) + top, axis=axis)


@pytest.mark.parametrize("axis", [0, 1])
def test_logsumexp_where(axis):
    x = _x((4, 5))
    where = RNG.random((4, 5)) > 0.4
    where[0] = True
    where[:, 0] = True
    assert_close(nn.logsumexp(x, axis=axis, where=where), _masked_logsumexp(x, where, axis))
    grad = ember.grad(lambda v: ember.numpy.sum(nn.logsumexp(v, axis=axis, where=where)))(x)
    assert np.all(np.asarray(grad)[~where] == 0)


def _standardize_reference(x, axis, where, algorithm):
    x = x.astype(np.float64)
    mean = np.mean(x, axis=axis, keepdims=True, where=where)
    if algorithm == "stable":
        var = np.mean((x - mean) ** 2, axis=axis, keepdims=True, where=where)
    else:
        var = np.maximum(np.mean(x**2, axis=axis, keepdims=True, where=where) - mean**2, 0)
    return (x - mean) / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("algorithm", ["fast", "stable"])
@pytest.mark.parametrize("use_where", [False, True])
def test_standardize_where_and_algorithm(algorithm, use_where):
    x = _x((3, 6))
    where = (RNG.random((3, 6)) > 0.3) | (np.arange(6) < 2) if use_where else None
    out = nn.standardize(x, axis=1, where=where, algorithm=algorithm)
    expected = _standardize_reference(x, 1, True if where is None else where, algorithm)
    assert_close(out, expected, rtol=1e-4, atol=1e-4)


def test_standardize_unknown_algorithm():
    with pytest.raises(ValueError, match="algorithm"):
        nn.standardize(_x(), algorithm="exact")


def _attention_reference(q, k, v, keep, q_lengths=None):
    """Plain NumPy attention on (B, T, N, H) with K == N heads and a (B, 1, T, S) keep mask."""
    logits = np.einsum("btnh,bsnh->bnts", q, k).astype(np.float64) / np.sqrt(q.shape[-1])
    logits = np.where(keep, logits, np.finfo(np.float32).min)
    logits -= logits.max(-1, keepdims=True)
    weights = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", weights, v)
    if q_lengths is not None:
        out *= (np.arange(q.shape[1])[None, :] < q_lengths[:, None])[:, :, None, None]
    return out


B, T, S, N, H = 2, 5, 6, 2, 3
Q, K, V = _x((B, T, N, H)), _x((B, S, N, H)), _x((B, S, N, H))
Q_LEN, KV_LEN = np.array([3, 5], np.int32), np.array([6, 2], np.int32)
QPOS, KPOS = np.arange(T)[:, None], np.arange(S)[None, :]
Q_VALID = (np.arange(T)[None, :] < Q_LEN[:, None])[:, None, :, None]
KV_VALID = (np.arange(S)[None, :] < KV_LEN[:, None])[:, None, None, :]
ATTENTION_CASES = {
    "query_lengths": (dict(query_seq_lengths=Q_LEN), Q_VALID & True),
    "kv_lengths": (dict(key_value_seq_lengths=KV_LEN), KV_VALID & True),
    "window_int": (dict(local_window_size=1), np.abs(QPOS - KPOS) <= 1),
    "window_causal": (
        dict(local_window_size=(2, 0), is_causal=True),
        (QPOS >= KPOS) & (QPOS - KPOS <= 2),
    ),
    "all": (
        dict(query_seq_lengths=Q_LEN, key_value_seq_lengths=KV_LEN, local_window_size=(1, 2)),
        Q_VALID & KV_VALID & (QPOS - KPOS <= 1) & (KPOS - QPOS <= 2),
    ),
}


@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention_masking_keywords(case):
    kwargs, keep = ATTENTION_CASES[case]
    out = nn.dot_product_attention(Q, K, V, **kwargs)
    expected = _attention_reference(Q, K, V, keep, kwargs.get("query_seq_lengths"))
    assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_attention_return_residual_is_the_logsumexp():
    out, lse = nn.dot_product_attention(
        Q, K, V, key_value_seq_lengths=KV_LEN, implementation="xla", return_residual=True
    )
    assert_close(out, _attention_reference(Q, K, V, KV_VALID), rtol=1e-5, atol=1e-5)
    logits = np.einsum("btnh,bsnh->bnts", Q, K).astype(np.float64) / np.sqrt(H)
    expected = _masked_logsumexp(logits, np.broadcast_to(KV_VALID, logits.shape), -1)
    assert lse.shape == (B, T, N)
    assert_close(lse, expected.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


def test_attention_other_implementations_are_refused():
    with pytest.raises(NotImplementedError, match="cudnn"):
        nn.dot_product_attention(Q, K, V, implementation="cudnn")
