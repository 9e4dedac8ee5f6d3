"""The TPU platform's option: libtpu's client options, as text or a dict, from ember's
config or JAX's variable."""

from __future__ import annotations

import pytest
from ember_plugin_tpu import options

from ember import config


def test_text_options_become_a_dict():
    assert options.parse_client_options("a:1; b:two") == {"a": "1", "b": "two"}
    assert options.parse_client_options("") == {}
    assert options.parse_client_options({"k": 3}) == {"k": 3}


@pytest.mark.parametrize("bad", ["novalue", "a:1:2", ":x", 7, {"": 1}])
def test_malformed_options_name_the_option(bad):
    with pytest.raises(ValueError, match=r"^tpu_client_options="):
        options.parse_client_options(bad)


def test_the_config_option_is_checked_when_set():
    with pytest.raises(ValueError, match="is not 'key:value'"):
        config.update("tpu_client_options", "oops")


def test_embers_option_wins_over_jaxs_variable(monkeypatch):
    monkeypatch.setenv("JAX_PJRT_CLIENT_CREATE_OPTIONS", "ml_framework_name:JAX")
    assert options.client_options() == {"ml_framework_name": "JAX"}
    with config.option("tpu_client_options", "ml_framework_name:ember"):
        assert options.client_options() == {"ml_framework_name": "ember"}
    monkeypatch.setenv("JAX_PJRT_CLIENT_CREATE_OPTIONS", "broken")
    with pytest.raises(ValueError, match=r"^JAX_PJRT_CLIENT_CREATE_OPTIONS='broken'"):
        options.client_options()
