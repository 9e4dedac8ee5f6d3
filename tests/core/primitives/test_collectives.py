"""Collectives over a named vmap axis: values, nesting, differentiation, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.sharding import PartitionSpec as P
from tests.core.util import assert_close, numerical_gradient

X = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def over_i(fn, *args, **kwargs):
    return ember.vmap(fn, axis_name="i", **kwargs)(*args)


def test_reductions():
    assert_close(over_i(lambda v: lax.psum(v, "i"), X), np.broadcast_to(X.sum(0), X.shape))
    assert_close(over_i(lambda v: lax.pmean(v, "i"), X), np.broadcast_to(X.mean(0), X.shape))
    assert_close(over_i(lambda v: lax.pmax(v, "i"), X), np.broadcast_to(X.max(0), X.shape))
    assert_close(over_i(lambda v: lax.pmin(v, "i"), X), np.broadcast_to(X.min(0), X.shape))
    # an unbatched operand is the same on every member
    assert_close(over_i(lambda v: lax.psum(2.0, "i") + 0 * v, X), np.full(X.shape, 6.0))


def test_axis_index_and_size():
    assert_close(over_i(lambda v: lax.axis_index("i"), X), [0, 1, 2])
    assert over_i(lambda v: v * 0 + lax.axis_size("i"), X)[0, 0] == 3


def test_all_gather_and_psum_scatter():
    gathered = over_i(lambda v: lax.all_gather(v, "i"), X)
    assert gathered.shape == (3, 3, 2)
    assert_close(gathered[1], X)
    assert_close(over_i(lambda v: lax.all_gather(v, "i", tiled=True), X)[2], X.reshape(-1))
    assert_close(over_i(lambda v: lax.all_gather(v, "i", axis=1), X)[0], X.T)
    ones = np.ones((3, 3), np.float32)
    assert_close(over_i(lambda v: lax.psum_scatter(v, "i"), ones), [3.0, 3.0, 3.0])
    tiled = over_i(lambda v: lax.psum_scatter(v, "i", tiled=True), np.ones((3, 6), np.float32))
    assert tiled.shape == (3, 2)


def test_nested_axes_and_jit():
    y = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    both = ember.vmap(ember.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")
    assert_close(both(y), np.full((3, 4), y.sum()))
    outer = ember.vmap(ember.vmap(lambda v: lax.psum(v, "i"), axis_name="j"), axis_name="i")
    assert_close(outer(y), np.broadcast_to(y.sum(0), y.shape))
    centred = ember.jit(ember.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i"))(X)
    assert_close(centred, X - X.mean(0))


def test_gradients_through_collectives():
    def f(x):
        return ember.vmap(lambda v: ((v / lax.psum(v, "i")).sum()) ** 2, axis_name="i")(x).sum()

    def f_np(x):
        return sum((v / x.sum(0)).sum() ** 2 for v in x)

    assert_close(ember.grad(f)(X + 1), numerical_gradient(f_np, [X + 1]), rtol=1e-3, atol=1e-4)

    def g(x):
        return ember.vmap(lambda v: (lax.all_gather(v, "i") ** 2).sum(), axis_name="i")(x).sum()

    assert_close(ember.grad(g)(X), 6 * X)


def test_unbound_axis_name_is_reported_at_the_users_line():
    with pytest.raises(ember.errors.UnboundAxisError, match=r"'k'.*test_collectives.py"):
        lax.psum(1.0, "k")
    with pytest.raises(NameError, match="axis names in scope: 'i'"):
        over_i(lambda v: lax.psum(v, "j"), X)


# --------------------------------------------------------------------------------------------
# pcast / pvary, and the types of varying manual axes inside a shard_map body (one device)

ONE = ember.make_mesh((1,), ("i",))
SPLIT = P("i")


def _typed(body, *args, in_specs=SPLIT, out_specs=SPLIT, **kwargs):
    """``body`` as a shard_map over a one-device mesh, traced: returns its jaxpr's text."""
    mapped = ember.shard_map(body, mesh=ONE, in_specs=in_specs, out_specs=out_specs, **kwargs)
    return str(ember.make_jaxpr(mapped)(*args))


def test_pcast_to_varying_types_an_invariant_value_varying():
    seen = []

    def body(w):
        v = lax.pcast(w, "i", to="varying")
        seen.extend([ember.typeof(w), ember.typeof(v), ember.typeof(lax.pvary(w, "i"))])
        return v[None]

    text = _typed(body, np.float32(2.0), in_specs=P())
    assert [str(t) for t in seen] == ["float32[]", "float32[]{V:i}", "float32[]{V:i}"]
    assert "pvary[axes=('i',)]" in text
    # it computes nothing
    out = ember.shard_map(
        lambda w: lax.pcast(w, "i", to="varying")[None], mesh=ONE, in_specs=P(), out_specs=P("i")
    )(np.float32(2.0))
    assert np.asarray(out).tolist() == [2.0]


def test_pcast_errors_are_jaxs():
    x = np.ones(2, np.float32)
    with pytest.raises(ValueError, match=r"Unsupported pcast from=varying, to='varying'"):
        _typed(lambda v: lax.pcast(v, "i", to="varying"), x)
    with pytest.raises(ValueError, match="Got unexpected `to` value"):
        _typed(lambda v: lax.pcast(v, "i", to="everywhere"), x)
    with pytest.raises(NotImplementedError, match="to='reduced'"):
        _typed(lambda v: lax.pcast(v, "i", to="reduced"), x)
    with pytest.raises(TypeError, match="must be a tuple or a str"):
        _typed(lambda v: lax.pcast(v, {"i"}, to="varying"), x)
    with pytest.raises(ember.errors.UnboundAxisError):
        lax.pcast(x, "i", to="varying")


def test_pcast_under_vmap_is_the_identity():
    assert_close(over_i(lambda v: lax.pcast(v, "i", to="varying") * 2, X), X * 2)


def test_collective_result_types():
    seen = []

    def body(x):
        for v in (
            lax.psum(x, "i"),
            lax.pmax(x, "i"),
            lax.pmean(x, "i"),
            lax.all_gather(x, "i"),
            lax.all_gather(x, "i", to="invarying"),
            lax.ppermute(x, "i", [(0, 0)]),
            lax.psum_scatter(x, "i", tiled=True),
            lax.all_to_all(x, "i", 0, 0, tiled=True),
            lax.axis_index("i"),
            lax.psum(1.0, "i"),
        ):
            seen.append(str(ember.typeof(v)))
        return x

    _typed(body, np.ones(2, np.float32))
    assert seen == [
        "float32[2]",
        "float32[2]",
        "float32[2]",
        "float32[1,2]{V:i}",
        "float32[1,2]",
        "float32[2]{V:i}",
        "float32[2]{V:i}",
        "float32[2]{V:i}",
        "int32[]{V:i}",
        "~float32[]",  # JAX's: psum of an invariant value pvaries it first
    ]


def test_psum_transposes_to_pvary_when_typed_and_to_psum_when_not():
    def body(x, w):
        return ember.grad(lambda w: lax.psum(x * w, "i").sum())(w)[None]

    typed = _typed(body, np.ones(2, np.float32), np.float32(1.0), in_specs=(P("i"), P()))
    untyped = _typed(
        body, np.ones(2, np.float32), np.float32(1.0), in_specs=(P("i"), P()), check_vma=False
    )
    # typed: the cotangent of psum's varying operand is pvaried; pvary's sums it back
    assert typed.count("psum[") == 2 and "{V:i}" in typed
    assert untyped.count("psum[") == 2 and "pvary" not in untyped and "{V:" not in untyped
