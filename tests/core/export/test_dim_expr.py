"""Dimension expressions: their normal form, text, values, and fitting them to traces."""

import pytest

from ember._src.export import dim_expr
from ember._src.export.dim_expr import DimExpr, SymbolicDim

SIZES = [{"b": 1009, "t": 1013}, {"b": 1051, "t": 1061}, {"b": 1103, "t": 1109}]


def test_normal_form_and_text_round_trip():
    assert dim_expr.parse("b") == SymbolicDim("b")
    assert dim_expr.parse("2*b - 2*b + 3") == 3
    assert dim_expr.parse("b + b") == dim_expr.parse("2*b")
    assert dim_expr.parse("t*b") == dim_expr.parse("b*t")
    for text in ("2*b + 1", "b - 1", "784*b", "b*t", "-b + 4", "b + t"):
        expr = dim_expr.parse(text)
        assert isinstance(expr, DimExpr)
        assert str(expr) == text
        assert dim_expr.parse(str(expr)) == expr
    for bad in ("", "2**b", "b/2", "b +", "3b", "b(1)"):
        with pytest.raises(ValueError):
            dim_expr.parse(bad)


def test_values_and_affine_form():
    expr = dim_expr.parse("3*b + 2")
    assert expr.evaluate({"b": 5}) == 17
    assert expr.affine() == ("b", 3, 2)
    assert dim_expr.parse("b*t").affine() is None
    assert dim_expr.parse("b*t + 1").evaluate({"b": 3, "t": 4}) == 13
    assert dim_expr.evaluate(7, {}) == 7
    assert SymbolicDim("b").name == "b" and dim_expr.parse("b*t").symbols() == ["b", "t"]


def test_fit_finds_the_expression_and_the_third_trace_confirms_it():
    def values(text):
        return [dim_expr.parse(text).evaluate(s) for s in SIZES]

    for text in ("b", "2*b", "784*b + 3", "t - 1", "b*t", "2*b*b"):
        assert dim_expr.fit(values(text), SIZES) == dim_expr.parse(text)
    # fits the first two traces as 2*b (2018, 2102) but not the third: no expression
    assert dim_expr.fit([2018, 2102, 2205], SIZES) is None
    assert dim_expr.fit([504, 525, 551], SIZES) is None  # b // 2


def test_arithmetic_builds_expressions():
    b, t = SymbolicDim("b"), SymbolicDim("t")
    assert 2 * b + 1 == dim_expr.parse("2*b + 1")
    assert b * t - 1 == dim_expr.parse("b*t - 1")
    assert (b + 1) * (b - 1) == dim_expr.parse("b*b - 1")
    assert b - b == 0 and 3 - b == dim_expr.parse("-b + 3")
    assert (2 * b) * 1 == dim_expr.parse("2*b") and -b + 2 * b == b
    with pytest.raises(TypeError):
        b + 1.5
