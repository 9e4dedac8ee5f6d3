"""Sharding in types, primitive by primitive, on a 4x2 mesh of Explicit axes X and Y.

Each case runs a function eagerly and under ``jit`` and checks three things: the type of the
result (``ember.typeof``, inside the trace and on the result), the concrete layout of the
result (``y.sharding.spec``) and its values against NumPy. Where the sharding of a result
would be ambiguous, the error is a ``ShardingTypeError`` that names the operands' types and
says how to choose (``out_sharding``, ``reshard``, ``auto_axes``). The last section is bad
input: arrays over two meshes, reshards a mesh cannot do, a missing mesh or out_sharding.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import ShardingTypeError
from ember.sharding import NamedSharding, P, auto_axes, reshard

RNG = np.random.default_rng(7)
X84 = RNG.normal(size=(8, 4)).astype(np.float32)
Y84 = RNG.normal(size=(8, 4)).astype(np.float32)
COL = RNG.normal(size=(4, 1)).astype(np.float32)
ROW = RNG.normal(size=(1, 8)).astype(np.float32)
W46 = RNG.normal(size=(4, 6)).astype(np.float32)
B486 = RNG.normal(size=(4, 8, 6)).astype(np.float32)
B462 = RNG.normal(size=(4, 6, 2)).astype(np.float32)
X814 = RNG.normal(size=(8, 1, 4)).astype(np.float32)
INDICES = np.array([3, 0, 1], np.int32)


def put(mesh, x, *spec):
    return ember.device_put(x, NamedSharding(mesh, P(*spec)))


def padded(spec, ndim):
    """A PartitionSpec with one entry per dimension (trailing ones are None)."""
    return tuple(spec) + (None,) * (ndim - len(spec))


def run_eager_and_jitted(f, *args):
    """``f(*args)`` eagerly and under jit; with the type the traced result had."""
    seen = []

    def traced(*a):
        out = f(*a)
        seen.append(str(ember.typeof(out)))
        return out

    eager = f(*args)
    jitted = ember.jit(traced)(*args)
    return eager, jitted, seen[0]


def check(f, args, typed, spec, want, rtol=1e-5):
    """``f(*args)``, eager and jitted, is typed ``typed``, laid out as ``spec``, equals
    ``want``."""
    eager, jitted, traced = run_eager_and_jitted(f, *args)
    assert traced == typed
    for y in (eager, jitted):
        assert str(ember.typeof(y)) == typed
        assert padded(y.sharding.spec, y.ndim) == padded(spec, y.ndim)
        assert padded(ember.typeof(y).sharding.spec, y.ndim) == padded(spec, y.ndim)
        np.testing.assert_allclose(np.asarray(y), want, rtol=rtol, atol=1e-5)


def refused(f, *args, match):
    """``f(*args)`` raises ShardingTypeError matching ``match``, eagerly and under jit."""
    with pytest.raises(ShardingTypeError, match=match) as eager:
        f(*args)
    with pytest.raises(ShardingTypeError, match=match):
        ember.jit(f)(*args)
    return str(eager.value)


# --------------------------------------------------------------------------------------------
# Elementwise


@pytest.mark.parametrize(
    "name, f, numpy_f, spec, typed",
    [
        ("sin", enp.sin, np.sin, ("X",), "float32[8@X,4]"),
        ("exp", enp.exp, np.exp, ("X", "Y"), "float32[8@X,4@Y]"),
        ("abs", enp.abs, np.abs, (None, "Y"), "float32[8,4@Y]"),
        ("cube", lambda x: lax.integer_pow(x, 3), lambda x: x**3, ("X",), "float32[8@X,4]"),
        (
            "astype",
            lambda x: (x * 4).astype(np.int32),
            lambda x: (x * 4).astype(np.int32),
            ("X",),
            "int32[8@X,4]",
        ),
        (
            "convert",
            lambda x: lax.convert_element_type(x, np.float16),
            lambda x: x.astype(np.float16),
            ("Y", "X"),
            "float16[8@Y,4@X]",
        ),
    ],
)
def test_unary_elementwise_keeps_the_operand_type(xmesh, name, f, numpy_f, spec, typed):
    check(f, [put(xmesh, X84, *spec)], typed, spec, numpy_f(X84), rtol=1e-3)


@pytest.mark.parametrize(
    "lhs, rhs, spec",
    [
        (("X",), ("X",), ("X", None)),  # the same split
        (("X",), (), ("X", None)),  # one side whole
        ((), (None, "Y"), (None, "Y")),
        (("X",), (None, "Y"), ("X", "Y")),  # each splits another dimension
        (("X", "Y"), ("X",), ("X", "Y")),
    ],
)
def test_binary_elementwise_takes_the_consensus(xmesh, lhs, rhs, spec):
    typed = "float32[8" + ("@X" if spec[0] else "") + ",4" + ("@Y" if spec[1] else "") + "]"
    args = [put(xmesh, X84, *lhs), put(xmesh, Y84, *rhs)]
    check(lambda a, b: a * b + 1.0, args, typed, spec, X84 * Y84 + 1.0)


def test_outer_product_broadcasting_splits_both_dimensions(xmesh):
    args = [put(xmesh, COL, "X"), put(xmesh, ROW, None, "Y")]
    check(lambda a, b: a + b, args, "float32[4@X,8@Y]", ("X", "Y"), COL + ROW)


def test_conflicting_splits_are_refused_naming_both_operands(xmesh):
    a, b = put(xmesh, X84, "X"), put(xmesh, Y84, "Y")
    message = refused(lambda s, t: s + t, a, b, match="split differently")
    assert "f32[8@X,4]" in message and "f32[8@Y,4]" in message
    for fix in ("out_sharding", "reshard", "auto_axes"):
        assert fix in message


def test_one_axis_twice_in_a_result_is_refused(xmesh):
    a = put(xmesh, COL, "X")
    b = put(xmesh, np.ones((1, 4), np.float32), None, "X")
    message = refused(lambda s, t: s + t, a, b, match="mesh axis 'X' twice")
    assert "f32[4@X,4]" in message and "f32[4,4@X]" in message  # as broadcast for the add


def test_select_where_clamp_and_comparisons(xmesh):
    a, b = put(xmesh, X84, "X"), put(xmesh, Y84)
    check(
        lambda s, t: enp.where(s > t, s, t),
        [a, b],
        "float32[8@X,4]",
        ("X",),
        np.where(X84 > Y84, X84, Y84),
    )
    check(
        lambda s, t: lax.select_n(s > 0, s, t),
        [put(xmesh, X84, "X"), put(xmesh, Y84, None, "Y")],
        "float32[8@X,4@Y]",
        ("X", "Y"),
        np.where(X84 > 0, Y84, X84),
    )
    check(lambda s: lax.clamp(-0.5, s, 0.5), [a], "float32[8@X,4]", ("X",), np.clip(X84, -0.5, 0.5))
    check(
        lambda s, t: lax.clamp(t - 1, s, t + 1),
        [a, b],
        "float32[8@X,4]",
        ("X",),
        np.clip(X84, Y84 - 1, Y84 + 1),
    )
    check(lambda s, t: s < t, [a, b], "bool[8@X,4]", ("X",), X84 < Y84)
    check(lambda s: s == s, [put(xmesh, X84, None, "Y")], "bool[8,4@Y]", (None, "Y"), X84 == X84)


# --------------------------------------------------------------------------------------------
# Shapes: broadcast, reshape, transpose, squeeze


def test_broadcast_and_expand_dims_keep_the_splits(xmesh):
    a = put(xmesh, X84, "X")
    want = np.broadcast_to(X84, (3, 8, 4))
    check(lambda s: enp.broadcast_to(s, (3, 8, 4)), [a], "float32[3,8@X,4]", (None, "X"), want)
    check(lambda s: enp.expand_dims(s, 1), [a], "float32[8@X,1,4]", ("X",), X84[:, None])


def test_reshape_splits_and_merges_dimensions(xmesh):
    a, b = put(xmesh, X84, "X"), put(xmesh, X84, None, "Y")
    # A split dimension split in two: its split goes to the major part.
    check(lambda s: s.reshape(4, 2, 4), [a], "float32[4@X,2,4]", ("X",), X84.reshape(4, 2, 4))
    check(lambda s: s.reshape(8, 2, 2), [b], "float32[8,2@Y,2]", (None, "Y"), X84.reshape(8, 2, 2))
    # Dimensions merged with the major one split: the merged one is split.
    check(lambda s: s.reshape(32), [a], "float32[32@X]", ("X",), X84.reshape(32))
    check(lambda s: lax.reshape(s, (32,)), [a], "float32[32@X]", ("X",), X84.reshape(32))


def test_an_ambiguous_reshape_is_refused_and_out_sharding_resolves_it(xmesh):
    b = put(xmesh, X84, None, "Y")
    message = refused(lambda s: s.reshape(4, 8), b, match="ambiguous")
    assert "f32[8,4@Y]" in message and "out_sharding" in message
    refused(lambda s: lax.reshape(s, (32,)), b, match="ambiguous")  # the minor one split
    check(
        lambda s: lax.reshape(s, (4, 8), out_sharding=P("X")),
        [b],
        "float32[4@X,8]",
        ("X",),
        X84.reshape(4, 8),
    )
    check(
        lambda s: lax.reshape(s, (32,), out_sharding=P()), [b], "float32[32]", (), X84.reshape(32)
    )


def test_transpose_and_squeeze_move_the_splits(xmesh):
    check(lambda s: s.T, [put(xmesh, X84, "X", "Y")], "float32[4@Y,8@X]", ("Y", "X"), X84.T)
    check(
        lambda s: enp.transpose(s, (1, 0)),
        [put(xmesh, X84, "X")],
        "float32[4,8@X]",
        (None, "X"),
        X84.T,
    )
    check(
        lambda s: enp.squeeze(s, 1),
        [put(xmesh, X814, "X", None, "Y")],
        "float32[8@X,4@Y]",
        ("X", "Y"),
        X814[:, 0],
    )


# --------------------------------------------------------------------------------------------
# Reductions


def test_reductions_over_a_split_and_an_unsplit_dimension(xmesh):
    a = put(xmesh, X84, "X", "Y")
    check(lambda s: s.sum(0), [a], "float32[4@Y]", ("Y",), X84.sum(0))
    check(lambda s: s.sum(1), [a], "float32[8@X]", ("X",), X84.sum(1))
    check(lambda s: s.max(0), [a], "float32[4@Y]", ("Y",), X84.max(0))
    check(lambda s: s.max(1), [a], "float32[8@X]", ("X",), X84.max(1))
    check(lambda s: enp.argmax(s, 0), [a], "int32[4@Y]", ("Y",), X84.argmax(0))
    check(lambda s: enp.argmax(s, 1), [a], "int32[8@X]", ("X",), X84.argmax(1))
    check(lambda s: s.sum(), [a], "float32[]", (), X84.sum())


# --------------------------------------------------------------------------------------------
# dot_general


def test_matmul_free_dimensions_keep_their_splits(xmesh):
    args = [put(xmesh, X84, "X"), put(xmesh, W46, None, "Y")]
    check(lambda s, t: s @ t, args, "float32[8@X,6@Y]", ("X", "Y"), X84 @ W46, rtol=1e-4)
    check(lambda s, t: enp.matmul(s, t), args, "float32[8@X,6@Y]", ("X", "Y"), X84 @ W46, 1e-4)


def test_einsum_batch_dimensions_agree(xmesh):
    args = [put(xmesh, B486, "X"), put(xmesh, B462, "X", None, "Y")]
    want = np.einsum("bij,bjk->bik", B486, B462)
    check(
        lambda s, t: enp.einsum("bij,bjk->bik", s, t),
        args,
        "float32[4@X,8,2@Y]",
        ("X", None, "Y"),
        want,
        rtol=1e-4,
    )
    # Batch dimensions split differently: no consensus.
    mixed = [put(xmesh, B486, "X"), put(xmesh, B462, "Y")]
    refused(lambda s, t: enp.einsum("bij,bjk->bik", s, t), *mixed, match="split differently")


def test_split_contracting_dimensions_are_refused_naming_them(xmesh):
    b, w = put(xmesh, X84, None, "Y"), put(xmesh, W46, None, "Y")
    message = refused(lambda s, t: s @ t, b, w, match="contracting dimensions are split")
    assert "f32[8,4@Y]" in message and "f32[4,6@Y]" in message and "out_sharding" in message
    refused(
        lambda s, t: s @ t,
        put(xmesh, X84),
        put(xmesh, W46, "X"),
        match=r"contracting dimensions are split \(None and 'X'\)",
    )


def test_dot_general_out_sharding_resolves_a_split_contraction(xmesh):
    numbers = (((1,), (0,)), ((), ()))
    args = [put(xmesh, X84), put(xmesh, W46, "X")]
    check(
        lambda s, t: lax.dot_general(s, t, numbers, out_sharding=P("X")),
        args,
        "float32[8@X,6]",
        ("X",),
        X84 @ W46,
        rtol=1e-4,
    )
    check(
        lambda s, t: lax.dot_general(s, t, numbers, out_sharding=P(None, "Y")),
        args,
        "float32[8,6@Y]",
        (None, "Y"),
        X84 @ W46,
        rtol=1e-4,
    )


@pytest.mark.parametrize("on_mesh", [False, True], ids=["one device", "mesh"])
def test_out_sharding_over_auto_axes_lays_out_without_typing(mesh, on_mesh):
    """The tests' other mesh, of Auto axes: out_sharding places the result, types nothing."""
    rows = NamedSharding(mesh, P("data"))
    x, w = (put(mesh, X84), put(mesh, W46)) if on_mesh else (enp.asarray(X84), enp.asarray(W46))
    numbers = (((1,), (0,)), ((), ()))
    for y, want in (
        (lax.reshape(x, (32,), out_sharding=rows), X84.reshape(32)),
        (lax.dot_general(x, w, numbers, out_sharding=rows), X84 @ W46),
    ):
        assert str(ember.typeof(y)).startswith("float32[") and "@" not in str(ember.typeof(y))
        assert y.sharding == rows
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5)


