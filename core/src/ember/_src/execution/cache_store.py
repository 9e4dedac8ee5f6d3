"""The files of the persistent compilation cache: one entry per compiled program, in one
directory that several processes may read and write at once.

An entry is a header ember defines followed by the payload (a backend's serialized
executable, possibly zlib-compressed). The header carries a magic string, the format
version, the payload's length and sha256, and the seconds the program took to compile, so a
truncated, corrupted or foreign file is recognised before a backend is asked to load it.

Concurrency without locks:

- a write goes to a temporary file in the same directory, then ``os.replace`` puts it in
  place in one step: a reader sees the old entry, the new one, or none, never half of one;
  two processes writing one key both write a whole entry and the last rename wins;
- recency (for least-recently-used eviction) is the entry's modification time, bumped on
  every hit; eviction deletes the oldest entries until the directory fits its bound and treats
  a file that vanished meanwhile (another process evicted it) as already gone. Two processes
  evicting at once may delete a little more than needed, never a file being written (those
  are temporary files until renamed), and a reader that opened an entry before it was
  deleted still reads all of it (POSIX keeps an open file's data).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import struct
import time
import zlib
from dataclasses import dataclass

MAGIC = b"EMBERXC\0"
FORMAT_VERSION = 1
# magic, format version, flags, compile seconds, payload length, sha256 of the payload
_HEADER = struct.Struct(">8sHHdQ32s")
_COMPRESSED = 1  # flag: the payload is zlib-compressed

SUFFIX = ".ember-cache"
_TEMPORARY_PREFIX = ".writing-"
# A temporary file older than this was left by a writer that died before renaming it.
_ABANDONED_AFTER_S = 600.0


class CorruptEntryError(ValueError):
    """An entry's file is not a whole, intact entry (the message says what is wrong)."""


@dataclass(frozen=True)
class Entry:
    payload: bytes  # the backend's serialized executable, decompressed
    compile_seconds: float


def pack(payload: bytes, compile_seconds: float, compress: bool) -> bytes:
    """An entry's bytes: header, then ``payload`` (zlib-compressed when ``compress``)."""
    stored = zlib.compress(payload, 1) if compress else payload
    flags = _COMPRESSED if compress else 0
    digest = hashlib.sha256(stored).digest()
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, flags, compile_seconds, len(stored), digest)
    return header + stored


def unpack(data: bytes) -> Entry:
    """The entry ``data`` holds; raises CorruptEntryError if it is not a whole, intact one."""
    if len(data) < _HEADER.size:
        raise CorruptEntryError(f"{len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    magic, version, flags, seconds, length, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptEntryError("it does not start with an ember cache header")
    if version != FORMAT_VERSION:
        raise CorruptEntryError(f"format version {version}, this ember reads {FORMAT_VERSION}")
    stored = data[_HEADER.size :]
    if len(stored) != length:
        raise CorruptEntryError(f"the header announces {length} payload bytes, found {len(stored)}")
    if hashlib.sha256(stored).digest() != digest:
        raise CorruptEntryError("the payload does not match its checksum")
    if flags & _COMPRESSED:
        try:
            stored = zlib.decompress(stored)
        except zlib.error as exc:
            raise CorruptEntryError(f"the payload does not decompress: {exc}") from None
    return Entry(stored, seconds)


def entry_name(name: str, key: str) -> str:
    """The file name of the entry of key ``key`` (hex) for a program called ``name``: the
    key alone decides; the name only helps a person looking at the directory."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]
    return f"{readable}-{key}{SUFFIX}"


class CacheDirectory:
    """The entries in one directory. Its methods raise OSError where the file system refuses
    (the caller decides how loud to be); the directory is created on first use."""

    def __init__(self, path: str):
        self.path = path

    def ensure_exists(self) -> None:
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            # (makedirs would say only "File exists")
            raise NotADirectoryError(errno.ENOTDIR, "a file is in its place", self.path)
        os.makedirs(self.path, exist_ok=True)

    def read(self, file_name: str) -> Entry | None:
        """The entry in ``file_name`` (None if there is none), its recency bumped; raises
        CorruptEntryError for a damaged file."""
        path = os.path.join(self.path, file_name)
        try:
            with open(path, "rb") as file:
                data = file.read()
        except FileNotFoundError:
            return None
        entry = unpack(data)
        try:
            os.utime(path)  # most recently used now
        except OSError:
            pass  # evicted since, or a read-only cache: recency is only a hint
        return entry

    def write(self, file_name: str, data: bytes) -> None:
        """Put ``data`` in ``file_name`` in one step (replacing any entry there)."""
        # Not mkstemp: its files are private to their owner, and a cache directory may be
        # shared; this one gets the permissions the umask gives.
        temporary = os.path.join(
            self.path, f"{_TEMPORARY_PREFIX}{os.getpid()}-{secrets.token_hex(8)}.tmp"
        )
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(temporary, os.path.join(self.path, file_name))
        except BaseException:
            _remove_quietly(temporary)
            raise

    def remove(self, file_name: str) -> None:
        """Delete an entry (nothing happens if it is already gone)."""
        _remove_quietly(os.path.join(self.path, file_name))

    def evict(self, max_size: int, keep: str) -> int:
        """Delete least-recently-used entries (never ``keep``) until the entries fit in
        ``max_size`` bytes; the number deleted. Also removes abandoned temporary files."""
        entries = self._entries()
        total = sum(size for _, size, _ in entries)
        evicted = 0
        for _mtime, size, name in sorted(entries):
            if total <= max_size:
                break
            if name == keep:
                continue
            if _remove_quietly(os.path.join(self.path, name)):
                evicted += 1
            total -= size  # gone either way: deleted here or by another process
        return evicted

    def _entries(self) -> list[tuple[float, int, str]]:
        """(modification time, size, name) of every entry, skipping files that vanish while
        they are listed; abandoned temporary files are removed on the way."""
        found = []
        now = time.time()
        with os.scandir(self.path) as listing:
            for item in listing:
                try:
                    stat = item.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if item.name.endswith(SUFFIX):
                    found.append((stat.st_mtime, stat.st_size, item.name))
                elif (
                    item.name.startswith(_TEMPORARY_PREFIX)
                    and now - stat.st_mtime > _ABANDONED_AFTER_S
                ):
                    _remove_quietly(item.path)
        return found


def _remove_quietly(path: str) -> bool:
    """Delete ``path``; False if it was already gone."""
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True
