"""The persistent compilation cache: programs compiled once are loaded, not compiled, by
later processes (and later compiles of this one) that ask for the same program.

Setting the option ``compilation_cache_dir`` turns it on, at any time: every compile reads
the option, so programs compiled after it is set use the cache. ``compile_cached`` stands
where ``backend.compile`` stood: it looks the program up by its key, loads the stored
executable on a hit, and on a miss compiles, times the compile and stores the result when it
is worth it (compile time and size above the thresholds, no host callbacks, written by
process 0 of a multi-process job only).

The key is a sha256 over what decides the executable: the StableHLO module text, the
backend's fingerprint (compile options, compiler and runtime versions, devices, compiler
flags: ``Backend.cache_fingerprint``), the entry format and ember's version. A backend whose
fingerprint is None (the reference backend, which compiles nothing) is never cached.

The cache never costs a result: a directory that cannot be used, a failed write or a damaged
entry is reported once (a warning naming the directory or file and why), counted as an error,
and the program is compiled as without a cache; a damaged entry is then replaced.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import threading
import time
import warnings

from ember._src.config import config
from ember._src.errors import CompileError
from ember._src.execution import cache_store
from ember._src.execution.cache_store import CacheDirectory, CorruptEntryError
from ember._src.lowering.mlir import strip_locations
from ember._src.runtime import multiprocess
from ember._src.runtime.backend import Backend, Computation, Executable


def _parse_directory(text: str) -> str | None:
    return text or None


config.define(
    "compilation_cache_dir",
    None,
    parse=_parse_directory,
    aliases=("jax_compilation_cache_dir",),
    help="Directory of the persistent compilation cache (created if missing); unset: no cache.",
)
config.define(
    "persistent_cache_min_compile_time_secs",
    1.0,
    aliases=("jax_persistent_cache_min_compile_time_secs",),
    help="Store only programs that took at least this many seconds to compile.",
)
config.define(
    "persistent_cache_min_entry_size_bytes",
    0,
    aliases=("jax_persistent_cache_min_entry_size_bytes",),
    help="Store only compiled programs of at least this many bytes.",
)
config.define(
    "compilation_cache_max_size",
    4 * 2**30,
    aliases=("jax_compilation_cache_max_size",),
    help="Bound in bytes of the cache directory's entries: the least recently used are "
    "deleted beyond it; -1: unbounded.",
)
config.define(
    "compilation_cache_compress",
    True,
    # Measured on XLA CPU executables of 14-80 kB: zlib level 1 makes them 2.8-3.4x smaller
    # for 0.1-0.3 ms of decompression per hit, against milliseconds to load the executable.
    help="zlib-compress the entries of the persistent compilation cache (about 3x smaller).",
)

COUNTERS = ("hits", "misses", "writes", "write_skipped", "errors", "evictions")


@functools.cache
def _ember_version() -> str:
    # Looked up on first use, not on import: reading the installed metadata takes milliseconds.
    try:
        return importlib.metadata.version("ember")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


class _State:
    """The counters, the directories in use, and what was already reported (once each)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.directories: dict[str, CacheDirectory] = {}
        self.reported: set[tuple[str, str]] = set()

    def count(self, counter: str, by: int = 1) -> None:
        with self.lock:
            self.counts[counter] += by

    def report_once(self, about: tuple[str, str], message: str) -> None:
        """Warn with ``message`` the first time something goes wrong with ``about``."""
        with self.lock:
            if about in self.reported:
                return
            self.reported.add(about)
        warnings.warn(f"ember's compilation cache: {message}", UserWarning, stacklevel=2)


_state = _State()


# --------------------------------------------------------------------------------------------
# The public surface (ember.compilation_cache)


def stats() -> dict[str, int]:
    """This process's counts: ``hits`` (programs loaded from the cache), ``misses`` (looked
    up, not found: compiled), ``writes``, ``write_skipped`` (compiled but not stored: below a
    threshold, host callbacks, or not process 0), ``errors`` (unusable directory, failed
    write, damaged entry) and ``evictions``."""
    with _state.lock:
        return dict(_state.counts)


def reset_stats() -> None:
    """Set every counter of ``stats()`` back to 0."""
    with _state.lock:
        _state.counts = dict.fromkeys(COUNTERS, 0)


def set_cache_dir(path: str | None) -> None:
    """Use ``path`` as the cache directory from the next compile on (None: no cache); the
    same as ``config.update("compilation_cache_dir", path)``."""
    config.update("compilation_cache_dir", None if path is None else str(path))


def is_initialized() -> bool:
    """Whether a compile of this process has used a cache directory (since ``reset_cache``)."""
    with _state.lock:
        return bool(_state.directories)


def reset_cache() -> None:
    """Forget the directories in use and what was reported, as if no compile had used the
    cache yet (the entries on disk, the option and the counters stay)."""
    with _state.lock:
        _state.directories.clear()
        _state.reported.clear()