@pytest.mark.parametrize("which", ["reshape", "dot_general"])
def test_eager_out_sharding_of_arrays_on_one_device(xmesh, which):
    numbers = (((1,), (0,)), ((), ()))
    if which == "reshape":
        y = lax.reshape(enp.asarray(X84), (32,), out_sharding=P("X"))
        typed, want = "float32[32@X]", X84.reshape(32)
    else:
        y = lax.dot_general(enp.asarray(X84), enp.asarray(W46), numbers, out_sharding=P("X"))
        typed, want = "float32[8@X,6]", X84 @ W46
    assert str(ember.typeof(y)) == typed
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5)


# --------------------------------------------------------------------------------------------
# Concatenate, slices, pad, sort, cumulative sums, fft


def test_concatenate_along_a_whole_dimension(xmesh):
    a, u = put(xmesh, X84, "X"), put(xmesh, Y84)
    want = np.concatenate([X84, Y84], 1)
    check(lambda s, t: enp.concatenate([s, t], 1), [a, u], "float32[8@X,8]", ("X",), want)
    message = refused(lambda s, t: enp.concatenate([s, t], 0), a, u, match="joins along it")
    assert "f32[8@X,4]" in message and "reshard" in message


def test_slices_and_indexing_of_whole_dimensions(xmesh):
    a = put(xmesh, X84, "X")
    check(lambda s: s[:, 1:3], [a], "float32[8@X,2]", ("X",), X84[:, 1:3])
    check(lambda s: s[:, 2], [a], "float32[8@X]", ("X",), X84[:, 2])
    check(lambda s: s[:, ::-1], [a], "float32[8@X,4]", ("X",), X84[:, ::-1])
    check(
        lambda s: lax.dynamic_slice(s, (0, 1), (8, 2)), [a], "float32[8@X,2]", ("X",), X84[:, 1:3]
    )
    refused(lambda s: s[1:3], a, match="a slice takes part of it")
    refused(lambda s: s[2], a, match="a slice takes part of it")
    refused(lambda s: lax.dynamic_slice(s, (1, 0), (2, 4)), a, match="a slice takes part of it")


