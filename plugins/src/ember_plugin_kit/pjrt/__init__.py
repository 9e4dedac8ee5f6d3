"""The bridge from ember to any PJRT client through jaxlib (``ember-plugin-kit[pjrt]``).

A backend plugin builds a client with ``make_cpu_client`` or ``make_plugin_client`` and wraps
it in ``PjrtBackend``. All jaxlib calls live in the private ``_jaxlib`` module.

The backend's names are imported on first use: they import ember itself, which the process
that hosts a job's coordination service (``coordinator``) does not need and should not wait
for.
"""

import importlib as _importlib

from ember_plugin_kit.pjrt._jaxlib import (
    JAXLIB_VERSION as JAXLIB_VERSION,
    XlaRuntimeError as XlaRuntimeError,
    gloo_collectives as gloo_collectives,
    initialize_lapack as initialize_lapack,
    lapack_enum_values as lapack_enum_values,
    make_cpu_client as make_cpu_client,
    make_plugin_client as make_plugin_client,
    register_lapack_handlers as register_lapack_handlers,
    register_plugin_extension as register_plugin_extension,
)
from ember_plugin_kit.pjrt.coordination import (
    CoordinationClient as CoordinationClient,
    XlaCoordination as XlaCoordination,
)

__all__ = [
    "JAXLIB_VERSION",
    "CoordinationClient",
    "XlaCoordination",
    "XlaRuntimeError",
    "PjrtBackend",
    "PjrtDevice",
    "PjrtExecutable",
    "describe_compile_error",
    "gloo_collectives",
    "initialize_lapack",
    "lapack_enum_values",
    "make_cpu_client",
    "make_plugin_client",
    "register_lapack_handlers",
    "register_plugin_extension",
]

_FROM_BACKEND = frozenset({"PjrtBackend", "PjrtDevice", "PjrtExecutable", "describe_compile_error"})


def __getattr__(name: str):
    if name in _FROM_BACKEND:
        return getattr(_importlib.import_module("ember_plugin_kit.pjrt.backend"), name)
    raise AttributeError(f"module 'ember_plugin_kit.pjrt' has no attribute {name!r}")
