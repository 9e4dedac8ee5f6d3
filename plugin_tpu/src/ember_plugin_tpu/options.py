"""The TPU platform's option: extra PJRT client options for libtpu, read when the backend
starts.

``tpu_client_options`` (``ember.config.update`` or ``EMBER_TPU_CLIENT_OPTIONS``) is text
``"key:value;key:value"`` as JAX's ``jax_pjrt_client_create_options`` (honoured through
``JAX_PJRT_CLIENT_CREATE_OPTIONS`` when ember's is unset), or a dict. A malformed value is a
``ValueError`` naming the option; a key libtpu does not know is refused by libtpu when the
client is created, with its own message.
"""

from __future__ import annotations

import os
from typing import Any

from ember import config
from ember.extend import define_config_option

CLIENT_OPTIONS = "tpu_client_options"

# JAX's variable for the same setting (read only when ember's is unset).
JAX_VARIABLE = "JAX_PJRT_CLIENT_CREATE_OPTIONS"


def parse_client_options(value: Any, source: str = CLIENT_OPTIONS) -> dict[str, Any]:
    """``"key:value;key:value"`` (or a dict with str keys) as a dict; empty gives {}."""
    if isinstance(value, dict):
        if not all(isinstance(k, str) and k for k in value):
            raise ValueError(f"{source}={value!r}: option names must be non-empty text")
        return dict(value)
    if not isinstance(value, str):
        raise ValueError(f"{source}={value!r}: expected text 'key:value;key:value' or a dict")
    options = {}
    for item in filter(None, (part.strip() for part in value.split(";"))):
        key, colon, text = item.partition(":")
        if not colon or not key.strip() or ":" in text:
            raise ValueError(
                f"{source}={value!r}: {item!r} is not 'key:value' (options are separated by "
                f"';', each with one ':')"
            )
        options[key.strip()] = text.strip()
    return options


def client_options() -> dict[str, Any]:
    """libtpu's client options from ember's config, else from JAX's variable."""
    if config.is_set(CLIENT_OPTIONS) and config.read(CLIENT_OPTIONS) not in ("", {}):
        return parse_client_options(config.read(CLIENT_OPTIONS))
    raw = os.environ.get(JAX_VARIABLE)
    return parse_client_options(raw, JAX_VARIABLE) if raw else {}


def define_options() -> None:
    """Declare the option (idempotent). An environment value is kept as text and checked
    when the backend starts, so a typo fails the platform with its reason, not the plugin."""
    define_config_option(
        CLIENT_OPTIONS,
        "",
        help="Extra PJRT client options for libtpu, 'key:value;key:value' (unset: "
        "JAX_PJRT_CLIENT_CREATE_OPTIONS is honoured).",
        parse=str,
        validate=parse_client_options,
    )


define_options()
