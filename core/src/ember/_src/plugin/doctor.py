"""``python -m ember``: the command line (``doctor``, ``config``).

``doctor`` prints each plugin (entry point, distribution, version, status, the real error for
a failed one), each platform with its devices, and the versions of the libraries ember builds
on. It initialises every selected platform, so a broken backend shows its traceback here
instead of at the user's first computation, and it exits with status 1 when anything is
wrong (a plugin that failed or is incompatible, a platform that failed to start, a platform
in ``EMBER_PLATFORMS`` that no plugin provides). ``--verbose`` adds full tracebacks, every
config option's value and where each library is loaded from.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform as _platform
import sys

import importlib_metadata

from ember._src import errors
from ember._src.config import config
from ember._src.plugin import manager as plugin_manager
from ember._src.plugin.manager import FAILED, INCOMPATIBLE, OK, PluginManager
from ember._src.runtime import multiprocess

# Distribution name -> the module it installs (for --verbose's paths).
KEY_LIBRARIES = {
    "ember": "ember",
    "numpy": "numpy",
    "pluggy": "pluggy",
    "importlib-metadata": "importlib_metadata",
    "jaxlib": "jaxlib",
    "ml_dtypes": "ml_dtypes",
}

# ember's own backend plugins: distribution -> what it brings. The doctor names those not
# installed, so a user on a GPU or TPU machine learns which one to add.
FIRST_PARTY_PLUGINS = {
    "ember-plugin-cpu": "XLA's CPU backend (platform cpu)",
    "ember-plugin-cuda": "NVIDIA GPUs (platform cuda; pip install 'ember-plugin-cuda[cuda12]')",
    "ember-plugin-rocm": "AMD GPUs (platform rocm)",
    "ember-plugin-tpu": "Google TPUs, and compiling for TPU slices anywhere (platform tpu)",
}


def library_versions() -> dict[str, str]:
    versions = {"python": _platform.python_version()}
    for name in KEY_LIBRARIES:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def library_paths() -> dict[str, str]:
    """Where each library would be imported from (found without importing it)."""
    paths = {"python": sys.executable}
    for name, module in KEY_LIBRARIES.items():
        paths[name] = _module_path(module)
    return paths


def _module_path(module: str) -> str:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    return (spec.origin or "?") if spec is not None else "not found"


def problems(manager: PluginManager) -> list[str]:
    """What is wrong with this installation, one line each (empty when all is well)."""
    found = [
        f"plugin {p.name!r} {p.status}: {p.message}"
        for p in manager.plugins.values()
        if p.status in (FAILED, INCOMPATIBLE)
    ]
    found += [
        f"platform {p.name!r} failed to initialise: {p.message}"
        for p in manager.platforms.values()
        if p.status == FAILED
    ]
    try:
        manager.selected()
    except errors.UnknownPlatformError as exc:
        found.append(str(exc))
    return found


def report(manager: PluginManager | None = None, *, verbose: bool = False) -> str:
    manager = manager or plugin_manager.manager()
    manager.load()
    manager.initialise_all()
    lines = ["ember doctor", ""]
    lines += _libraries_section(verbose)
    lines += _plugins_section(manager, verbose)
    lines += _platforms_section(manager, verbose)
    lines += _distributed_section(manager)
    if verbose:
        lines += _config_section()
    found = problems(manager)
    lines.append("")
    if found:
        lines.append(f"problems ({len(found)}):")
        lines += [f"  {problem}" for problem in found]
    else:
        lines.append("no problems found")
    if not verbose:
        lines.append("(`python -m ember doctor --verbose` adds full tracebacks, config, paths)")
    return "\n".join(lines)


def _libraries_section(verbose: bool) -> list[str]:
    lines = ["libraries:"]
    paths = library_paths() if verbose else {}
    for name, version in library_versions().items():
        where = f"  {paths[name]}" if verbose else ""
        lines.append(f"  {name:<20} {version:<14}{where}".rstrip())
    return [*lines, ""]


def _plugins_section(manager: PluginManager, verbose: bool) -> list[str]:
    lines = [f"plugins (entry-point group {plugin_manager.ENTRY_POINT_GROUP!r}):"]
    if not manager.plugins:
        lines.append("  none installed; `pip install ember-plugin-cpu` adds XLA's CPU backend")
    for p in manager.plugins.values():
        origin = f"{p.distribution} {p.version}" if p.distribution else "(not from a distribution)"
        lines.append(f"  {p.name:<12} {p.status:<13} {origin}  [{p.module}]")
        if verbose:
            lines.append(f"      from {_module_path(p.module.partition(':')[0])}")
        if p.message:
            lines.append(f"      {p.message}")
        if p.status == FAILED and p.traceback:
            lines.extend("      | " + line for line in _tail(p.traceback, verbose))
    installed = {p.distribution for p in manager.plugins.values()}
    missing = [name for name in FIRST_PARTY_PLUGINS if name not in installed]
    if missing:
        lines.append("  ember's plugins not installed:")
        lines += [f"    {name:<18} {FIRST_PARTY_PLUGINS[name]}" for name in missing]
    return [*lines, ""]


def _platforms_section(manager: PluginManager, verbose: bool) -> list[str]:
    selection = ",".join(config.platforms) or "(unset: highest priority wins)"
    lines = [f"platforms (EMBER_PLATFORMS={selection}):"]
    default = manager._default.platform if manager._default is not None else None
    try:
        if default is None:
            default = manager.default_backend().platform
    except Exception as exc:  # the doctor reports, it never raises
        lines.append(f"  no default backend: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    for p in manager.platforms.values():
        marker = " (default)" if p.name == default else ""
        aliases = f" aliases {', '.join(p.spec.aliases)}" if p.spec.aliases else ""
        lines.append(
            f"  {p.name:<12} {p.status:<16} plugin {p.plugin}, priority {p.spec.priority}"
            f"{aliases}{marker}"
        )
        if verbose and p.spec.description:
            lines.append(f"      {p.spec.description}")
        if p.status == OK and p.backend is not None:
            devices = p.backend.devices()
            kinds = sorted({d.device_kind for d in devices})
            lines.append(f"      {len(devices)} device(s): {', '.join(kinds)}; {devices}")
            for lib, version in p.backend.versions().items():
                lines.append(f"      {lib} {version}")
        elif p.status == FAILED:
            lines.append(f"      {p.message}")
            lines.extend("      | " + line for line in _tail(p.traceback, verbose))
    return lines


def _distributed_section(manager: PluginManager) -> list[str]:
    """This process's multi-process job, or the cluster environment it would join."""
    lines = ["", "distributed:"]
    job = multiprocess.current_job()
    if job is not None:
        lines.append(
            f"  process {job.process_id} of {job.num_processes}, coordinator "
            f"{job.coordinator_address} (found from: {job.cluster}); heartbeat timeout "
            f"{job.heartbeat_timeout:g} s, collective timeout "
            f"{config.read('collective_timeout_seconds'):g} s"
        )
        try:
            devices = manager.default_backend().devices()
        except errors.EmberError:
            devices = []
        per_process: dict[int, int] = {}
        for device in devices:
            per_process[device.process_index] = per_process.get(device.process_index, 0) + 1
        if per_process:
            counts = ", ".join(f"{p}: {n}" for p, n in sorted(per_process.items()))
            lines.append(f"  devices per process: {counts}")
        return lines
    lines.append("  not initialised: this process runs alone")
    runtime = "none installed plugin provides one"
    try:
        if manager.distributed_runtime() is not None:
            runtime = "available"
    except Exception as exc:  # a broken plugin's hook: shown, not raised
        runtime = f"failed: {type(exc).__name__}: {exc}"
    lines.append(f"  distributed runtime: {runtime}")
    present = []
    for found in manager.pm.hook.ember_cluster_environments():
        for environment in found or []:
            try:
                if environment.is_present():
                    present.append(environment.name)
            except Exception as exc:
                present.append(f"{environment.name} (failed: {exc})")
    if present:
        lines.append(f"  cluster environment detected: {', '.join(present)}")
    return lines


