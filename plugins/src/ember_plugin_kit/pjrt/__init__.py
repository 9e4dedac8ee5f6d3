"""The bridge from ember to any PJRT client through jaxlib (``ember-plugin-kit[pjrt]``).

A backend plugin builds a client with ``make_cpu_client`` or ``make_plugin_client`` and wraps
it in ``PjrtBackend``. All jaxlib calls live in the private ``_jaxlib`` module.
"""

from ember_plugin_kit.pjrt._jaxlib import (
    JAXLIB_VERSION as JAXLIB_VERSION,
    gloo_collectives as gloo_collectives,
    make_cpu_client as make_cpu_client,
    make_plugin_client as make_plugin_client,
)
from ember_plugin_kit.pjrt.backend import (
    PjrtBackend as PjrtBackend,
    PjrtDevice as PjrtDevice,
    PjrtExecutable as PjrtExecutable,
    describe_compile_error as describe_compile_error,
)
from ember_plugin_kit.pjrt.coordination import (
    CoordinationClient as CoordinationClient,
    XlaCoordination as XlaCoordination,
)

__all__ = [
    "JAXLIB_VERSION",
    "CoordinationClient",
    "XlaCoordination",
    "PjrtBackend",
    "PjrtDevice",
    "PjrtExecutable",
    "describe_compile_error",
    "gloo_collectives",
    "make_cpu_client",
    "make_plugin_client",
]
