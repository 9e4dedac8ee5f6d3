"""XLA's GPU compiler builds programs holding the Triton custom call, without a GPU: the CUDA
PJRT plugin compiles for a described H100 (a compile-only topology), which parses each kernel's
Triton bytecode, runs Triton's pipeline and emits the launch. Needs the CUDA plugin's wheels
(jax-cuda12-plugin, jax-cuda12-pjrt); skipped without them."""

from __future__ import annotations

import pytest

pytest.importorskip("jaxlib")

from jaxlib import _jax, xla_client

import ember
from ember._src.lowering.module import lower_module
from ember._src.plugin import registries
from ember.extend import LoweringRegistry
from ember_plugin_kit.pjrt import _jaxlib
from ember_plugin_kit.triton import bytecode, register
from tests.plugin_kit import triton_kernels

pytestmark = pytest.mark.skipif(
    not bytecode.cuda_compiler_available(),
    reason="the CUDA PJRT plugin's wheels (jax-cuda12-plugin, jax-cuda12-pjrt) are not installed",
)

# The GPU XLA compiles for: a GpuTargetConfigProto (text format) describing an H100 SXM.
H100 = """
gpu_device_info {
  threads_per_block_limit: 1024 threads_per_warp: 32 shared_memory_per_block: 49152
  shared_memory_per_core: 233472 threads_per_core_limit: 2048 core_count: 132
  fpus_per_core: 128 block_dim_limit_x: 2147483647 block_dim_limit_y: 65535
  block_dim_limit_z: 65535 memory_bandwidth: 3352320000000 l2_cache_size: 52428800
  clock_rate_ghz: 1.98 device_memory_size: 84942979072 shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 }
  registers_per_core_limit: 65536 registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 8 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""


@pytest.fixture(scope="module")
def h100():
    """A compile-only H100 device of the CUDA plugin, and its client."""
    c_api = _jaxlib.plugin_c_api("cuda", bytecode.cuda_plugin_library())
    if c_api is None:
        pytest.skip("another jaxlib user holds the CUDA plugin's C API in this process")
    topology = xla_client.make_c_api_device_topology(
        c_api, "", target_config=H100, topology="1x1x1"
    )
    return topology._make_compile_only_devices()


@pytest.fixture
def triton_on_cuda(monkeypatch):
    monkeypatch.setattr(registries, "_kernel_compilers", {})
    register(LoweringRegistry("triton-test"), "cuda")


def compile_for(devices, text):
    return devices[0].client.compile(
        _jaxlib.parse_module(text),
        executable_devices=_jax.DeviceList(tuple(devices)),
        compile_options=_jaxlib.compile_options(devices),
    )


def lowered_text(name):
    fn, args, _ = triton_kernels.cases()[name]
    return lower_module(ember.make_jaxpr(fn)(*args), platform="cuda", name=name)


@pytest.mark.parametrize("name", sorted(triton_kernels.cases()))
def test_xla_compiles_the_triton_custom_call_for_an_h100(h100, triton_on_cuda, name):
    executable = compile_for(h100, lowered_text(name))
    (hlo,) = executable.hlo_modules()
    assert 'custom_call_target="__gpu$xla.gpu.triton"' in hlo.to_string()


def test_xla_reads_the_kernel_it_is_given(h100, triton_on_cuda):
    # The name in the backend config must be the Triton function's: XLA looks it up.
    text = lowered_text("add").replace('name = "add_kernel"', 'name = "no_such_kernel"')
    with pytest.raises(Exception, match="no_such_kernel"):
        compile_for(h100, text)


@pytest.mark.parametrize("name", sorted(triton_kernels.example_programs()))
def test_xla_compiles_the_example_programs_for_an_h100(h100, triton_on_cuda, name):
    make, args = triton_kernels.example_programs()[name]
    text = lower_module(ember.make_jaxpr(make(False))(*args), platform="cuda", name=name)
    (hlo,) = compile_for(h100, text).hlo_modules()
    assert hlo.to_string().count('custom_call_target="__gpu$xla.gpu.triton"') >= 1