def test_pad_a_whole_dimension(xmesh):
    a = put(xmesh, X84, "X")
    want = np.pad(X84, ((0, 0), (1, 2)))
    check(lambda s: enp.pad(s, ((0, 0), (1, 2))), [a], "float32[8@X,7]", ("X",), want)
    refused(lambda s: enp.pad(s, ((1, 0), (0, 0))), a, match="padding changes its size")


def test_sort_along_a_whole_dimension_only(xmesh):
    a = put(xmesh, X84, "X")
    check(lambda s: enp.sort(s, axis=1), [a], "float32[8@X,4]", ("X",), np.sort(X84, 1))
    check(lambda s: enp.argsort(s, axis=1), [a], "int32[8@X,4]", ("X",), np.argsort(X84, 1))
    message = refused(lambda s: enp.sort(s, axis=0), a, match="sort orders along it")
    assert "dimension 0 of f32[8@X,4]" in message


def test_cumsum_along_a_whole_dimension_only(xmesh):
    a = put(xmesh, X84, "X")
    check(lambda s: enp.cumsum(s, axis=1), [a], "float32[8@X,4]", ("X",), np.cumsum(X84, 1))
    check(
        lambda s: lax.cummax(s, axis=1),
        [a],
        "float32[8@X,4]",
        ("X",),
        np.maximum.accumulate(X84, 1),
    )
    refused(lambda s: enp.cumsum(s, axis=0), a, match="split over 'X'")


