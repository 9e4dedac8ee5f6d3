"""A GPU platform's memory options, read when its backend starts, and the PJRT client options
they become: ``<platform>_visible_devices``, ``<platform>_allocator``,
``<platform>_memory_fraction`` and ``<platform>_preallocate``.

Each option is an ember config option (``ember.config.update(name, value)`` or the
environment variable ``EMBER_<NAME>``). When one is not set, the variable a JAX program sets
for the same thing is honoured, so ported programs keep their memory settings. Values are
checked when set through ``config.update`` and again when the backend starts (values from
the environment arrive as text and are checked there), and a bad one is a ``ValueError``
naming the option and the value. XLA reads them once, when the client is created: a change
after the backend started is a ``BackendError``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from ember import config
from ember.errors import BackendError
from ember.extend import define_config_option

# JAX's environment variables for the same settings (read only when ember's are unset), by
# the option's suffix. XLA_CLIENT_MEM_FRACTION is JAX's newer name and is read first.
JAX_VARIABLES = {
    "allocator": ("XLA_PYTHON_CLIENT_ALLOCATOR",),
    "memory_fraction": ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"),
    "preallocate": ("XLA_PYTHON_CLIENT_PREALLOCATE",),
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def visible_devices(value: Any, source: str) -> tuple[int, ...] | None:
    """The GPU ordinals a process uses, or None for all of them. Accepts a sequence of ints
    or text such as ``"0,2"``; empty means all."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not parts:
            return None
        try:
            ordinals = [int(p) for p in parts]
        except ValueError:
            raise ValueError(
                f"{source}={value!r}: expected GPU ordinals separated by commas, e.g. '0,1'"
            ) from None
    elif isinstance(value, Sequence):
        if not value:
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ValueError(f"{source}={value!r}: expected a list of int GPU ordinals")
        ordinals = list(value)
    else:
        raise ValueError(f"{source}={value!r}: expected a list of GPU ordinals or text '0,1'")
    if any(o < 0 for o in ordinals):
        raise ValueError(f"{source}={value!r}: a GPU ordinal cannot be negative")
    if len(set(ordinals)) != len(ordinals):
        raise ValueError(f"{source}={value!r}: a GPU is listed more than once")
    return tuple(ordinals)


def allocator(value: Any, source: str, choices: Sequence[str]) -> str:
    text = value.strip().lower() if isinstance(value, str) else value
    if text not in choices:
        raise ValueError(f"{source}={value!r}: the allocator must be one of {', '.join(choices)}")
    return text


def memory_fraction(value: Any, source: str) -> float:
    """The share of each GPU's memory XLA's allocator may use, in (0, 1]."""
    try:
        fraction = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        fraction = math.nan
    if not 0 < fraction <= 1:  # also refuses nan
        raise ValueError(f"{source}={value!r}: the memory fraction must be in (0, 1]")
    return fraction


