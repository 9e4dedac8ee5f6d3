"""Plugin discovery, isolation and selection, with plugins installed through real metadata."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember._src.plugin import manager as manager_module
from ember._src.plugin.manager import (
    BLOCKED,
    FAILED,
    INCOMPATIBLE,
    OK,
    PluginManager,
    discover_entry_points,
)
from ember.errors import BackendError, PluginWarning, UnknownPlatformError
from tests.core.util import run_python

FAKE_PLUGINS = pathlib.Path(__file__).parents[1] / "fake_plugins"


@pytest.fixture
def fake_plugins(monkeypatch):
    """Put the fake distribution (a dist-info with entry points) on sys.path. The tests
    select platforms for managers of their own: the process's manager is made to look as if
    it had no default backend yet (once it has one, ``platforms`` cannot name another)."""
    monkeypatch.syspath_prepend(str(FAKE_PLUGINS))
    monkeypatch.setattr(manager_module._manager, "_default", None)
    yield
    for name in ("ember_fake_plugins", "ember_fake_broken"):
        sys.modules.pop(name, None)


@pytest.fixture
def manager(fake_plugins):
    with ember.config.option("platforms", ()):
        yield PluginManager()


def test_discovery_reads_metadata_without_importing(fake_plugins):
    sources = {s.name: s for s in discover_entry_points()}
    assert sources["fake_good"].distribution == "ember-fake-plugins"
    assert sources["fake_good"].version == "0.1"
    assert "reference" in sources
    assert "ember_fake_plugins" not in sys.modules


def test_a_distribution_s_metadata_is_read_only_when_asked_for(monkeypatch):
    read: list[str] = []

    class Installed:
        @property
        def name(self) -> str:
            read.append("name")
            return "ember-lazy"

        @property
        def version(self) -> str:
            read.append("version")
            return "2.0"

    class EntryPoint:
        name, value, dist = "lazy", "ember_lazy.plugin", Installed()

    monkeypatch.setattr(
        manager_module.importlib_metadata, "entry_points", lambda group: [EntryPoint()]
    )
    (source,) = discover_entry_points()
    assert (source.name, source.module) == ("lazy", "ember_lazy.plugin")
    assert read == []  # parsing every plugin's metadata would delay the first computation
    assert (source.distribution, source.version) == ("ember-lazy", "2.0")
    assert (source.distribution, source.version) == ("ember-lazy", "2.0")
    assert read == ["name", "version"]  # once each


def test_statuses(manager):
    manager.load()
    plugins = manager.plugins
    assert plugins["fake_good"].status == OK
    assert plugins["fake_good"].platforms == ["fake"]
    assert plugins["fake_broken"].status == FAILED
    assert "libfake.so: cannot open shared object file" in plugins["fake_broken"].traceback
    assert plugins["fake_misspelled"].status == FAILED
    assert "ember_platfroms" in plugins["fake_misspelled"].message
    assert plugins["fake_old_api"].status == INCOMPATIBLE
    assert "API version [0]" in plugins["fake_old_api"].message
    assert "fakeold" not in manager.platforms


def test_registration_hooks_run_once_per_plugin(manager):
    manager.load()
    module = sys.modules["ember_fake_plugins"]
    assert module.lowerings_seen.count("fake_good") == 1


def test_default_is_highest_priority_that_initialises(manager):
    with pytest.warns(PluginWarning):
        backend = manager.default_backend()
    assert backend.platform == "fake"
    failed = manager.platforms["fakefail"]
    assert failed.status == FAILED
    assert "no such accelerator attached" in failed.traceback


def test_a_platform_failing_on_first_use_warns_naming_plugin_and_error(manager):
    with pytest.warns(PluginWarning) as record:
        manager.default_backend()
    (warning,) = record.list
    message = str(warning.message)
    assert message.startswith("platform 'fakefail' (plugin 'fake_failing_init') failed to ")
    assert "OSError: no such accelerator attached (fake)" in message
    assert "python -m ember doctor" in message
    assert warning.filename == __file__  # points at the caller's line, not ember's
    # warned once: the failed platform is skipped quietly afterwards
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert manager.default_backend().platform == "fake"
        manager.initialise_all()
    assert "OSError: no such accelerator attached" in manager.platforms["fakefail"].traceback


@pytest.mark.slow
def test_late_failure_warning_in_a_fresh_interpreter():
    code = (
        "import warnings\n"
        "import ember, ember.numpy as enp\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    x = enp.ones(2)\n"
        "print(x.sum(), [type(w.message).__name__ + ':' + str(w.lineno) for w in seen])\n"
    )
    done = run_python(
        code, PYTHONPATH=os.pathsep.join([str(FAKE_PLUGINS), *sys.path]), EMBER_PLATFORMS=""
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2.0 ['PluginWarning:5']"


def test_backends_initialise_lazily(manager):
    manager.load()
    assert all(p.backend is None for p in manager.platforms.values())
    manager.backend("reference")
    assert manager.platforms["reference"].status == OK
    assert manager.platforms["fake"].backend is None


def test_aliases(manager):
    assert manager.backend("fake-alias") is manager.backend("fake")


def test_platforms_option_selects_and_orders(fake_plugins):
    with ember.config.option("platforms", ("reference", "fake")):
        manager = PluginManager()
        assert manager.default_backend().platform == "reference"
        assert manager.backend("fake").platform == "fake"
        with pytest.raises(UnknownPlatformError, match="not selected"):
            manager.backend("fakefail")


def test_unknown_platform_lists_the_available_ones(fake_plugins):
    with ember.config.option("platforms", ("tpuu",)):
        manager = PluginManager()
        with pytest.raises(UnknownPlatformError, match=r"unknown platform 'tpuu'.*fake, ") as info:
            manager.default_backend()
    assert "test_manager.py" in str(info.value)  # names the user's line


def test_listed_platform_that_fails_raises(fake_plugins):
    with ember.config.option("platforms", ("fakefail", "reference")):
        manager = PluginManager()
        with pytest.raises(BackendError, match="no such accelerator attached"):
            manager.default_backend()


def test_disable_plugins_blocks(fake_plugins):
    with (
        ember.config.option("platforms", ()),
        ember.config.option("disable_plugins", ("fake_good",)),
    ):
        manager = PluginManager()
        manager.load()
        assert manager.plugins["fake_good"].status == BLOCKED
        with pytest.raises(UnknownPlatformError):
            manager.backend("fake")


def test_no_backend_installed():
    with ember.config.option("platforms", ()):
        manager = PluginManager(sources=[])
        with pytest.raises(BackendError, match="no backend plugin is installed"):
            manager.default_backend()


@pytest.mark.slow
def test_broken_plugins_never_break_import_ember():
    code = "import ember, ember.numpy as enp; print(float(enp.ones(3).sum()))"
    done = run_python(code, PYTHONPATH=str(FAKE_PLUGINS), EMBER_PLATFORMS="reference")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3.0"


@pytest.mark.slow
def test_computing_without_any_backend_is_a_clear_error():
    code = (
        "import ember, ember.numpy as enp\n"
        "try:\n"
        "    enp.ones(3)\n"
        "except ember.errors.BackendError as e:\n"
        "    print('BackendError:', e)\n"
    )
    done = run_python(code, EMBER_PLATFORMS="", EMBER_DISABLE_PLUGINS="reference,cpu")
    assert done.returncode == 0, done.stderr
    assert "BackendError: no ember backend could be initialised (at <string>:3" in done.stdout
    assert "pip install ember-plugin-cpu" in done.stdout


@pytest.mark.slow
def test_unknown_platform_in_environment():
    code = "import ember\ntry:\n    ember.devices()\nexcept ValueError as e:\n    print(e)\n"
    done = run_python(code, EMBER_PLATFORMS="gpuu")
    assert done.returncode == 0, done.stderr
    assert "unknown platform 'gpuu' (from EMBER_PLATFORMS=gpuu)" in done.stdout
    assert "reference" in done.stdout


@pytest.mark.slow
def test_doctor_reports_every_plugin_with_its_error():
    done = subprocess.run(
        [sys.executable, "-m", "ember", "doctor"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(FAKE_PLUGINS), "EMBER_PLATFORMS": ""},
    )
    out = done.stdout
    assert done.returncode == 1  # a plugin failed
    assert "fake_good    ok" in out
    assert "fake_broken  failed" in out
    assert "ImportError: libfake.so: cannot open shared object file (fake)" in out
    assert "fake_old_api incompatible" in out
    assert "fakefail     failed" in out and "OSError: no such accelerator attached" in out
    assert "fake         ok" in out and "(default)" in out
    assert "numpy" in out and "pluggy" in out


# -- the plugin guide's example plugins, installed through real metadata ----------------------

GUIDE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "plugin_guide.md"


def install_guide_plugin(root: pathlib.Path, package: str, entry_point: str) -> str:
    """Write the guide's ``# PACKAGE/plugin.py`` block as an installed distribution under
    ``root`` (a package plus a dist-info naming it in the ``ember_plugins`` group); return a
    PYTHONPATH that finds it."""
    blocks = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), flags=re.S | re.M)
    (code,) = [b for b in blocks if b.startswith(f"# {package}/plugin.py\n")]
    (root / package).mkdir()
    (root / package / "__init__.py").write_text("")
    (root / package / "plugin.py").write_text(code)
    info = root / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ember_plugins]\n{entry_point} = {package}.plugin\n")
    return os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.mark.slow
def test_guide_interpreting_plugin_computes_on_its_own_platform(tmp_path):
    path = install_guide_plugin(tmp_path, "ember_plugin_toy", "toy")
    code = (
        "import json, numpy as np, ember, ember.numpy as enp\n"
        "from ember import lax\n"
        "x = np.array([0.5, -1.0, 2.0], np.float32)\n"
        "f = lambda v: enp.sum(enp.exp(v) * enp.sin(v))\n"
        "y = ember.jit(f)(x)\n"
        "cube = lambda v: lax.fori_loop(0, 3, lambda i, c: c * v, enp.ones_like(v))\n"
        "print(json.dumps({\n"
        "    'default': ember.default_backend(),\n"
        "    'platforms': sorted({d.platform for d in y.devices()}),\n"
        "    'value': float(y),\n"
        "    'grad': np.asarray(ember.jit(ember.grad(f))(x)).tolist(),\n"
        "    'cube': np.asarray(ember.jit(cube)(x)).tolist(),\n"
        "    'costs': ember.jit(f).lower(x).compile().cost_analysis(),\n"
        "}))\n"
    )
    done = run_python(code, PYTHONPATH=path, EMBER_PLATFORMS="toy")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["default"] == "toy" and got["platforms"] == ["toy"]
    x = np.array([0.5, -1.0, 2.0], np.float64)
    np.testing.assert_allclose(got["value"], np.sum(np.exp(x) * np.sin(x)), rtol=1e-6)
    np.testing.assert_allclose(got["grad"], np.exp(x) * (np.sin(x) + np.cos(x)), rtol=1e-6)
    np.testing.assert_allclose(got["cube"], x**3, rtol=1e-6)
    assert got["costs"]["equations"] >= 3


@pytest.mark.slow
def test_guide_interpreting_plugin_runs_its_own_rule(tmp_path):
    # The guide's toy plugin replaces exp's rule by name: prove its rule is the one called.
    path = install_guide_plugin(tmp_path, "ember_plugin_toy", "toy")
    code = (
        "import numpy as np, ember, ember.numpy as enp\n"
        "import ember_plugin_toy.plugin as toy\n"
        "toy.toy_exp = lambda x: np.full_like(x, 7)\n"
        "print(np.asarray(ember.jit(enp.exp)(np.zeros(2, np.float32))).tolist())\n"
    )
    done = run_python(code, PYTHONPATH=path, EMBER_PLATFORMS="toy")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[7.0, 7.0]"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("jaxlib") is None, reason="the PJRT example needs jaxlib"
)
def test_guide_pjrt_plugin_compiles_with_its_lowering_override(tmp_path):
    path = install_guide_plugin(tmp_path, "ember_plugin_mycpu", "mycpu")
    code = (
        "import json, numpy as np, ember, ember.numpy as enp\n"
        "x = np.linspace(-3, 3, 7, dtype=np.float32)\n"
        "f = ember.jit(enp.tanh)\n"
        "print(json.dumps({\n"
        "    'devices': [repr(d) for d in ember.devices()],\n"
        "    'text': f.lower(x).as_text(),\n"
        "    'tanh': np.asarray(f(x)).tolist(),\n"
        "    'flops': f.lower(x).compile().cost_analysis().get('flops'),\n"
        "}))\n"
    )
    done = run_python(code, PYTHONPATH=path, EMBER_PLATFORMS="mycpu")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["devices"] == ["MycpuDevice(id=0)", "MycpuDevice(id=1)"]  # its option's default
    assert "stablehlo.logistic" in got["text"] and "stablehlo.tanh" not in got["text"]
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    np.testing.assert_allclose(got["tanh"], np.tanh(x), rtol=1e-5, atol=1e-6)
    assert got["flops"] > 0


@pytest.mark.slow
def test_guide_interpreting_plugin_passes_the_conformance_suite(tmp_path):
    path = install_guide_plugin(tmp_path, "ember_plugin_toy", "toy")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["--pyargs", "ember_plugin_kit.conformance", "--ember-platform=toy"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path, "EMBER_PLATFORMS": "toy,reference"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    passed = int(re.search(r"(\d+) passed", done.stdout).group(1))
    assert passed >= 60 and " failed" not in done.stdout  # only the multi-device checks skip


# -- ember.extend's NumPy evaluation, for interpreting backends -----------------------------


def test_reference_rule_evaluates_one_primitive_at_a_time():
    from ember import lax
    from ember.extend import reference_rule

    keys = np.array([2, 1, 0, 1], np.int32)
    values = np.arange(4, dtype=np.float32)
    closed = ember.make_jaxpr(lambda k, v: lax.sort((k, v), num_keys=1)[1] * 2.0)(keys, values)
    env = dict(zip(closed.jaxpr.invars, [keys, values]))
    for eqn in closed.jaxpr.eqns:  # an interpreter loop, as an interpreting backend writes it
        operands = [env[a] if a in env else a.val for a in eqn.invars]  # a var, or a literal
        outs = reference_rule(eqn.primitive.name)(*operands, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    (result,) = [env[v] for v in closed.jaxpr.outvars]
    np.testing.assert_array_equal(result, [4.0, 2.0, 6.0, 0.0])  # stable: 1s keep their order
    assert reference_rule(closed.jaxpr.eqns[0].primitive) is reference_rule("sort")
    with pytest.raises(ValueError, match="no primitive named 'sorrt'"):
        reference_rule("sorrt")


def test_evaluate_jaxpr_with_a_rule_of_the_backend():
    from ember.extend import evaluate_jaxpr

    x = np.array([0.0, 1.0, -2.0], np.float32)
    closed = ember.make_jaxpr(lambda v: ember.numpy.exp(v) + 1)(x)
    (plain,) = evaluate_jaxpr(closed, [x])
    assert plain.dtype == np.float32 and plain.shape == (3,)
    np.testing.assert_allclose(plain, np.exp(x) + 1, rtol=1e-6)
    (own,) = evaluate_jaxpr(closed, [x], rules={"exp": lambda v: v * 10})
    np.testing.assert_array_equal(own, x * 10 + 1)


def test_platforms_is_a_string_or_a_list_and_cannot_change_the_started_default():
    code = (
        "import ember, ember.numpy as enp\n"
        "ember.config.update('platforms', 'reference')\n"
        "print(ember.config.platforms)\n"
        "enp.ones(2) + 1\n"
        "ember.config.update('platforms', ('reference',))\n"  # the same default: accepted
        "try:\n"
        "    ember.config.update('platforms', 'cpu,reference')\n"
        "except ember.errors.BackendError as exc:\n"
        "    print('refused:', exc)\n"
        "print(ember.default_backend())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "EMBER_PLATFORMS"},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "('reference',)"
    assert out[1].startswith("refused: platforms='cpu,reference' cannot take effect")
    assert "already started as 'reference'" in out[1]
    assert out[2] == "reference"
