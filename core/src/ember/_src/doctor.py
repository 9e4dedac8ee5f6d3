"""``python -m ember doctor``: what is installed, what loaded, and why not.

Prints each plugin (entry point, distribution, version, status, the real error for a failed
one), each platform with its devices, and the versions of the libraries ember builds on. It
initialises every selected platform, so a broken backend shows its traceback here instead of
at the user's first computation.
"""

from __future__ import annotations

import platform as _platform
import sys

import importlib_metadata

from ember._src.config import config
from ember._src.plugin import manager as plugin_manager
from ember._src.plugin.manager import FAILED, OK, PluginManager

KEY_LIBRARIES = ("ember", "numpy", "pluggy", "importlib-metadata", "jaxlib", "ml_dtypes")


def library_versions() -> dict[str, str]:
    versions = {"python": _platform.python_version()}
    for name in KEY_LIBRARIES:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def report(manager: PluginManager | None = None, *, verbose: bool = False) -> str:
    manager = manager or plugin_manager.manager()
    manager.load()
    manager.initialise_all()
    lines = ["ember doctor", ""]
    lines.append("libraries:")
    for name, version in library_versions().items():
        lines.append(f"  {name:<20} {version}")
    lines.append("")
    lines.append(f"plugins (entry-point group {plugin_manager.ENTRY_POINT_GROUP!r}):")
    if not manager.plugins:
        lines.append("  none installed; `pip install ember-plugin-cpu` adds XLA's CPU backend")
    for p in manager.plugins.values():
        origin = f"{p.distribution} {p.version}" if p.distribution else "(not from a distribution)"
        lines.append(f"  {p.name:<12} {p.status:<13} {origin}  [{p.module}]")
        if p.message:
            lines.append(f"      {p.message}")
        if p.status == FAILED and p.traceback:
            lines.extend("      | " + line for line in _tail(p.traceback, verbose))
    lines.append("")
    selection = ",".join(config.platforms) or "(unset: highest priority wins)"
    lines.append(f"platforms (EMBER_PLATFORMS={selection}):")
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
        if p.status == OK and p.backend is not None:
            devices = p.backend.devices()
            kinds = sorted({d.device_kind for d in devices})
            lines.append(f"      {len(devices)} device(s): {', '.join(kinds)}; {devices}")
            for lib, version in p.backend.versions().items():
                lines.append(f"      {lib} {version}")
        elif p.status == FAILED:
            lines.append(f"      {p.message}")
            lines.extend("      | " + line for line in _tail(p.traceback, verbose))
    return "\n".join(lines)


def _tail(text: str, verbose: bool, keep: int = 12) -> list[str]:
    lines = text.rstrip().splitlines()
    return lines if verbose or len(lines) <= keep else ["...", *lines[-keep:]]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m ember doctor [--verbose]"
    if not argv or argv[0] != "doctor" or any(a not in ("--verbose", "-v") for a in argv[1:]):
        print(usage, file=sys.stderr)
        return 2
    print(report(verbose=len(argv) > 1))
    manager = plugin_manager.manager()
    broken = [p for p in manager.plugins.values() if p.status == FAILED]
    return 1 if broken else 0
