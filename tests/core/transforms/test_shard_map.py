"""shard_map's types of varying manual axes (check_vma=True, the default) on a one-device
mesh: what typeof and jaxprs print, the pvary that binding inserts, the out_specs check and
check_vma=False. Values and gradients over several devices: tests/sharding/test_shard_map_vma.py.
Printed types and equations are JAX 0.10.2's."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.sharding import AxisType, PartitionSpec as P

X = np.arange(4.0, dtype=np.float32)
W = np.float32(2.0)


def _mesh(*names):
    return ember.make_mesh((1,) * len(names), names)


def _types_inside(body, mesh, in_specs, out_specs, *args, **kwargs):
    """What ``body`` records (typeof of values inside) when traced as a shard_map body."""
    seen = []
    mapped = ember.shard_map(
        lambda *a: body(seen, *a), mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kwargs
    )
    ember.make_jaxpr(mapped)(*args)
    return seen


def _body_text(mapped, *args):
    (eqn,) = [
        e for e in ember.make_jaxpr(mapped)(*args).jaxpr.eqns if e.primitive.name == "shard_map"
    ]
    return str(eqn.params["jaxpr"])


def test_arguments_vary_over_the_axes_their_in_specs_split_them_over():
    def body(seen, x, w):
        seen += [ember.typeof(x), ember.typeof(w), ember.typeof(x * w)]
        return x

    types = _types_inside(body, _mesh("i"), (P("i"), P()), P("i"), X, W)
    assert [str(t) for t in types] == ["float32[4]{V:i}", "float32[]", "float32[4]{V:i}"]
    assert types[0].vma == frozenset({"i"}) and types[1].vma == frozenset()


def test_two_axes_print_in_the_mesh_order_and_psum_removes_its_axes():
    def body(seen, x):
        for v in (x, lax.psum(x, "j"), lax.psum(x, ("i", "j")), lax.axis_index("j")):
            seen.append(str(ember.typeof(v)))
        return x

    seen = _types_inside(body, _mesh("i", "j"), P("i", "j"), P("i", "j"), X.reshape(2, 2))
    # JAX 0.10.2 prints float32[1,2]{V:(i,j)}, float32[1,2]{V:i}, float32[1,2], int32[]{V:j}
    assert seen == ["float32[2,2]{V:(i,j)}", "float32[2,2]{V:i}", "float32[2,2]", "int32[]{V:j}"]


def test_binding_pvaries_the_less_varying_operand():
    mapped = ember.shard_map(
        lambda x, w: x * w, mesh=_mesh("i"), in_specs=(P("i"), P()), out_specs=P("i")
    )
    text = _body_text(mapped, X, W)
    # JAX 0.10.2: `g:f32[]{V:i} = pvary[axes=('i',)] f` then `h:f32[4]{V:i} = mul d g`
    assert "{ lambda ; a:f32[4]{V:i} b:f32[]. let" in text
    assert "c:f32[]{V:i} = pvary[axes=('i',)] b" in text
    assert "d:f32[4]{V:i} = mul a c" in text


def test_psum_of_an_invariant_value_is_pvaried_first():
    def body(x):
        return x + lax.psum(1.0, "i")

    text = _body_text(ember.shard_map(body, mesh=_mesh("i"), in_specs=P("i"), out_specs=P("i")), X)
    assert "b:f32[]{V:i} = pvary[axes=('i',)] 1.0:f32[]" in text
    assert "c:f32[] = psum[axes=('i',)] b" in text


def test_an_output_is_pvaried_to_the_axes_its_out_spec_splits_it_over():
    text = _body_text(
        ember.shard_map(lambda w: w * 2, mesh=_mesh("i"), in_specs=P(), out_specs=P("i")), X
    )
    assert "pvary[axes=('i',)] b" in text and text.rstrip().endswith("in (c,) }")


def test_out_specs_are_checked_against_the_types():
    mesh = _mesh("i", "j")
    with pytest.raises(ValueError) as caught:
        ember.shard_map(lambda x: (x, x * 2), mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P()))(
            X
        )
    message = str(caught.value)
    assert "shard_map output #1 has out_specs PartitionSpec()" in message
    assert "mesh axes ['i']" in message and "float32[4]{V:i}" in message
    assert "psum or pmean over 'i'" in message and "check_vma=False" in message
    # reduced over the axis, or gathered to="invarying", it may leave the axis out
    out = ember.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())(X)
    np.testing.assert_allclose(np.asarray(out), X)
    gathered = ember.shard_map(
        lambda x: lax.all_gather(x, "i", tiled=True, to="invarying"),
        mesh=mesh,
        in_specs=P("i"),
        out_specs=P(),
    )(X)
    np.testing.assert_allclose(np.asarray(gathered), X)


@pytest.mark.parametrize("check_vma", [True, False])
def test_an_out_spec_longer_than_the_block_is_refused_when_traced(check_vma):
    with pytest.raises(ValueError, match=r"output #0: out_specs .* 1 entries for a block f32\[\]"):
        ember.shard_map(
            lambda x: x.sum(),
            mesh=_mesh("i"),
            in_specs=P("i"),
            out_specs=P("i"),
            check_vma=check_vma,
        )(X)


def test_check_vma_false_types_nothing_and_checks_nothing():
    for flag in ({"check_vma": False}, {"check_rep": False}):
        types = _types_inside(
            lambda seen, x, w: seen.append(ember.typeof(x * w)) or x,
            _mesh("i"),
            (P("i"), P()),
            P(),
            X,
            W,
            **flag,
        )
        assert str(types[0]) == "float32[4]"
        text = _body_text(
            ember.shard_map(
                lambda x, w: x * w, mesh=_mesh("i"), in_specs=(P("i"), P()), out_specs=P(), **flag
            ),
            X,
            W,
        )
        assert "pvary" not in text and "{V:" not in text
        # pcast is then the identity
        out = ember.shard_map(
            lambda w: lax.pcast(w, "i", to="varying"),
            mesh=_mesh("i"),
            in_specs=P(),
            out_specs=P(),
            **flag,
        )(W)
        assert float(out) == 2.0


def test_types_outside_shard_map_carry_no_axes():
    assert str(ember.typeof(ember.numpy.ones(3))) == "float32[3]"
    jaxpr = ember.make_jaxpr(lambda x: x * 2)(X)
    assert "{V:" not in str(jaxpr)


def test_values_made_like_a_varying_one_vary_as_it_does():
    def body(seen, x):
        for v in (
            ember.numpy.zeros_like(x),
            lax.full_like(x, 3.0),
            ember.numpy.full_like(x, 2, shape=(3,)),
            ember.numpy.zeros_like(x[0]),
        ):
            seen.append(str(ember.typeof(v)))
        return x

    seen = _types_inside(body, _mesh("i"), P("i"), P("i"), X)
    # JAX 0.10.2's: so that zeros_like(x_block) can start a scan carry
    assert seen == ["float32[4]{V:i}", "float32[4]{V:i}", "float32[3]{V:i}", "float32[]{V:i}"]
    total = ember.shard_map(
        lambda x: lax.scan(lambda c, v: (c + v, None), ember.numpy.zeros_like(x[0]), x)[0][None],
        mesh=_mesh("i"),
        in_specs=P("i"),
        out_specs=P("i"),
    )(X)
    assert float(total[0]) == 6.0


# -- axis_names: partial-manual shard_map ---------------------------------------------------


def test_axis_names_marks_only_those_axes_manual_in_the_jaxpr():
    mapped = ember.shard_map(
        lambda x: lax.psum(x, "i"),
        mesh=_mesh("i", "j"),
        in_specs=P("i"),
        out_specs=P(),
        axis_names={"i"},
    )
    text = str(ember.make_jaxpr(mapped)(X))
    assert "manual_axes=('i',)" in text
    assert "c:f32[4]{V:i}" in text and "psum[axes=('i',)] c" in text
    full = ember.shard_map(lambda x: x, mesh=_mesh("i", "j"), in_specs=P("i"), out_specs=P("i"))
    assert "manual_axes=('i', 'j')" in str(ember.make_jaxpr(full)(X))


@pytest.mark.parametrize("names", [{"i"}, ["i"], ("i",), "i", frozenset({"i"})])
def test_axis_names_takes_any_iterable_of_names(names):
    mapped = ember.shard_map(
        lambda x: x, mesh=_mesh("i", "j"), in_specs=P("i"), out_specs=P("i"), axis_names=names
    )
    np.testing.assert_array_equal(np.asarray(mapped(X)), X)
    assert "manual_axes=('i',)" in str(ember.make_jaxpr(mapped)(X))


def test_axis_names_must_be_mesh_axes():
    mapped = ember.shard_map(
        lambda x: x, mesh=_mesh("i", "j"), in_specs=P("i"), out_specs=P("i"), axis_names={"k"}
    )
    with pytest.raises(ValueError, match=r"axis_names=\['k'\].*\('i', 'j'\).*'k' is not one"):
        mapped(X)


@pytest.mark.parametrize(
    "in_spec, out_spec, what", [(P("j"), P(), "in_specs"), (P("i"), P(("i", "j")), "out_specs")]
)
def test_a_spec_naming_an_automatic_axis_is_refused(in_spec, out_spec, what):
    mapped = ember.shard_map(
        lambda x: x,
        mesh=_mesh("i", "j"),
        in_specs=in_spec,
        out_specs=out_spec,
        axis_names={"i"},
    )
    with pytest.raises(ValueError, match=rf"{what} #0 is .* names mesh axis 'j'.*manual axes"):
        mapped(X)


def test_a_collective_over_an_automatic_axis_finds_no_such_axis():
    mapped = ember.shard_map(
        lambda x: lax.psum(x, "j"),
        mesh=_mesh("i", "j"),
        in_specs=P("i"),
        out_specs=P(),
        axis_names={"i"},
    )
    with pytest.raises(NameError, match="unbound axis name: 'j'"):
        mapped(X)


def test_inside_only_the_manual_axes_are_typed_manual():
    seen = []

    def body(x):
        seen.append(ember.sharding.get_abstract_mesh().axis_types)
        return x

    mesh = ember.make_mesh((1, 1), ("i", "j"), axis_types=(AxisType.Explicit, AxisType.Auto))
    ember.make_jaxpr(
        ember.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P(), axis_names={"j"})
    )(X)
    assert seen == [(AxisType.Explicit, AxisType.Manual)]