def test_fft_along_a_whole_dimension_only(xmesh):
    a = put(xmesh, X84, "X")
    want = np.fft.fft(X84, axis=1)
    check(lambda s: enp.fft.fft(s, axis=1), [a], "complex64[8@X,4]", ("X",), want)
    refused(lambda s: enp.fft.fft(s, axis=0), a, match="the transform mixes its elements")


def test_gamma_samples_are_split_as_their_parameters(xmesh):
    alpha = np.linspace(0.5, 4.0, 32, dtype=np.float32).reshape(8, 4)
    key = ember.random.key(3)
    whole = np.asarray(ember.random.gamma(key, put(xmesh, alpha)))
    check(
        lambda a: ember.random.gamma(key, a),
        [put(xmesh, alpha, "X")],
        "float32[8@X,4]",
        ("X",),
        whole,
    )


# --------------------------------------------------------------------------------------------
# Gather and scatter: no sharding rule


def test_gather_and_scatter_of_a_split_operand_are_refused_with_the_fix(xmesh):
    a = put(xmesh, X84, "X")
    for f in (lambda s: enp.take(s, INDICES, axis=0), lambda s: s.at[INDICES].set(1.0)):
        message = refused(f, a, match="no sharding rule")
        assert "reshard" in message and "auto_axes" in message