# --------------------------------------------------------------------------------------------
# Compiling through the cache


def cache_key(text: str, fingerprint: bytes | str) -> str:
    """The hex sha256 naming a program's entry."""
    if isinstance(fingerprint, str):
        fingerprint = fingerprint.encode()
    digest = hashlib.sha256()
    for part in (
        f"ember {_ember_version()} entry format {cache_store.FORMAT_VERSION}".encode(),
        fingerprint,
        text.encode(),
    ):
        # Each part preceded by its length, so no two different splits hash alike.
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def compile_cached(computation: Computation) -> Executable:
    """``backend.compile(computation)``, through the persistent cache when one is set."""
    backend: Backend = computation.devices[0].backend
    path = config.compilation_cache_dir
    if not path:
        return backend.compile(computation)
    fingerprint = backend.cache_fingerprint(computation)
    if fingerprint is None:
        return backend.compile(computation)
    text = computation.as_text(backend.platform)  # lowering fills host_callbacks
    if computation.host_callbacks:
        # The executable holds pointers to this process's Python functions: meaningless, and
        # dangerous to call, in another process.
        _state.count("write_skipped")
        return backend.compile(computation)
    directory = _directory(os.path.expanduser(str(path)))
    if directory is None:
        return backend.compile(computation)
    # Keyed without the locations (the user's file names and lines, named scopes): moving
    # code around does not change the program, and XLA keeps them only as op names.
    key = cache_key(strip_locations(text), fingerprint)
    file_name = cache_store.entry_name(computation.name, key)
    loaded = _load(directory, file_name, computation, backend)
    if loaded is not None:
        _state.count("hits")
        if config.log_compiles:
            print(f"ember: loaded {computation.name} from the compilation cache")
        return loaded
    _state.count("misses")
    start = time.perf_counter()
    executable = backend.compile(computation)
    _store(directory, file_name, executable, time.perf_counter() - start)
    return executable


def _directory(path: str) -> CacheDirectory | None:
    """The cache directory at ``path``, created if missing (also when it was deleted since
    the last compile); None (reported once) if it cannot be used."""
    with _state.lock:
        directory = _state.directories.get(path) or CacheDirectory(path)
    try:
        directory.ensure_exists()
    except OSError as exc:
        _state.count("errors")
        _state.report_once(
            (path, "unusable"),
            f"cannot use {path!r} as the cache directory ({_reason(exc)}); compiling without "
            "the cache",
        )
        return None
    with _state.lock:
        _state.directories[path] = directory
    return directory


def _load(
    directory: CacheDirectory, file_name: str, computation: Computation, backend: Backend
) -> Executable | None:
    """The stored executable, or None (not stored, or damaged: then reported and removed)."""
    try:
        entry = directory.read(file_name)
        if entry is None:
            return None
        return backend.deserialize_executable(computation, entry.payload)
    except (CorruptEntryError, CompileError) as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"it cannot be read ({_reason(exc)})"
    _state.count("errors")
    _state.report_once(
        (directory.path, file_name),
        f"the entry {file_name!r} in {directory.path!r} is damaged or unreadable: {problem}; "
        "compiling the program again and replacing the entry",
    )
    try:
        directory.remove(file_name)
    except OSError:
        pass  # a read-only cache: the entry stays, and is reported once per process
    return None


def _store(
    directory: CacheDirectory, file_name: str, executable: Executable, seconds: float
) -> None:
    """Store ``executable`` if it is worth it and this process is the one that writes."""
    if multiprocess.this_process() != 0:
        # Every process of a job compiles the same programs: one writer is enough, and
        # process 0's entries serve the others next time.
        _state.count("write_skipped")
        return
    if seconds < config.persistent_cache_min_compile_time_secs:
        _state.count("write_skipped")
        return
    try:
        payload = executable.serialize()
    except NotImplementedError:
        _state.count("write_skipped")
        return
    data = cache_store.pack(payload, seconds, config.compilation_cache_compress)
    max_size = config.compilation_cache_max_size
    if len(data) < config.persistent_cache_min_entry_size_bytes or 0 <= max_size < len(data):
        _state.count("write_skipped")
        return
    try:
        directory.write(file_name, data)
    except OSError as exc:
        _state.count("errors")
        _state.report_once(
            (directory.path, "write"),
            f"cannot write to {directory.path!r} ({_reason(exc)}); programs are compiled as "
            "usual but not stored",
        )
        return
    _state.count("writes")
    if max_size >= 0:
        try:
            _state.count("evictions", directory.evict(max_size, keep=file_name))
        except OSError as exc:
            _state.count("errors")
            _state.report_once((directory.path, "evict"), f"cannot evict entries ({_reason(exc)})")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
