"""Finding, loading, isolating and selecting backend plugins.

Plugins are advertised through the ``ember_plugins`` entry-point group. Nothing here runs at
``import ember``: the first call that needs a backend (``default_backend()``, ``backend(name)``)
reads the entry-point metadata, imports each plugin module, validates its hooks, collects its
platforms and registers its lowering overrides and collectives. A platform's backend (and so
its device discovery) is created only when that platform is first used.

Every plugin is isolated: an exception while importing it, validating its hooks or calling
them marks that plugin ``failed`` and keeps the real traceback for ``python -m ember doctor``;
it never propagates into ``import ember`` or into other plugins. A platform whose backend
fails when first used is skipped in favour of the next one with a ``PluginWarning`` naming the
plugin and the error (it fails late, where the user would otherwise never hear of it).

Selection follows the ``platforms`` option (env ``EMBER_PLATFORMS``): when set, only the listed
platforms are available, the first is the default, and a listed platform that is missing or
fails to initialise raises. When unset, the default is the highest-priority platform whose
backend initialises; the failures on the way are kept for the doctor.
"""

from __future__ import annotations

import sys
import threading
import traceback
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import importlib_metadata
import pluggy

from ember._src import errors
from ember._src.config import config
from ember._src.plugin import hookspecs
from ember._src.plugin.registries import CollectiveRegistry, LoweringRegistry
from ember._src.plugin.spec import PLUGIN_API_VERSION, PlatformSpec
from ember._src.runtime.backend import Backend

ENTRY_POINT_GROUP = "ember_plugins"

# Plugin statuses, as the doctor prints them.
OK = "ok"
FAILED = "failed"
BLOCKED = "blocked"
INCOMPATIBLE = "incompatible"

# Platform statuses.
NOT_INITIALISED = "not initialised"


@dataclass
class PluginReport:
    """What happened to one plugin: where it came from and whether it loaded."""

    source: PluginSource
    status: str = NOT_INITIALISED
    message: str = ""
    traceback: str = ""
    platforms: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def module(self) -> str:
        return self.source.module

    @property
    def distribution(self) -> str | None:
        return self.source.distribution

    @property
    def version(self) -> str | None:
        return self.source.version


@dataclass
class PlatformReport:
    """One platform a plugin declared, and its backend once initialised."""

    spec: PlatformSpec
    plugin: str
    status: str = NOT_INITIALISED
    message: str = ""
    traceback: str = ""
    backend: Backend | None = None

    @property
    def name(self) -> str:
        return self.spec.name


class PluginSource:
    """A plugin to load: an entry point, or (for tests and embedding) a module object.

    ``installed``: the distribution that advertises the entry point. Its name and version are
    read from its metadata only when asked for (the doctor, ``EMBER_DISABLE_PLUGINS``, an
    incompatible plugin's message): parsing the metadata of every plugin costs ~35 ms, on
    the way to every program's first computation."""

    def __init__(
        self,
        name: str,
        module: str,
        distribution: str | None = None,
        version: str | None = None,
        obj: Any = None,
        *,
        installed: Any = None,
    ):
        self.name = name
        self.module = module
        self.obj = obj
        self._distribution = distribution
        self._version = version
        self._installed = installed

    @property
    def distribution(self) -> str | None:
        if self._distribution is None and self._installed is not None:
            self._distribution = self._installed.name
        return self._distribution

    @property
    def version(self) -> str | None:
        if self._version is None and self._installed is not None:
            self._version = self._installed.version
        return self._version

    def __repr__(self) -> str:
        return f"PluginSource(name={self.name!r}, module={self.module!r})"

    def load(self) -> Any:
        if self.obj is not None:
            return self.obj
        return importlib_metadata.EntryPoint(
            name=self.name, value=self.module, group=ENTRY_POINT_GROUP
        ).load()


def discover_entry_points() -> list[PluginSource]:
    """Every plugin advertised by an installed distribution (metadata only: nothing imported)."""
    sources = []
    seen = set()
    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(ep.name)
        sources.append(PluginSource(ep.name, ep.value, installed=getattr(ep, "dist", None)))
    return sources


