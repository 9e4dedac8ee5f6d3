"""The plugin installed on a machine without a TPU (this one; skipped where there is one):
``import ember`` and the other platforms are unaffected, ``python -m ember doctor`` shows the
plugin with the real reason within seconds, and ``EMBER_PLATFORMS=tpu`` fails with it."""

from __future__ import annotations

import time

import pytest
from ember_plugin_tpu import chips

from tests.plugin_tpu.util import install_site, run_python

if chips.find_chips() is not None:
    pytest.skip("this machine has TPU chips", allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return install_site(tmp_path_factory.mktemp("site"))


def test_doctor_shows_the_plugin_and_no_tpu_within_seconds(site):
    started = time.monotonic()
    done = run_python(["-m", "ember", "doctor"], site, EMBER_PLATFORMS="")
    took = time.monotonic() - started
    assert "  tpu          ok            ember-plugin-tpu 0.1.0  [ember_plugin_tpu.plugin]" in (
        done.stdout
    ), done.stdout + done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  tpu ") and "priority" in line)
    assert "failed" in lines[at]
    assert (
        lines[at + 1]
        .strip()
        .startswith("BackendError: no TPU on this machine: no Google TPU chip on the PCI bus")
    )
    plugins_section = done.stdout.split("\n\n")[2]
    assert plugins_section.startswith("plugins (")
    to_install = plugins_section.partition("ember's plugins not installed:")[2]
    assert "ember-plugin-tpu" not in to_install
    assert "  reference    ok" in done.stdout
    assert took < 15, f"the doctor took {took:.1f} s"


def test_asking_for_tpu_is_an_error_with_the_reason_and_other_platforms_compute(site):
    code = "import ember.numpy as enp; print(enp.arange(3.0) * 2)"
    done = run_python(["-c", code], site, EMBER_PLATFORMS="tpu")
    assert done.returncode != 0
    assert "no TPU on this machine" in done.stderr
    done = run_python(["-c", code], site, EMBER_PLATFORMS="reference")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0. 2. 4.]"
