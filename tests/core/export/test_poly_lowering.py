"""The generalised lowering of a polymorphic export (the rest is tested end to end in
test_shape_poly.py)."""

from ember._src.export import poly_lowering, shape_poly
from ember.export import symbolic_shape


def test_line_numbers_in_locations_are_not_taken_for_symbolic_sizes():
    found = shape_poly.Found({"b": 1009})
    generalizer = poly_lowering.Generalizer(found, [symbolic_shape("b, 4")], ["x"], "f")
    t = "tensor<1009x4xf32>"
    text = (
        "module @m {\n"
        f"  func.func public @main(%arg0: {t}) -> ({t}) {{\n"
        f'    %0 = "stablehlo.add"(%arg0, %arg0) : ({t}, {t}) -> {t} loc("add"("f.py":1009:0))\n'
        f"    return %0 : {t}\n"
        "  }\n"
        "}\n"
    )
    rewritten = generalizer.rewrite(text)
    assert '-> tensor<?x4xf32> loc("add"("f.py":1009:0))' in rewritten
    assert "shape_assertion" in rewritten
