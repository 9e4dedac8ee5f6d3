"""Module text surgery: function names, renaming, the multi-platform main."""

import pytest

from ember._src.export import modules

TEXT = """module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = call @main_helper(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    %1 = "func.call"(%0) <{callee = @helper}> : (tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    return %arg0 : tensor<2xf32>
  }
  func.func private @main_helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    return %arg0 : tensor<2xf32>
  }
}
"""


def test_function_names_and_body():
    body = modules.module_body(TEXT)
    assert "module" not in body.splitlines()[0]
    assert modules.function_names(body) == ["main", "helper", "main_helper"]
    with pytest.raises(ValueError, match="not a StableHLO module"):
        modules.module_body("func.func @main() {}")


def test_private_functions_renames_whole_symbols_only():
    body, main = modules.private_functions(TEXT, "_p_")
    assert main == "_p_main"
    assert "func.func private @_p_main(" in body
    assert "call @_p_main_helper(" in body  # not @_p_main followed by "_helper"
    assert "callee = @_p_helper" in body
    assert "public" not in body


def test_combine_platforms_builds_a_case_over_the_platform_index():
    types = ["tensor<2xf32>"]
    text = modules.combine_platforms("m", [("cpu", TEXT), ("cuda", TEXT)], types, types)
    assert text.startswith("module @m attributes")
    assert '%arg0: tensor<i32> {jax.global_constant = "_platform_index"}' in text
    assert '"stablehlo.case"(%arg0)' in text
    assert "callee = @_ember_cpu_main" in text and "callee = @_ember_cuda_main" in text
    assert "func.func private @_ember_cuda_helper" in text
    assert modules.function_names(modules.module_body(text))[0] == "main"
