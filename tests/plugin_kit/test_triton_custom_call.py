"""A ``pallas_call`` on a platform whose kernel compiler is ``ember_plugin_kit.triton``: the
StableHLO module carries XLA's Triton custom call, and it parses and verifies with jaxlib's
MLIR bindings (compiling it needs a GPU: test_triton_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
from ember._src.lowering.module import lower_module
from ember._src.plugin import registries
from ember.experimental.pallas import triton as pltriton
from ember.extend import LoweringRegistry
from ember_plugin_kit.pjrt import _jaxlib
from ember_plugin_kit.triton import compile_pallas_call, lower_kernel, register
from ember_plugin_kit.triton.bytecode import to_bytecode
from ember_plugin_kit.triton.custom_call import CUSTOM_CALL_TARGET, triton_params
from tests.plugin_kit import triton_kernels

CASES = triton_kernels.cases()


@pytest.fixture
def triton_on_cuda(monkeypatch):
    """The Triton kernel compiler registered for platform ``cuda`` for one test."""
    monkeypatch.setattr(registries, "_kernel_compilers", {})
    registry = LoweringRegistry("triton-test")
    register(registry, "cuda")
    assert registry.registered == [("pallas_call", "cuda")]
    assert registries.kernel_compiler("cuda") is compile_pallas_call


def lowered_module(name):
    fn, args, _ = CASES[name]
    closed = ember.make_jaxpr(fn)(*args)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "pallas_call"]
    text = lower_module(closed, platform="cuda", name=name)
    return text, eqn.params["call"]


def custom_call_of(module):
    main = module.body.operations[0]
    calls = [
        op for op in main.regions[0].blocks[0].operations if op.name == "stablehlo.custom_call"
    ]
    assert len(calls) == 1
    return calls[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_with_the_triton_custom_call_verifies(triton_on_cuda, name):
    text, call = lowered_module(name)
    module = _jaxlib.parse_module(text)
    assert module.operation.verify()
    op = custom_call_of(module)
    assert op.attributes["call_target_name"].value == CUSTOM_CALL_TARGET
    assert int(op.attributes["api_version"].value) == 1
    config = op.attributes["mhlo.backend_config"]
    kernel = lower_kernel(call)
    assert config["name"].value == kernel.name
    # The kernel travels as bytecode, byte for byte.
    assert config["ir"].value_bytes == to_bytecode(kernel.text)
    grid = [config[f"grid_{axis}"].value for axis in "xyz"]
    assert tuple(grid) == kernel.grid
    assert config["debug"].value is False
    warps, stages = triton_params(call.compiler_params)
    assert (config["num_warps"].value, config["num_stages"].value) == (warps, stages)


def test_grid_and_compiler_params_reach_the_backend_config(triton_on_cuda):
    text, _ = lowered_module("matmul")
    config = custom_call_of(_jaxlib.parse_module(text)).attributes["mhlo.backend_config"]
    assert [config[f"grid_{a}"].value for a in "xyz"] == [2, 2, 1]
    assert config["num_warps"].value == 4 and config["num_stages"].value == 2


def test_layouts_are_row_major_and_aliases_are_kept(triton_on_cuda):
    text, _ = lowered_module("masked_sum")  # input 1 aliases output 0
    assert (
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [],"
        " operand_index = 1, operand_tuple_indices = []>]" in text
    )
    text, _ = lowered_module("matmul")
    assert (
        "operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]"
        in text
    )
    _jaxlib.parse_module(text)


def test_interpret_mode_does_not_use_the_compiler(triton_on_cuda):
    import ember.experimental.pallas as pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((16,), np.float32), interpret=True)
    text = lower_module(ember.make_jaxpr(f)(np.ones(16, np.float32)), platform="cuda", name="f")
    assert CUSTOM_CALL_TARGET not in text


def test_triton_params_defaults_dicts_and_compiler_params_objects():
    assert triton_params(None) == (4, 3)
    assert triton_params({"triton": {"num_warps": 8}}) == (8, 3)
    assert triton_params({"triton": pltriton.CompilerParams(num_warps=2, num_stages=5)}) == (2, 5)
    with pytest.raises(ValueError, match="num_stages must be positive"):
        triton_params({"triton": {"num_stages": 0}})
