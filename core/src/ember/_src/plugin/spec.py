"""The descriptions plugins hand back from their hooks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ember._src.runtime.backend import Backend

# Bumped when the plugin contract changes incompatibly. A plugin declares the version it was
# written against in each PlatformSpec; a mismatch skips the plugin with an actionable message.
PLUGIN_API_VERSION = 1


@dataclass(frozen=True)
class PlatformSpec:
    """One platform a plugin provides."""

    name: str
    make_backend: Callable[[], Backend]
    aliases: tuple[str, ...] = ()
    priority: int = 0
    api_version: int = PLUGIN_API_VERSION
    description: str = ""


@dataclass(frozen=True)
class ClusterEnvironment:
    """A multi-process launch environment (used by ember.distributed.initialize)."""

    name: str
    is_present: Callable[[], bool]
    coordinator_address: Callable[[], str]
    num_processes: Callable[[], int]
    process_id: Callable[[], int]
    priority: int = 0
    extra: dict = field(default_factory=dict)