class PluginManager:
    """Loads plugins once, then hands out backends by platform name."""

    def __init__(self, sources: Iterable[PluginSource] | None = None):
        self._sources = None if sources is None else list(sources)
        self._lock = threading.RLock()
        self._loaded = False
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginReport] = {}
        self.platforms: dict[str, PlatformReport] = {}
        self._aliases: dict[str, str] = {}
        self.collectives = CollectiveRegistry()
        self._default: Backend | None = None

    # -- loading --------------------------------------------------------------------------------

    def load(self) -> None:
        """Import and register every plugin (idempotent; safe to call from several threads)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            sources = discover_entry_points() if self._sources is None else self._sources
            disabled = set(config.disable_plugins)
            for source in sources:
                self._load_one(source, disabled)
            self.pm.check_pending()  # every registered hookimpl has a spec (checked per plugin)
            self._loaded = True

    def _load_one(self, source: PluginSource, disabled: set[str]) -> None:
        report = PluginReport(source)
        self.plugins[source.name] = report
        if disabled and (source.name in disabled or (source.distribution or "") in disabled):
            report.status = BLOCKED
            report.message = "disabled by EMBER_DISABLE_PLUGINS"
            return
        stage = "importing"
        plugin = None
        try:
            plugin = source.load()
            stage = "registering hooks of"
            self.pm.register(plugin, name=source.name)
            self._check_hook_names(plugin, source.name)
            stage = "calling ember_platforms of"
            specs = self._call(plugin, "ember_platforms") or []
            specs = [spec for group in specs for spec in (group or [])]
            incompatible = [s for s in specs if s.api_version != PLUGIN_API_VERSION]
            if incompatible:
                self.pm.unregister(plugin)
                report.status = INCOMPATIBLE
                versions = sorted({s.api_version for s in incompatible})
                report.message = (
                    f"written for ember plugin API version {versions}, but this ember speaks "
                    f"version {PLUGIN_API_VERSION}; upgrade or downgrade "
                    f"{source.distribution or source.name} to a release built for it"
                )
                return
            stage = "calling ember_register_lowerings of"
            self._call(plugin, "ember_register_lowerings", registry=LoweringRegistry(source.name))
            stage = "calling ember_register_collectives of"
            self._call(plugin, "ember_register_collectives", registry=self.collectives)
        except Exception as exc:
            if plugin is not None and self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            report.status = FAILED
            report.message = f"{stage} plugin {source.name!r} failed: {type(exc).__name__}: {exc}"
            report.traceback = traceback.format_exc()
            return
        report.status = OK
        for spec in specs:
            self._add_platform(spec, source.name, report)

    def _check_hook_names(self, plugin: Any, name: str) -> None:
        for caller in self.pm.get_hookcallers(plugin) or []:
            if not caller.has_spec():
                raise errors.PluginError(
                    f"hook {caller.name!r} is not part of ember's plugin contract (misspelled?); "
                    f"known hooks: {', '.join(sorted(_hook_names()))}"
                )

    def _call(self, plugin: Any, hook_name: str, **kwargs: Any) -> list[Any] | None:
        """Call one plugin's implementation of a hook (not the others')."""
        caller = getattr(self.pm.hook, hook_name)
        impls = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
        if not impls:
            return None
        return [impl.function(**kwargs) for impl in impls]

    def _add_platform(self, spec: PlatformSpec, plugin: str, report: PluginReport) -> None:
        if not isinstance(spec, PlatformSpec):
            report.status = FAILED
            report.message = f"ember_platforms returned {spec!r}, not an ember.extend.PlatformSpec"
            return
        if spec.name in self.platforms:
            other = self.platforms[spec.name].plugin
            report.message = f"platform {spec.name!r} is also provided by plugin {other!r}; kept it"
            return
        self.platforms[spec.name] = PlatformReport(spec, plugin)
        report.platforms.append(spec.name)
        for alias in (spec.name, *spec.aliases):
            self._aliases.setdefault(alias, spec.name)

    # -- selection ------------------------------------------------------------------------------

    def selected(self) -> list[str]:
        """Platform names in the order they are tried for the default backend."""
        self.load()
        wanted = config.platforms
        if wanted:
            names = []
            for name in wanted:
                canonical = self._aliases.get(name)
                if canonical is None:
                    raise errors.UnknownPlatformError(self._unknown_message(name, listed=True))
                names.append(canonical)
            return names
        by_priority = sorted(self.platforms.values(), key=lambda p: -p.spec.priority)
        return [p.name for p in by_priority]

    def backend(self, name: str | None = None) -> Backend:
        """The backend of platform ``name`` (or an alias), initialising it on first use."""
        if name is None:
            return self.default_backend()
        self.load()
        canonical = self._aliases.get(name)
        if canonical is None:
            raise errors.UnknownPlatformError(self._unknown_message(name, listed=False))
        if config.platforms and canonical not in self.selected():
            raise errors.UnknownPlatformError(
                f"platform {name!r} is installed but not selected: EMBER_PLATFORMS="
                f"{','.join(config.platforms)}{errors.where()}"
            )
        return self._initialise(self.platforms[canonical], strict=True)

    def topology_backend(self, platform: str, topology_name: str, **options: Any) -> Backend:
        """The compile-only backend of a named topology of ``platform`` (its plugin's
        ``PlatformSpec.make_topology``). Needs neither the hardware nor the platform selected
        (``EMBER_PLATFORMS``): nothing runs on it."""
        self.load()
        canonical = self._aliases.get(platform)
        if canonical is None:
            raise errors.UnknownPlatformError(self._unknown_message(platform, listed=False))
        spec = self.platforms[canonical].spec
        if spec.make_topology is None:
            raise NotImplementedError(
                f"platform {canonical!r} has no named topologies: its plugin cannot compile "
                f"for devices this machine does not have"
            )
        return spec.make_topology(topology_name, **options)

    def default_backend(self) -> Backend:
        if self._default is not None:
            return self._default
        with self._lock:
            if self._default is not None:
                return self._default
            strict = bool(config.platforms)
            for name in self.selected():
                backend = self._initialise(self.platforms[name], strict=strict)
                if backend is not None:
                    self._default = backend
                    return backend
            raise errors.BackendError(self._no_backend_message())

    def _initialise(
        self, platform: PlatformReport, *, strict: bool, warn: bool = True
    ) -> Backend | None:
        if platform.backend is not None:
            return platform.backend
        if platform.status == FAILED and not strict:
            return None
        with self._lock:
            if platform.backend is not None:
                return platform.backend
            if platform.status != FAILED:
                try:
                    backend = platform.spec.make_backend()
                    if not isinstance(backend, Backend):
                        raise errors.PluginError(
                            f"make_backend returned {type(backend).__name__}, "
                            f"not an ember.extend.Backend"
                        )
                    if not backend.devices():
                        raise errors.BackendError(f"platform {platform.name!r} found no devices")
                except Exception as exc:
                    platform.status = FAILED
                    platform.message = f"{type(exc).__name__}: {exc}"
                    platform.traceback = traceback.format_exc()
                    if warn and not strict:
                        _warn_skipped(platform)
                else:
                    platform.status = OK
                    platform.backend = backend
                    return backend
            if strict:
                raise errors.BackendError(
                    f"platform {platform.name!r} (plugin {platform.plugin!r}) failed to "
                    f"initialise: {platform.message}{errors.where()}\n"
                    f"run `python -m ember doctor` for the full traceback"
                )
            return None

    def started_platforms(self) -> list[str]:
        """The platforms whose backend has been created in this process."""
        return [p.name for p in self.platforms.values() if p.backend is not None]

    def distributed_runtime(self) -> Any:
        """The coordination engine some plugin provides (``ember_distributed_runtime``), or
        None when no installed plugin has one."""
        self.load()
        return self.pm.hook.ember_distributed_runtime()

    def initialise_all(self) -> None:
        """Try every selected platform (for the doctor); failures are recorded, not raised."""
        try:
            names = self.selected()
        except errors.UnknownPlatformError:
            names = list(self.platforms)
        for name in names:
            self._initialise(self.platforms[name], strict=False, warn=False)

    # -- messages -------------------------------------------------------------------------------

    def _unknown_message(self, name: str, *, listed: bool) -> str:
        available = ", ".join(sorted(self._aliases)) or "none"
        origin = f" (from EMBER_PLATFORMS={','.join(config.platforms)})" if listed else ""
        hint = self._problems_hint()
        return (
            f"unknown platform {name!r}{origin}; available platforms: {available}{hint}"
            f"{errors.where()}"
        )

    def _no_backend_message(self) -> str:
        lines = ["no ember backend could be initialised" + errors.where()]
        if not self.platforms:
            lines.append(
                "no backend plugin is installed: `pip install ember-plugin-cpu` gives XLA's CPU "
                "backend"
            )
        for p in self.platforms.values():
            if p.status == FAILED:
                lines.append(f"  platform {p.name!r}: {p.message}")
        lines.append(self._problems_hint().strip() or "run `python -m ember doctor` for details")
        return "\n".join(lines)

    def _problems_hint(self) -> str:
        bad = [p for p in self.plugins.values() if p.status in (FAILED, INCOMPATIBLE, BLOCKED)]
        if not bad:
            return ""
        parts = [f"{p.name} ({p.status})" for p in bad]
        return f"; plugins not loaded: {', '.join(parts)}; see `python -m ember doctor`"


def _warn_skipped(platform: PlatformReport) -> None:
    # Warned once, when the failure happens: later lookups skip the failed platform silently.
    warnings.warn(
        f"platform {platform.name!r} (plugin {platform.plugin!r}) failed to initialise and was "
        f"skipped: {platform.message}; `python -m ember doctor` shows the traceback",
        errors.PluginWarning,
        stacklevel=_user_stacklevel(),
    )


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's frame (ember's own are skipped)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and errors.is_internal_file(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _hook_names() -> list[str]:
    return [name for name in dir(hookspecs) if name.startswith("ember_")]


# --------------------------------------------------------------------------------------------
# The process-wide manager

_manager = PluginManager()


def _refuse_another_default(value: Any) -> None:
    """The default backend is chosen once: a ``platforms`` value naming another first platform
    after that would be silently ignored, so it is refused."""
    started = _manager._default
    if started is None or not value:
        return
    first = _manager._aliases.get(value[0], value[0])
    if first != started.platform:
        raise errors.BackendError(
            f"platforms={','.join(value)!r} cannot take effect: the default backend already "
            f"started as {started.platform!r}. Set it before the first computation "
            f"(ember.config.update('platforms', ...) at the top of the program) or in the "
            f"environment (EMBER_PLATFORMS={','.join(value)})"
        )


config.define(
    "platforms",
    (),
    help="Comma-separated platforms to use, the first being the default; listed ones must load.",
    validate=_refuse_another_default,
)


def load_plugins() -> None:
    """Import every installed plugin (once); what config calls for an option it does not know."""
    _manager.load()


def default_backend() -> Backend:
    backend = _manager._default
    return backend if backend is not None else _manager.default_backend()


def backend(name: str | None = None) -> Backend:
    return _manager.backend(name)


def topology_backend(platform: str, topology_name: str, **options: Any) -> Backend:
    return manager().topology_backend(platform, topology_name, **options)


def manager() -> PluginManager:
    return _manager


def collective_registry() -> CollectiveRegistry:
    _manager.load()
    return _manager.collectives


def reset(sources: Iterable[PluginSource] | None = None) -> PluginManager:
    """Forget every loaded plugin and start again (tests; after changing EMBER_PLATFORMS)."""
    global _manager
    _manager = PluginManager(sources)
    return _manager
