"""The bridge from ember to any PJRT client through jaxlib (``ember-plugin-kit[pjrt]``).

A backend plugin builds a client with ``make_cpu_client`` or ``make_plugin_client`` and wraps
it in ``PjrtBackend``. All jaxlib calls live in the private ``_jaxlib`` module.

Every name is imported on first use. The process that hosts a job's coordination service
(``python -m ember_plugin_kit.pjrt.coordinator``) runs this module first: it opens its
registration desk before loading jaxlib, and never loads ember (the backend's names import
it), so that the job's processes wait for it as little as possible.
"""

import importlib as _importlib

# The module each public name comes from.
_HOME = {
    **dict.fromkeys(
        (
            "JAXLIB_VERSION",
            "XlaRuntimeError",
            "gloo_collectives",
            "initialize_lapack",
            "lapack_enum_values",
            "make_cpu_client",
            "make_plugin_client",
            "register_lapack_handlers",
            "register_plugin_extension",
        ),
        "_jaxlib",
    ),
    "CoordinationClient": "coordination",
    "XlaCoordination": "coordination",
    "PjrtBackend": "backend",
    "PjrtDevice": "backend",
    "PjrtExecutable": "backend",
    "describe_compile_error": "backend",
}


__all__ = sorted(_HOME)


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ember_plugin_kit.pjrt' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
