"""Programs that call back into Python are refused at export (effects.py)."""

import numpy as np
import pytest

import ember
from ember import lax
from ember.errors import ExportError
from ember.experimental import io_callback
from ember.export import export

f32 = np.float32
x = np.arange(3, dtype=f32)
result = ember.ShapeDtypeStruct((3,), f32)


def printing(x):
    ember.debug.print("x={}", x)
    return x * 2


def sine(a):
    return np.sin(a)


def pure(x):
    return ember.pure_callback(sine, result, x)


def io(x):
    return io_callback(sine, result, x)


def debug_callback(x):
    ember.debug.callback(print, x)
    return x + 1


def in_cond(x):
    return lax.cond(x.sum() > 0, pure, lambda y: y, x)


@pytest.mark.parametrize(
    "fun, primitive, callback",
    [
        (printing, "debug_callback", "debug.print"),
        (pure, "pure_callback", "sine"),
        (io, "io_callback", "sine"),
        (debug_callback, "debug_callback", "print"),
        (in_cond, "pure_callback", "sine"),
    ],
)
def test_callbacks_are_refused_naming_the_callback_and_line(fun, primitive, callback):
    with pytest.raises(ExportError) as info:
        export(ember.jit(fun))(x)
    message = str(info.value)
    assert f"cannot export {fun.__name__}" in message
    assert f"through {primitive} ({callback} (at " in message
    assert "test_effects.py" in message  # the user's line that made the callback


def test_pure_programs_record_no_effects():
    if ember.default_backend() == "reference":
        pytest.skip("exports StableHLO: needs a PJRT backend")
    exported = export(ember.jit(lambda v: v * 2))(x)
    assert exported.ordered_effects == () and exported.unordered_effects == ()
