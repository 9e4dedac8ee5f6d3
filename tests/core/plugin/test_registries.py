"""The registries handed to plugins' hooks: collectives and their cross-process transports,
kernel compilers."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.experimental.pallas as pl
from ember import errors
from ember._src import rules
from ember._src.lowering.module import lower_module
from ember._src.plugin import registries
from ember._src.plugin.manager import PluginManager, PluginSource
from ember.extend import CollectiveRegistry, LoweringRegistry, hookimpl


def test_a_platform_declares_its_collectives():
    registry = CollectiveRegistry()
    assert registry.implementation("foo", "all_reduce") == "xla"  # nothing declared
    registry.register("foo", "all_reduce", "xla")
    with pytest.raises(errors.BackendError, match="does not implement the collective 'all_gather'"):
        registry.implementation("foo", "all_gather")


def test_cross_process_transports_are_found_by_name():
    registry = CollectiveRegistry()

    def make(job):
        return ("transport for", job)

    registry.register_transport("foo", "tcp", make)
    assert registry.transport("foo", "tcp")("job") == ("transport for", "job")
    with pytest.raises(
        errors.BackendError,
        match=r"no cross-process collectives transport 'mpi'"
        r" \(registered: tcp\)",
    ):
        registry.transport("foo", "mpi")
    with pytest.raises(errors.BackendError, match=r"\(registered: none\)"):
        registry.transport("bar", "tcp")


def test_the_cpu_plugin_registers_gloo():
    plugin = pytest.importorskip("ember_plugin_cpu.plugin")
    registry = CollectiveRegistry()
    plugin.ember_register_collectives(registry)
    assert registry.transport("cpu", "gloo") is not None
    assert registry.implementation("cpu", "all_to_all") == "xla"


# -- kernel compilers (Pallas) -----------------------------------------------------------------


class _FakeKernelPlugin:
    """A plugin whose platform 'fakegpu' compiles Pallas kernels (as a negation, to tell)."""

    def __init__(self):
        self.calls = []

    @hookimpl
    def ember_register_lowerings(self, registry):
        registry.register_kernel_compiler(self.compile, platform="fakegpu")

    def compile(self, ctx, call, *operands):
        self.calls.append(call)
        return [ctx.op("stablehlo.negate", [operands[0]], call.out_avals[0])]


@pytest.fixture
def fake_kernel_plugin(monkeypatch):
    monkeypatch.setattr(registries, "_kernel_compilers", {})
    plugin = _FakeKernelPlugin()
    PluginManager([PluginSource(name="fake_kernels", module=__name__, obj=plugin)]).load()
    return plugin


def _copy_call(interpret):
    def copy_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    return pl.pallas_call(
        copy_kernel, out_shape=ember.ShapeDtypeStruct((8,), np.float32), interpret=interpret
    )


def test_a_platforms_kernel_compiler_lowers_pallas_calls(fake_kernel_plugin):
    jaxpr = ember.make_jaxpr(_copy_call(False))(np.zeros(8, np.float32))
    text = lower_module(jaxpr, platform="fakegpu", name="k")
    assert "stablehlo.negate" in text and "stablehlo.while" not in text
    (call,) = fake_kernel_plugin.calls
    assert call.name == "copy_kernel" and call.grid == ()
    assert registries.kernel_compiler("fakegpu") == fake_kernel_plugin.compile


def test_interpret_mode_and_other_platforms_bypass_the_compiler(fake_kernel_plugin):
    interpreted = ember.make_jaxpr(_copy_call(True))(np.zeros(8, np.float32))
    assert "stablehlo.negate" not in lower_module(interpreted, platform="fakegpu", name="k")
    compiled = ember.make_jaxpr(_copy_call(False))(np.zeros(8, np.float32))
    assert "stablehlo.negate" not in lower_module(compiled, platform="cpu", name="k")
    assert fake_kernel_plugin.calls == []


def test_a_kernel_compiler_must_name_its_platform():
    registry = LoweringRegistry("fake_kernels")
    with pytest.raises(ValueError, match="must name its platform"):
        registry.register_kernel_compiler(lambda ctx, call, *ops: [], platform="")
    with pytest.raises(TypeError, match="must be callable"):
        registry.register_kernel_compiler(3, platform="fakegpu")


def test_an_override_calls_the_generic_lowering_by_name():
    registry = LoweringRegistry("test-plugin")
    exp_p = rules.all_primitives()["exp"]
    calls = []
    generic = registry.generic("exp")

    def override(ctx, x):
        calls.append(ctx.platform)
        return generic(ctx, x)

    registry.register("exp", override, platform="test-platform")
    try:
        text = lower_module(
            ember.make_jaxpr(ember.numpy.exp)(np.float32(1.0)),
            platform="test-platform",
            name="f",
        )
        assert calls == ["test-platform"]
        assert "stablehlo.exponential" in text
    finally:
        assert rules.remove_lowering(exp_p, "test-platform") is override
    assert rules.remove_lowering(exp_p, "test-platform") is None
    assert rules.lowering_rule(exp_p, "test-platform") is rules.generic_lowering_rule(exp_p)


def test_an_override_by_name_waits_for_its_primitive():
    registry = LoweringRegistry("test-plugin")

    def rule(ctx, x):
        return x

    # defined already: installed at once
    registry.register_by_name("exp", rule, platform="test-platform")
    exp_p = rules.all_primitives()["exp"]
    assert rules.remove_lowering(exp_p, "test-platform") is rule
    # not (yet) defined: kept until define_primitive defines it
    registry.register_by_name("defined_later", rule, platform="test-platform")
    try:
        assert rules._pending_lowerings["defined_later"] == {"test-platform": rule}
        assert registry.registered[-1] == ("defined_later", "test-platform")
        with pytest.raises(ValueError, match="unknown primitive 'defined_later'"):
            registry.generic("defined_later")(None)
    finally:
        rules._pending_lowerings.pop("defined_later")
    with pytest.raises(ValueError, match="name its platform"):
        registry.register_by_name("exp", rule, platform="")
