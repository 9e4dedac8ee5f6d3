"""One configuration system for every option.

Each option has a name, a type, a default and an environment variable ``EMBER_<NAME>`` that
seeds it. ``config.update(name, value)`` sets it globally; ``with config.option(name, value):``
sets it for a block of code (per thread/task, through a ``ContextVar``). Plugins define their
own options through :func:`define` (re-exported by ``ember.extend``).

An option may have aliases (other spellings, such as JAX's, that name the same value) and a
``validate`` function that sees a new value before it is stored and may refuse it, e.g. an
option that a backend reads once when it starts refuses a change after that.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ember._src import errors

_UNSET: Any = object()


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {text!r}")


def _parse_str_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


@dataclass
class Option:
    name: str
    default: Any
    parse: Callable[[str], Any]
    help: str
    on_change: Callable[[Any], None] | None = None
    aliases: tuple[str, ...] = ()
    validate: Callable[[Any], None] | None = None

    @property
    def env_var(self) -> str:
        return "EMBER_" + self.name.upper()


class Config:
    """The registry of options. Use the module-level ``config`` instance."""

    def __init__(self) -> None:
        self._options: dict[str, Option] = {}
        self._globals: dict[str, Any] = {}
        self._overrides: dict[str, contextvars.ContextVar] = {}
        self._aliases: dict[str, str] = {}  # another spelling -> the option's name
        self._explicit: set[str] = set()  # options given a value (environment or update)
        # Plugins define their options when they are imported, which happens lazily; a name
        # not known yet may be a plugin's, so it is looked up again after loading them.
        self._plugin_loader: Callable[[], None] | None = None
        self._loading_plugins = False

    def define(
        self,
        name: str,
        default: Any,
        *,
        help: str,
        parse: Callable[[str], Any] | None = None,
        on_change: Callable[[Any], None] | None = None,
        aliases: tuple[str, ...] = (),
        validate: Callable[[Any], None] | None = None,
    ) -> Option:
        """Declare an option; its environment variable ``EMBER_<NAME>`` seeds its value.

        ``aliases`` are other names for the same option (``config.update(alias, v)`` sets it);
        ``validate(value)`` is called before a new value is stored and raises to refuse it.
        """
        if name in self._options:
            return self._options[name]
        for alias in (name, *aliases):
            if alias in self._aliases or (alias != name and alias in self._options):
                raise ValueError(f"config option name {alias!r} is already taken")
        if parse is None:
            parse = _default_parser(default)
        option = Option(name, default, parse, help, on_change, tuple(aliases), validate)
        self._options[name] = option
        for alias in aliases:
            self._aliases[alias] = name
        self._overrides[name] = contextvars.ContextVar(f"ember_config_{name}", default=_UNSET)
        raw = os.environ.get(option.env_var)
        if raw is not None:
            try:
                self._globals[name] = parse(raw)
                self._explicit.add(name)
            except ValueError as err:
                raise ValueError(f"environment variable {option.env_var}={raw!r}: {err}") from None
        else:
            self._globals[name] = default
        return option

    def set_plugin_loader(self, load: Callable[[], None]) -> None:
        """Register the function that imports every plugin (the plugin manager's)."""
        self._plugin_loader = load

    def _option(self, name: str) -> Option:
        option = self._lookup(name)
        if option is not None:
            return option
        if self._plugin_loader is not None and not self._loading_plugins:
            self._loading_plugins = True
            try:
                self._plugin_loader()
            finally:
                self._loading_plugins = False
            option = self._lookup(name)
            if option is not None:
                return option
        known = ", ".join(sorted(self._options))
        raise AttributeError(f"ember has no config option {name!r}; known: {known}")

    def _lookup(self, name: str) -> Option | None:
        return self._options.get(self._aliases.get(name, name))

    def read(self, name: str) -> Any:
        name = self._option(name).name
        value = self._overrides[name].get()
        return self._globals[name] if value is _UNSET else value

    def is_set(self, name: str) -> bool:
        """Whether the option was given a value (environment, ``update`` or ``option``) rather
        than left at its default: lets a backend fall back to another source only when unset."""
        name = self._option(name).name
        return name in self._explicit or self._overrides[name].get() is not _UNSET

    def __getattr__(self, name: str) -> Any:
        # Called only for names that are not attributes: `config.enable_x64`.
        # Inlined `read`: jit reads options on every call.
        var = self._overrides.get(name)
        if var is None:
            if name.startswith("_"):
                raise AttributeError(name)
            name = self._option(name).name  # an alias, or raises the helpful AttributeError
            var = self._overrides[name]
        value = var.get()
        return self._globals[name] if value is _UNSET else value

    def reader(self, name: str) -> Callable[[], Any]:
        """A fast zero-argument reader of one option, for code that reads it on every call."""
        name = self._option(name).name
        var, values = self._overrides[name], self._globals

        def read() -> Any:
            value = var.get()
            return values[name] if value is _UNSET else value

        return read

    def update(self, name: str, value: Any) -> None:
        """Set an option for the whole process."""
        option = self._option(name)
        value = _as_list_if_listed(option, value)
        self._validate(option, value)
        self._globals[option.name] = value
        self._explicit.add(option.name)
        if option.on_change is not None:
            option.on_change(value)

    def _validate(self, option: Option, value: Any) -> None:
        if option.validate is None:
            return
        try:
            option.validate(value)
        except errors.EmberError as exc:
            # The refusal comes from a plugin; name the user's line that asked for the change.
            raise type(exc)(f"{exc}{errors.where()}") from None

    @contextlib.contextmanager
    def option(self, name: str, value: Any) -> Iterator[None]:
        """Set an option for the duration of a ``with`` block (this thread/task only)."""
        option = self._option(name)
        value = _as_list_if_listed(option, value)
        self._validate(option, value)
        var = self._overrides[option.name]
        token = var.set(value)
        try:
            if option.on_change is not None:
                option.on_change(value)
            yield
        finally:
            var.reset(token)
            if option.on_change is not None:
                option.on_change(self.read(option.name))

    def values(self) -> dict[str, Any]:
        return {name: self.read(name) for name in sorted(self._options)}

    def describe(self) -> list[Option]:
        return [self._options[name] for name in sorted(self._options)]


def _as_list_if_listed(option: Option, value: Any) -> Any:
    """A list option given one string takes it as its environment variable would
    (``update("platforms", "cpu,reference")``, as JAX's ``jax_platforms``)."""
    if isinstance(option.default, tuple) and isinstance(value, str):
        return _parse_str_list(value)
    return value


def _default_parser(default: Any) -> Callable[[str], Any]:
    if isinstance(default, bool):
        return _parse_bool
    if isinstance(default, int):
        return int
    if isinstance(default, float):
        return float
    if isinstance(default, tuple):
        return _parse_str_list
    return str


config = Config()

define = config.define

# Core options. Plugins define theirs through ember.extend.config.
config.define(
    "enable_x64",
    False,
    help="Use 64-bit types (int64, float64, complex128) by default instead of their 32-bit kin.",
)
config.define(
    "disable_plugins",
    (),
    help="Comma-separated plugin names (entry-point names) that must not be loaded.",
)
config.define(
    "disable_jit",
    False,
    aliases=("jax_disable_jit",),
    help="Run jit-decorated functions, and the bodies of scan, while_loop, cond and switch, "
    "eagerly, op by op (for debugging).",
)


def _parse_traceback_filtering(text: str) -> str:
    value = text.strip().lower()
    if value not in ("auto", "off"):
        raise ValueError(f"expected 'auto' or 'off', got {text!r}")
    return value


config.define(
    "traceback_filtering",
    "auto",
    parse=_parse_traceback_filtering,
    help="'auto': an uncaught exception that passed through ember is printed without ember's "
    "internal frames; 'off': print every frame.",
)
config.define(
    "log_compiles",
    False,
    help="Print a line each time a computation is compiled.",
)
