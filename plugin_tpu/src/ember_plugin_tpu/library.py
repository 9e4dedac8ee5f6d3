"""Finding libtpu (the TPU PJRT plugin) and preparing the environment it reads on load."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os

# The libtpu builds that speak the PJRT C API of jaxlib 0.10.2.
SUPPORTED_VERSION_PREFIX = "0.0.42"
DISTRIBUTION = "libtpu"
INSTALL_HINT = "pip install 'libtpu==0.0.42.*' (or reinstall ember-plugin-tpu)"

# A libtpu.so elsewhere (a custom build), as JAX reads it.
LIBRARY_PATH_VARIABLE = "TPU_LIBRARY_PATH"

# libtpu asks the cloud's metadata server for the slice's shape and workers when it loads,
# retrying for minutes where there is none; this variable skips the question.
SKIP_METADATA_VARIABLE = "TPU_SKIP_MDS_QUERY"


class MissingLibtpuError(Exception):
    """libtpu is not installed, or not a version this plugin pairs with; the message says
    what to do."""


def library_path() -> str:
    """The path of ``libtpu.so``: ``$TPU_LIBRARY_PATH`` or the installed ``libtpu`` wheel's.
    Raises ``MissingLibtpuError`` when there is none, or the wheel's version does not pair
    with jaxlib 0.10.2."""
    override = os.environ.get(LIBRARY_PATH_VARIABLE)
    if override:
        if not os.path.isfile(override):
            raise MissingLibtpuError(
                f"{LIBRARY_PATH_VARIABLE}={override} is not a file; unset it to use the "
                f"libtpu wheel"
            )
        return override
    spec = importlib.util.find_spec(DISTRIBUTION)
    if spec is None or not spec.submodule_search_locations:
        raise MissingLibtpuError(f"libtpu is not installed: {INSTALL_HINT}")
    version = installed_version()
    if version is not None and not version.startswith(SUPPORTED_VERSION_PREFIX):
        raise MissingLibtpuError(
            f"libtpu {version} is installed, but jaxlib 0.10.2 pairs with libtpu "
            f"{SUPPORTED_VERSION_PREFIX}.*: {INSTALL_HINT}"
        )
    path = os.path.join(spec.submodule_search_locations[0], "libtpu.so")
    if not os.path.isfile(path):
        raise MissingLibtpuError(f"the libtpu wheel has no libtpu.so ({path}): {INSTALL_HINT}")
    return path


def installed_version() -> str | None:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def prepare_environment(on_a_tpu_vm: bool) -> None:
    """Set what libtpu reads when it loads: off a TPU VM, skip the metadata server (there is
    none to answer). A value the user set is kept."""
    if not on_a_tpu_vm:
        os.environ.setdefault(SKIP_METADATA_VARIABLE, "1")
