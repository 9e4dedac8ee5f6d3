"""The FFI targets and types a user registered, by platform, and their trip to the backends.

XLA finds a custom call's handler by name in a registry of the compiler. ember keeps what the
user registered here and hands it to the platform's backend (``Backend.register_ffi_target``):
right away when that backend is running, else when a program calling an FFI target is first
lowered for it, so a backend created after the registration gets the target too.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any

from ember._src.plugin.manager import manager
from ember._src.runtime.backend import Backend

# What "gpu" means when a user registers for it, as in JAX: either GPU platform.
_PLATFORM_GROUPS = {"gpu": ("cuda", "rocm"), "host": ("cpu",)}

_lock = threading.Lock()
# platform -> target name -> (handler, api_version, options)
_targets: dict[str, dict[str, tuple[Any, int, dict[str, Any]]]] = {}
# platform -> type name -> registration
_types: dict[str, dict[str, Any]] = {}
# backend -> the target and type names already handed to it
_given: weakref.WeakKeyDictionary[Backend, set[str]] = weakref.WeakKeyDictionary()


def _platforms(platform: str) -> tuple[str, ...]:
    if not isinstance(platform, str) or not platform:
        raise TypeError(f"platform must be a platform name such as 'cpu', got {platform!r}")
    name = platform.lower()
    return _PLATFORM_GROUPS.get(name, (name,))


def register_ffi_target(
    name: str, fn: Any, platform: str = "cpu", api_version: int = 1, **kwargs: Any
) -> None:
    """Register ``fn`` (a PyCapsule holding an XLA FFI handler, or a dict of capsules by FFI
    stage: ``"instantiate"``, ``"prepare"``, ``"initialize"``, ``"execute"``) as the
    custom-call target ``name`` of ``platform``. ``api_version``: 1 (typed FFI) or 0 (the
    legacy custom-call API); ``kwargs`` go to the compiler's registration (``traits``)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_ffi_target: the target's name must be a string, got {name!r}")
    if api_version not in (0, 1):
        raise ValueError(
            f"register_ffi_target({name!r}): api_version must be 1 (typed FFI) or 0 (legacy "
            f"custom call), got {api_version!r}"
        )
    if isinstance(fn, dict):
        bad = [k for k, v in fn.items() if not _is_capsule(v)]
    else:
        bad = [] if _is_capsule(fn) else ["the handler"]
    if bad:
        raise TypeError(
            f"register_ffi_target({name!r}): fn must be a PyCapsule holding a handler (see "
            f"ember.ffi.pycapsule) or a dict of them by stage; not one: {', '.join(map(str, bad))}"
        )
    for p in _platforms(platform):
        with _lock:
            previous = _targets.setdefault(p, {}).get(name)
            _targets[p][name] = (fn, api_version, dict(kwargs))
            # a re-registration goes to the backends again
            had_it = [g for b, g in _given.items() if b.platform == p and name in g]
            for given in had_it:
                given.discard(name)
        try:
            _hand_over_if_running(p)
        except Exception:
            # refused (XLA keeps the first handler of a name): so does the registry
            with _lock:
                if previous is None:
                    del _targets[p][name]
                else:
                    _targets[p][name] = previous
                for given in had_it:
                    given.add(name)
            raise


def register_ffi_type(name: str, type_registration: Any, platform: str = "cpu") -> None:
    """Register the FFI user type ``name``: ``type_registration`` is a dict with a
    ``type_id`` PyCapsule (a pointer to the handler library's ``XLA_FFI_TypeId``) and
    optionally a ``type_info`` one."""
    if not isinstance(type_registration, dict) or not _is_capsule(type_registration.get("type_id")):
        raise TypeError(
            f"register_ffi_type({name!r}): type_registration must be a dict with a 'type_id' "
            f"PyCapsule (and optionally 'type_info'), got {type_registration!r}"
        )
    platforms = _platforms(platform)
    with _lock:
        for p in platforms:
            _types.setdefault(p, {})[name] = dict(type_registration)
    for p in platforms:
        _hand_over_if_running(p)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Not available: XLA now assigns type ids itself (JAX raises here too)."""
    raise NotImplementedError(
        f"register_ffi_type_id({name!r}): XLA no longer takes type ids from users; register "
        f"the type with ember.ffi.register_ffi_type(name, {{'type_id': capsule}}) instead"
    )


def registered_targets(platform: str) -> list[str]:
    """The names registered for ``platform``, sorted."""
    with _lock:
        return sorted(_targets.get(platform, {}))


def hand_over(platform: str) -> None:
    """Give ``platform``'s running backend every target and type not given to it yet (called
    when a program that calls an FFI target is lowered for it)."""
    _hand_over_if_running(platform)


def _hand_over_if_running(platform: str) -> None:
    pm = manager()
    if platform not in pm.started_platforms():
        return  # its backend gets them when a program calling one is lowered for it
    backend = pm.backend(platform)
    with _lock:
        given = _given.setdefault(backend, set())
        types = [(n, r) for n, r in _types.get(platform, {}).items() if f"type:{n}" not in given]
        targets = [(n, t) for n, t in _targets.get(platform, {}).items() if n not in given]
        for type_name, registration in types:
            backend.register_ffi_type(type_name, registration)
            given.add(f"type:{type_name}")
        for target, (fn, api_version, options) in targets:
            backend.register_ffi_target(target, fn, api_version, **options)
            given.add(target)


def _is_capsule(value: Any) -> bool:
    return type(value).__name__ == "PyCapsule"


# ctypes' destructor type for a capsule that owns nothing (the library owns the function).
_NO_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.py_object)


def pycapsule(funcptr: Any) -> Any:
    """A PyCapsule holding the address ``funcptr`` points at: a ctypes function (e.g.
    ``ctypes.cdll.LoadLibrary(path).MyHandler``, what ``register_ffi_target`` takes) or a
    ``ctypes.c_void_p`` (the address of a type's ``XLA_FFI_TypeId``, for
    ``register_ffi_type``)."""
    address = ctypes.cast(funcptr, ctypes.c_void_p).value
    if not address:
        raise TypeError(f"pycapsule: {funcptr!r} is not a ctypes function pointer")
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, _NO_DESTRUCTOR)
    return new(address, None, _NO_DESTRUCTOR(0))


def include_dir() -> str:
    """The folder of XLA's FFI C++ headers (``xla/ffi/api/ffi.h``) to compile handlers with
    (``-I``): from the first selected platform whose backend ships them (the CPU plugin's)."""
    pm = manager()
    reasons = []
    for platform in pm.selected():
        try:
            return pm.backend(platform).ffi_include_dir()
        except NotImplementedError as exc:
            reasons.append(str(exc))
        except Exception as exc:  # a platform that does not start here has no headers either
            reasons.append(f"{platform}: {type(exc).__name__}: {exc}")
    raise NotImplementedError(
        "no selected platform ships XLA's FFI headers (install ember-plugin-cpu and select "
        f"cpu): {'; '.join(reasons) or 'no platform is selected'}"
    )
