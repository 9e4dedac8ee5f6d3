"""StableHLO locations: each operation named by its scopes and primitive, with the user's line
(mlir.py's ``location`` and ``strip_locations``, emitted by module.py's lowering)."""

import inspect
import json
import re

import numpy as np

import ember
import ember.numpy as enp
from ember import lax
from ember._src.lowering.mlir import location, strip_locations
from ember._src.source_info import SourceInfo
from ember.sharding import PartitionSpec as P
from tests.core.test_config import needs_cpu_plugin
from tests.core.util import run_ok


def _line(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(_line)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(marker))


@ember.jit
def _inner(x):
    with ember.named_scope("inside"):
        return enp.sin(x)  # the sin line


def _model(x):
    with ember.named_scope("outer"):
        y = x + 1.0  # the add line
        with ember.named_scope("block"):
            z = _inner(y) * 2.0
    return lax.scan(lambda c, v: (c + v, None), 0.0, z)[0]


def _locations(text: str) -> set[str]:
    return set(re.findall(r'loc\("([^"]*)"', text))


def test_operations_carry_scopes_primitives_and_lines():
    text = ember.jit(_model).lower(enp.ones(3)).as_text(debug_info=True)
    assert {"outer/add", "outer/block/jit(_inner)/inside/sin", "outer/block/mul"} <= (
        _locations(text)
    )
    assert "scan/add" in _locations(text)  # a loop body is named under its loop
    assert f'loc("outer/add"("{__file__}":{_line("# the add line")}:0))' in text
    sin = f'loc("outer/block/jit(_inner)/inside/sin"("{__file__}":{_line("# the sin line")}:0))'
    assert sin in text


def test_stripping_leaves_the_module_as_before():
    lowered = ember.jit(_model).lower(enp.ones(3))
    with_locations = lowered.as_text(debug_info=True)
    assert strip_locations(with_locations) == lowered.as_text()
    assert "loc(" not in lowered.as_text()


def test_location_quotes_names_and_files():
    info = SourceInfo('/tmp/a "b"\\c.py', 7, "f", "x")
    assert location('say "hi"/add', info) == (
        ' loc("say \\"hi\\"/add"("/tmp/a \\"b\\"\\\\c.py":7:0))'
    )
    assert location("add", None) == ' loc("add")'


_COMPILE_SCRIPT = r"""
import json
import numpy as np
import ember, ember.numpy as enp

def f(x):
    with ember.named_scope('we"ird/name'):
        return enp.tanh(x) * 3.0

jitted = ember.jit(f)
x = enp.asarray(np.arange(4, dtype=np.float32))
hlo = jitted.lower(x).compile().as_text()
print(json.dumps({"value": np.asarray(jitted(x)).tolist(), "hlo": hlo}))
"""


@needs_cpu_plugin
def test_xla_compiles_the_module_and_keeps_the_names():
    report = json.loads(run_ok(["-c", _COMPILE_SCRIPT], EMBER_PLATFORMS="cpu").splitlines()[-1])
    np.testing.assert_allclose(report["value"], 3 * np.tanh(np.arange(4)), rtol=1e-5)
    assert 'op_name="we\\"ird/name/tanh"' in report["hlo"]


def test_a_shard_map_body_emits_its_own_constants():
    # Its region is isolated from above: a scalar constant the function emitted before
    # cannot be used inside it (XLA refuses the module).
    mesh = ember.make_mesh((1,), ("x",))
    body = ember.shard_map(lambda v: v * 2.0, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    text = ember.jit(lambda x: body(x * 2.0)).lower(np.ones(2, np.float32)).as_text()
    region = text[text.index("sdy.manual_computation") : text.index("sdy.return")]
    assert region.count("stablehlo.constant") == 1
    assert text.count("stablehlo.constant") == 2