def _config_section() -> list[str]:
    lines = ["", "config (ember.config.update(name, value) or the environment variable):"]
    for option in config.describe():
        raw = os.environ.get(option.env_var)
        source = f"from {option.env_var}={raw}" if raw is not None else "default"
        aliases = f"; also {', '.join(option.aliases)}" if option.aliases else ""
        lines.append(f"  {option.name:<24} {config.read(option.name)!r:<10} ({source}{aliases})")
    return lines


def _tail(text: str, verbose: bool, keep: int = 12) -> list[str]:
    lines = text.rstrip().splitlines()
    return lines if verbose or len(lines) <= keep else ["...", *lines[-keep:]]


def config_listing() -> str:
    plugin_manager.manager().load()  # plugins define their own options when loaded
    lines = []
    for option in config.describe():
        aliases = f" (also {', '.join(option.aliases)})" if option.aliases else ""
        lines.append(f"{option.name} = {config.read(option.name)!r}{aliases}")
        lines.append(f"    {option.env_var}: {option.help}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    # The package's version: `ember` itself is imported by the time its submodules run.
    version = getattr(sys.modules.get("ember"), "__version__", "(unknown version)")
    cli = argparse.ArgumentParser(
        prog="python -m ember",
        description="ember's command line: diagnose the installation and list its options. "
        "`python -m ember launch -n N script.py` runs N processes of a program on this "
        "machine (see `python -m ember launch --help`); `python -m ember export inspect FILE` "
        "describes an exported program.",
        epilog="Environment: EMBER_PLATFORMS=cpu,reference chooses platforms (the first is "
        "the default), EMBER_DISABLE_PLUGINS=name keeps a plugin from loading, and every "
        "option NAME can be set with EMBER_<NAME> (see `python -m ember config`).",
    )
    cli.add_argument("--version", action="version", version=f"ember {version}")
    commands = cli.add_subparsers(dest="command", metavar="COMMAND")
    doctor = commands.add_parser(
        "doctor",
        help="what is installed and working: plugins, platforms, devices, libraries",
        description="Load every plugin, start every selected platform and report what "
        "happened. Exits with status 1 when a plugin failed or is incompatible, a platform "
        "failed to start, or EMBER_PLATFORMS names a platform no plugin provides.",
    )
    doctor.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="full tracebacks, every config option's value and each library's path",
    )
    commands.add_parser(
        "config",
        help="every config option: its value, environment variable and meaning",
        description="List every option (the core's and the installed plugins').",
    )
    return cli


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    if args.command is None:
        cli.print_help()
        return 2
    if args.command == "config":
        print(config_listing())
        return 0
    print(report(verbose=args.verbose))
    return 1 if problems(plugin_manager.manager()) else 0