def test_gather_and_scatter_of_a_whole_operand_work(xmesh):
    u = put(xmesh, X84)
    check(lambda s: enp.take(s, INDICES, axis=0), [u], "float32[3,4]", (), X84[INDICES])
    want = X84.copy()
    want[INDICES] = 1.0
    check(lambda s: s.at[INDICES].set(1.0), [u], "float32[8,4]", (), want)


def test_auto_axes_runs_an_operation_without_a_rule(xmesh):
    a = put(xmesh, X84, "X")
    take = auto_axes(lambda s: enp.take(s, INDICES, axis=1), out_sharding=P("X"))
    check(take, [a], "float32[8@X,3]", ("X",), X84[:, INDICES])


# --------------------------------------------------------------------------------------------
# Bad input


def test_operands_typed_over_two_meshes_are_refused_naming_both(xmesh):
    other = ember.make_mesh((4, 2), ("A", "B"))
    a, b = put(xmesh, X84, "X"), put(other, Y84, "A")
    message = refused(lambda s, t: s + t, a, b, match="typed over two meshes")
    assert "f32[8@X,4]" in message and "f32[8@A,4]" in message
    assert "'A': 4" in message and "'X': 4" in message


def test_reshard_to_an_axis_the_mesh_lacks_or_over_an_indivisible_dimension(xmesh):
    a = put(xmesh, X84, "X")
    refused(lambda s: reshard(s, P("Z")), a, match="names axis 'Z', which the mesh does not")
    message = refused(lambda s: reshard(s, P(None, ("X", "Y"))), a, match="cannot be split")
    assert "size 4" in message and "8 parts" in message
    odd = put(xmesh, np.ones((6, 4), np.float32))
    refused(lambda s: reshard(s, P("X")), odd, match=r"dimension 0 \(size 6\) cannot be split")


def test_auto_axes_needs_out_sharding(xmesh):
    with pytest.raises(ShardingTypeError, match="needs out_sharding="):
        auto_axes(lambda s: s * 2)(put(xmesh, X84, "X"))


def test_reshard_with_a_bare_partition_spec_needs_a_mesh(explicit_mesh):
    a = put(explicit_mesh, X84, "X")
    message = refused(lambda s: reshard(s, P()), a, match="bare PartitionSpec")
    assert "NamedSharding(mesh, spec)" in message
