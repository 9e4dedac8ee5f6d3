"""Plugins for the plugin-manager tests, installed through a real dist-info on sys.path.

Each module-level namespace below is one plugin; the dist-info's entry_points.txt names them.
"""

from __future__ import annotations

from types import SimpleNamespace

from ember._src.reference.backend import ReferenceBackend
from ember.extend import PlatformSpec, hookimpl


class FakeBackend(ReferenceBackend):
    platform = "fake"


def _platforms(name, make_backend, priority, api_version=1):
    @hookimpl
    def ember_platforms():
        return [
            PlatformSpec(
                name=name,
                make_backend=make_backend,
                aliases=(f"{name}-alias",),
                priority=priority,
                api_version=api_version,
            )
        ]

    return ember_platforms


def _fail_init():
    raise OSError("no such accelerator attached (fake)")


lowerings_seen = []


@hookimpl
def _register_lowerings(registry):
    lowerings_seen.append(registry.plugin_name)


good = SimpleNamespace(
    ember_platforms=_platforms("fake", FakeBackend, priority=1000),
    ember_register_lowerings=_register_lowerings,
)
failing_init = SimpleNamespace(ember_platforms=_platforms("fakefail", _fail_init, priority=2000))
old_api = SimpleNamespace(ember_platforms=_platforms("fakeold", FakeBackend, 0, api_version=0))


@hookimpl
def _misspelled():
    return []


misspelled = SimpleNamespace(ember_platfroms=_misspelled)
