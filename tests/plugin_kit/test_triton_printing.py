"""``pl.debug_print`` in a kernel lowered to Triton's ``tt.print``: one print per ``{}``
with the text before it, checked in the module text, through PTX where the CUDA wheels are
present, and by the TTIR interpreter's output; and the formats the device cannot print."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
import ember.experimental.pallas as pl
from ember_plugin_kit.triton import lower_kernel
from tests.plugin_kit import ttir_interpreter
from tests.plugin_kit.test_triton_lowering import checked_text, pallas_call_of


def _call(kernel, x, grid=(1,)):
    spec = pl.BlockSpec((16,), lambda i: (i,))
    f = pl.pallas_call(
        kernel,
        out_shape=ember.ShapeDtypeStruct(x.shape, x.dtype),
        grid=grid,
        in_specs=[spec],
        out_specs=spec,
    )
    return pallas_call_of(f, x)


def test_debug_print_becomes_one_tt_print_per_value(capsys):
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        pl.debug_print("first {} block {} flag={} tag={} done", x[0], x, x[1] > 0, "t")
        o_ref[...] = x

    x = np.arange(32, dtype=np.int32) - 4
    call = _call(kernel, x, grid=(2,))
    text = checked_text(call)
    assert 'tt.print "first " {hex = false, isSigned = array<i32: 1>} : %' in text
    assert 'tt.print " block " {hex = false, isSigned = array<i32: 1>}' in text
    assert 'tt.print " tag=t done" {hex = false, isSigned = array<i32>}' in text
    capsys.readouterr()
    (result,) = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(result, x)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "pid (0, 0, 0) first -4",
        f"pid (0, 0, 0)  block {np.array2string(x[:16])}",
        "pid (0, 0, 0)  flag=0",  # a bool prints as 0 or 1
        "pid (0, 0, 0)  tag=t done",
    ]
    assert lines[4] == "pid (1, 0, 0) first 12"
    assert len(lines) == 8


def test_floats_and_unsigned_values_print_unsigned():
    def kernel(x_ref, o_ref):
        pl.debug_print("x {} u {}", x_ref[...], x_ref[...].astype(np.uint32))
        o_ref[...] = x_ref[...]

    text = checked_text(_call(kernel, np.ones(16, np.float32)))
    assert text.count("isSigned = array<i32: 0>") == 2


@pytest.mark.parametrize(
    "fmt, message",
    [("x {:.3f}", r"the field \{:.3f\}"), ("x {0!r}", r"the field \{0\}")],
)
def test_formats_the_device_cannot_print_are_refused(fmt, message):
    def kernel(x_ref, o_ref):
        pl.debug_print(fmt, x_ref[...])
        o_ref[...] = x_ref[...]

    with pytest.raises(ValueError, match=message + ".*use a plain \\{\\}"):
        lower_kernel(_call(kernel, np.ones(16, np.float32)))


def test_callbacks_other_than_prints_are_refused():
    def kernel(x_ref, o_ref):
        ember.debug.callback(lambda v: None, x_ref[...])
        o_ref[...] = x_ref[...]

    with pytest.raises(NotImplementedError, match="a kernel cannot call Python"):
        lower_kernel(_call(kernel, np.ones(16, np.float32)))


def test_ordered_prints_are_refused():
    def kernel(x_ref, o_ref):
        ember.debug.print("x {}", x_ref[...], ordered=True)
        o_ref[...] = x_ref[...]

    with pytest.raises(NotImplementedError, match="an ordered print"):
        lower_kernel(_call(kernel, np.ones(16, np.float32)))
