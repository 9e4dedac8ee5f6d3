"""ShapedArray's varying manual axes (``vma``): part of the type (equality, hashing), kept by
``update``, printed as JAX prints them, empty by default."""

from __future__ import annotations

import numpy as np

from ember._src.core import ShapedArray, tangent_aval


def test_vma_is_empty_by_default_and_part_of_the_type():
    plain = ShapedArray((4,), np.float32)
    varying = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert plain.vma == frozenset()
    assert plain != varying and hash(plain) != hash(varying)
    assert varying == ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert plain.same_type(varying)  # shapes and dtypes only


def test_update_keeps_vma_unless_replaced():
    varying = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert varying.update(shape=(2, 2)).vma == frozenset({"i"})
    assert varying.update(dtype=np.int32).vma == frozenset({"i"})
    assert varying.update(vma=()).vma == frozenset()
    assert tangent_aval(varying.update(dtype=np.int32)).vma == frozenset({"i"})


def test_printed_as_jax_prints_them():
    one = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert one.str_short() == "f32[4]{V:i}"  # in jaxprs
    assert str(one) == "float32[4]{V:i}"  # typeof
    weak = ShapedArray((), np.float32, weak_type=True, vma=frozenset({"i"}))
    assert str(weak) == "~float32[]{V:i}"
    assert repr(one) == "ShapedArray(float32[4]{V:i})"
    assert str(ShapedArray((4,), np.float32)) == "float32[4]"


def test_manual_axis_type_is_jaxs_spelling_of_vma():
    varying = ShapedArray((4,), np.float32, vma=frozenset({"i"}))
    assert varying.manual_axis_type.varying == {"i"} and varying.mat.varying == {"i"}
    assert varying.manual_axis_type.unreduced == frozenset()
