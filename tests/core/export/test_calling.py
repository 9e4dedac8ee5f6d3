"""call_exported: the exported module copied into the caller's module, inside jit."""

import pathlib

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.export import deserialize, export
from tests.core.util import assert_close

pytestmark = pytest.mark.skipif(
    ember.default_backend() == "reference", reason="exports StableHLO: needs a PJRT backend"
)
f32 = np.float32


def exported_of(fun, *shapes):
    specs = [ember.ShapeDtypeStruct(s, f32) for s in shapes]
    return deserialize(export(ember.jit(fun))(*specs).serialize())


def test_call_inside_jit_embeds_private_functions():
    double = exported_of(lambda x: x * 2, (3,))
    square = exported_of(lambda x: x * x, (3,))

    def program(x):
        return double.call(x) + square.call(x) + double.call(x + 1)

    text = ember.jit(program).lower(np.ones(3, f32)).as_text()
    # each exported module is copied once, under its own prefix, as private functions
    assert text.count("func.func private @_ember_exported_0_main") == 1
    assert text.count("func.func private @_ember_exported_1_main") == 1
    assert text.count("@_ember_exported_0_main") == 3  # its definition and two calls
    x = np.arange(3, dtype=f32)
    assert_close(ember.jit(program)(x), 2 * x + x * x + 2 * (x + 1))


def test_exported_program_with_helper_functions_nests():
    inner = exported_of(lambda x: enp.sin(x), (4,))
    # export a function that itself calls an exported program, then call that inside jit
    outer = exported_of(lambda x: inner.call(x) * 3, (4,))
    x = np.linspace(0, 1, 4).astype(f32)
    assert_close(outer.call(x), 3 * np.sin(x), rtol=1e-6)
    assert_close(ember.jit(lambda v: outer.call(v) + inner.call(v))(x), 4 * np.sin(x), rtol=1e-6)


def test_vmap_of_a_call_is_not_supported_yet():
    double = exported_of(lambda x: x * 2, (3,))
    with pytest.raises(NotImplementedError, match="call_exported"):
        ember.vmap(double.call)(np.ones((2, 3), f32))


def test_the_reference_backend_refuses_an_exported_program_clearly():
    golden = pathlib.Path(__file__).parent / "golden" / "scan.emberexp"
    exported = deserialize(golden.read_bytes())
    args = [np.ones(a.shape, a.dtype) for a in exported.in_avals]
    reference = ember.devices("reference")[0]
    with pytest.raises(ember.errors.ExportError, match="reference backend cannot run it"):
        ember.jit(exported.call, device=reference)(*args)