def preallocate(value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{source}={value!r}: expected true or false")


class GpuOptions:
    """The four options of GPU platform ``platform`` (e.g. ``"cuda"``, ``"rocm"``).

    ``display_name``: how messages name the platform's backend ("CUDA", "ROCm").
    ``allocators``: the allocator names XLA's plugin for this platform accepts; the first is
    used when nothing is set. ``visibility_variable``: the vendor's variable that decides which
    GPUs the driver shows the process (``CUDA_VISIBLE_DEVICES``), named when an ordinal is out
    of range. ``allocator_help``: the allocator option's help text.
    """

    def __init__(
        self,
        platform: str,
        *,
        display_name: str,
        allocators: Sequence[str],
        visibility_variable: str,
        allocator_help: str,
    ):
        self.platform = platform
        self.display_name = display_name
        self.allocators = tuple(allocators)
        self.visibility_variable = visibility_variable
        self.visible_devices_name = f"{platform}_visible_devices"
        self.allocator_name = f"{platform}_allocator"
        self.memory_fraction_name = f"{platform}_memory_fraction"
        self.preallocate_name = f"{platform}_preallocate"
        self.checks: dict[str, Callable[[Any, str], Any]] = {
            self.visible_devices_name: visible_devices,
            self.allocator_name: lambda value, source: allocator(value, source, self.allocators),
            self.memory_fraction_name: memory_fraction,
            self.preallocate_name: preallocate,
        }
        # JAX's variables by option name
        self.jax_variables = {
            f"{platform}_{suffix}": names for suffix, names in JAX_VARIABLES.items()
        }
        # What the backend uses for an option nothing sets (None: XLA's own default).
        self.when_unset = {name: None for name in self.checks}
        self.when_unset[self.allocator_name] = self.allocators[0]
        # The options the backend started with (by name, as checked): later changes are
        # refused, since XLA cannot apply them.
        self.started_with: dict[str, Any] = {}
        self._allocator_help = allocator_help

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.checks)

    def define(self) -> None:
        """Declare the options (idempotent). Environment values are kept as text and checked
        when the backend starts, so a typo fails the platform with its reason instead of the
        whole plugin."""
        variable = self.visibility_variable
        helps = {
            self.visible_devices_name: f"The GPUs the {self.display_name} backend uses, as "
            f"ordinals among those {variable} leaves visible ('0,2'; empty: all).",
            self.allocator_name: f"{self._allocator_help} Unset: XLA_PYTHON_CLIENT_ALLOCATOR "
            "is honoured.",
            self.memory_fraction_name: "The share of each GPU's memory the allocator takes, "
            "in (0, 1] (unset: XLA's 0.75, or XLA_CLIENT_MEM_FRACTION / "
            "XLA_PYTHON_CLIENT_MEM_FRACTION).",
            self.preallocate_name: "Whether the allocator reserves its memory fraction when "
            "the backend starts (unset: XLA's default, true, or XLA_PYTHON_CLIENT_PREALLOCATE).",
        }
        for name, help_text in helps.items():
            default = self.allocators[0] if name == self.allocator_name else ""
            define_config_option(
                name, default, help=help_text, parse=str, validate=self._validator(name)
            )

    def _validator(self, name: str) -> Callable[[Any], None]:
        def validate(value: Any) -> None:
            checked = self.checks[name](value, name)
            if name in self.started_with and checked != self.started_with[name]:
                raise BackendError(
                    f"{name}={value!r} cannot take effect: the {self.display_name} backend "
                    f"already started with {name}={self.started_with[name]!r}, and XLA reads "
                    f"it only when the backend starts. Set it before the first computation or "
                    f"in the environment (EMBER_{name.upper()})"
                )

        return validate

    def setting(self, name: str) -> tuple[Any, str] | None:
        """The value of option ``name`` and where it came from, or None when nothing sets it."""
        if config.is_set(name) and config.read(name) != "":
            return config.read(name), name
        for variable in self.jax_variables.get(name, ()):
            raw = os.environ.get(variable)
            if raw:
                return raw, variable
        return None

    def checked(self, name: str) -> Any:
        """Option ``name``'s value as checked, or its value when unset."""
        found = self.setting(name)
        return self.checks[name](*found) if found else self.when_unset[name]

    def mark_started(self) -> None:
        """Record the options the backend started with (later changes are then refused)."""
        for name in self.checks:
            self.started_with[name] = self.checked(name)

    def client_options(self, platform_name: str) -> dict[str, Any]:
        """The PJRT GPU client's options from ember's config (checked; ``ValueError`` names
        the option and the bad value). ``platform_name``: the name XLA's plugin expects.
        ``visible_devices`` is added by the caller of ``requested_devices`` once the GPU
        count is known."""
        options: dict[str, Any] = {
            "platform_name": platform_name,
            "allocator": self.checked(self.allocator_name),
        }
        for name, key in (
            (self.memory_fraction_name, "memory_fraction"),
            (self.preallocate_name, "preallocate"),
        ):
            value = self.checked(name)
            if value is not None:
                options[key] = value
        return options

    def requested_devices(self, gpu_count: int) -> tuple[int, ...] | None:
        """The ordinals of ``<platform>_visible_devices`` (None: all), each checked to be
        below ``gpu_count``, the number of GPUs the driver shows this process."""
        found = self.setting(self.visible_devices_name)
        ordinals = visible_devices(*found) if found else None
        if ordinals is None:
            return None
        beyond = [o for o in ordinals if o >= gpu_count]
        if beyond:
            shown = os.environ.get(self.visibility_variable, "(unset)")
            raise ValueError(
                f"{found[1]}={found[0]!r}: GPU {beyond[0]} does not exist; this process sees "
                f"{gpu_count} GPU(s), ordinals 0 to {gpu_count - 1} "
                f"({self.visibility_variable}={shown})"
            )
        return ordinals
