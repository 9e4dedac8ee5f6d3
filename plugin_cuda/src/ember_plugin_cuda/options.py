"""The CUDA platform's options, read when its backend starts, and the PJRT client options
they become.

Each option is an ember config option (``ember.config.update(name, value)`` or the
environment variable ``EMBER_<NAME>``). When one is not set, the variable a JAX program sets
for the same thing is honoured, so ported programs keep their memory settings. Values are
checked when set through ``config.update`` and again when the backend starts (values from
the environment arrive as text and are checked there), and a bad one is a ``ValueError``
naming the option and the value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ember import config
from ember.errors import BackendError
from ember.extend import define_config_option

VISIBLE_DEVICES = "cuda_visible_devices"
ALLOCATOR = "cuda_allocator"
MEMORY_FRACTION = "cuda_memory_fraction"
PREALLOCATE = "cuda_preallocate"

# XLA's GPU allocators (the PJRT plugin's ``allocator`` option): ``default`` is the BFC
# allocator, preallocating; ``platform`` allocates and frees exactly what is asked (slow, but
# no memory is held: for debugging out-of-memory errors); ``bfc`` is XLA's best-fit with
# coalescing allocator; ``cuda_async`` is CUDA's stream-ordered cudaMallocAsync; ``vmm``
# grows by mapping virtual memory.
ALLOCATORS = ("default", "platform", "bfc", "cuda_async", "vmm")

# JAX's environment variables for the same settings (read only when ember's are unset).
JAX_VARIABLES = {
    ALLOCATOR: ("XLA_PYTHON_CLIENT_ALLOCATOR",),
    MEMORY_FRACTION: ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"),
    PREALLOCATE: ("XLA_PYTHON_CLIENT_PREALLOCATE",),
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def visible_devices(value: Any, source: str = VISIBLE_DEVICES) -> tuple[int, ...] | None:
    """The GPU ordinals this process uses, or None for all of them. Accepts a sequence of
    ints or text such as ``"0,2"``; empty means all."""
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


def allocator(value: Any, source: str = ALLOCATOR) -> str:
    text = str(value).strip().lower() if isinstance(value, str) else value
    if text not in ALLOCATORS:
        choices = ", ".join(ALLOCATORS)
        raise ValueError(f"{source}={value!r}: the allocator must be one of {choices}")
    return text


def memory_fraction(value: Any, source: str = MEMORY_FRACTION) -> float:
    """The share of each GPU's memory XLA's allocator may use, in (0, 1]."""
    try:
        fraction = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        fraction = math.nan
    if not 0 < fraction <= 1:  # also refuses nan
        raise ValueError(f"{source}={value!r}: the memory fraction must be in (0, 1]")
    return fraction


def preallocate(value: Any, source: str = PREALLOCATE) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{source}={value!r}: expected true or false")


# What the backend uses for an option nothing sets (None: XLA's own default).
_WHEN_UNSET = {
    VISIBLE_DEVICES: None,
    ALLOCATOR: "default",
    MEMORY_FRACTION: None,
    PREALLOCATE: None,
}

_CHECKS = {
    VISIBLE_DEVICES: visible_devices,
    ALLOCATOR: allocator,
    MEMORY_FRACTION: memory_fraction,
    PREALLOCATE: preallocate,
}


# The options the backend started with (by name, as checked): XLA reads them once, when the
# client is created, so a later change cannot take effect and is refused.
_started_with: dict[str, Any] = {}


def _checked_by(name: str):
    def validate(value: Any) -> None:
        checked = _CHECKS[name](value)
        if name in _started_with and checked != _started_with[name]:
            raise BackendError(
                f"{name}={value!r} cannot take effect: the CUDA backend already started with "
                f"{name}={_started_with[name]!r}, and XLA reads it only when the backend "
                f"starts. Set it before the first computation or in the environment "
                f"(EMBER_{name.upper()})"
            )

    return validate


def mark_started() -> None:
    """Record the options the backend started with (later changes are then refused)."""
    for name, check in _CHECKS.items():
        found = _setting(name)
        _started_with[name] = check(*found) if found else _WHEN_UNSET[name]


def define_options() -> None:
    """Declare the options (idempotent). Environment values are kept as text and checked
    when the backend starts, so a typo fails the platform with its reason instead of the
    whole plugin."""
    define_config_option(
        VISIBLE_DEVICES,
        "",
        help="The GPUs the CUDA backend uses, as ordinals among those CUDA_VISIBLE_DEVICES "
        "leaves visible ('0,2'; empty: all).",
        parse=str,
        validate=_checked_by(VISIBLE_DEVICES),
    )
    define_config_option(
        ALLOCATOR,
        "default",
        help="XLA's GPU memory allocator: default (bfc, preallocating), platform (allocate "
        "on demand, free at once: slow, for debugging memory), bfc, cuda_async or vmm. "
        "Unset: XLA_PYTHON_CLIENT_ALLOCATOR is honoured.",
        parse=str,
        validate=_checked_by(ALLOCATOR),
    )
    define_config_option(
        MEMORY_FRACTION,
        "",
        help="The share of each GPU's memory the allocator takes, in (0, 1] (unset: XLA's "
        "0.75, or XLA_CLIENT_MEM_FRACTION / XLA_PYTHON_CLIENT_MEM_FRACTION).",
        parse=str,
        validate=_checked_by(MEMORY_FRACTION),
    )
    define_config_option(
        PREALLOCATE,
        "",
        help="Whether the allocator reserves its memory fraction when the backend starts "
        "(unset: XLA's default, true, or XLA_PYTHON_CLIENT_PREALLOCATE).",
        parse=str,
        validate=_checked_by(PREALLOCATE),
    )


define_options()


def _setting(name: str) -> tuple[Any, str] | None:
    """The value of option ``name`` and where it came from, or None when nothing sets it."""
    if config.is_set(name) and config.read(name) != "":
        return config.read(name), name
    for variable in JAX_VARIABLES.get(name, ()):
        raw = os.environ.get(variable)
        if raw:
            return raw, variable
    return None


def client_options() -> dict[str, Any]:
    """The PJRT CUDA client's options from ember's config (checked; ``ValueError`` names the
    option and the bad value). ``visible_devices`` is added by ``requested_devices``' caller
    once the GPU count is known."""
    options: dict[str, Any] = {"platform_name": "cuda"}
    found = _setting(ALLOCATOR)
    options["allocator"] = allocator(*found) if found else "default"
    found = _setting(MEMORY_FRACTION)
    if found:
        options["memory_fraction"] = memory_fraction(*found)
    found = _setting(PREALLOCATE)
    if found:
        options["preallocate"] = preallocate(*found)
    return options


def requested_devices(gpu_count: int) -> tuple[int, ...] | None:
    """The ordinals of ``cuda_visible_devices`` (None: all), each checked to be below
    ``gpu_count``, the number of GPUs the driver shows this process."""
    found = _setting(VISIBLE_DEVICES)
    ordinals = visible_devices(*found) if found else None
    if ordinals is None:
        return None
    beyond = [o for o in ordinals if o >= gpu_count]
    if beyond:
        raise ValueError(
            f"{found[1]}={found[0]!r}: GPU {beyond[0]} does not exist; this process sees "
            f"{gpu_count} GPU(s), ordinals 0 to {gpu_count - 1} (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')})"
        )
    return ordinals
