"""Finding a GPU plugin's parts: installed packages (without importing them) and the shared
libraries a PJRT library needs before it can load.

A vendor's PJRT library links its runtime libraries directly (ROCm's: HIP, RCCL, MIOpen...),
so without them ``dlopen`` fails naming only the first it missed. Reading the library's ELF
dynamic section (its ``DT_NEEDED`` sonames and the ``DT_RUNPATH`` it searches) and loading
each one in turn names every missing library, and a library of another version found where
the right one was expected.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass

_ELF_MAGIC = b"\x7fELF"
_SHT_DYNAMIC = 6
_DT_NULL, _DT_NEEDED, _DT_RPATH, _DT_RUNPATH = 0, 1, 15, 29


def package_directory(name: str) -> str | None:
    """The directory of an installed package, found without importing it (None: absent)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return locations[0]
    return os.path.dirname(spec.origin) if spec.origin else None


@dataclass(frozen=True)
class DynamicSection:
    """What a shared library asks of the dynamic loader: the sonames it needs, in order, and
    the directories it searches first (``DT_RUNPATH``, else ``DT_RPATH``; ``$ORIGIN``
    replaced by the library's own directory)."""

    needed: tuple[str, ...]
    search_path: tuple[str, ...]


def dynamic_section(path: str) -> DynamicSection:
    """Read ``path``'s ELF dynamic section (headers only: a large library is not read
    whole). Raises ``ValueError`` when ``path`` is not an ELF shared library."""
    with open(path, "rb") as f:
        ident = f.read(16)
        if len(ident) < 16 or ident[:4] != _ELF_MAGIC or ident[4] not in (1, 2):
            raise ValueError(f"{path} is not an ELF file")
        wide = ident[4] == 2  # ELFCLASS64
        order = "<" if ident[5] == 1 else ">"
        header = f.read(48 if wide else 36)
        if wide:
            shoff, shentsize, shnum = (
                struct.unpack_from(order + "Q", header, 24)[0],
                *struct.unpack_from(order + "HH", header, 42),
            )
        else:
            shoff, shentsize, shnum = (
                struct.unpack_from(order + "I", header, 16)[0],
                *struct.unpack_from(order + "HH", header, 30),
            )
        sections = [_section(f, order, wide, shoff + i * shentsize) for i in range(shnum)]
        dynamic = next((s for s in sections if s[0] == _SHT_DYNAMIC), None)
        if dynamic is None:
            raise ValueError(f"{path} has no dynamic section (not a shared library?)")
        _, offset, size, link = dynamic
        if link >= len(sections):
            raise ValueError(f"{path}: its dynamic section names no string table (a damaged file?)")
        _, strings_offset, strings_size, _ = sections[link]
        f.seek(offset)
        entries = f.read(size)
        f.seek(strings_offset)
        strings = f.read(strings_size)
    entry = order + ("qQ" if wide else "iI")
    needed, rpath, runpath = [], "", ""
    for tag, value in struct.iter_unpack(entry, entries[: size - size % struct.calcsize(entry)]):
        if tag == _DT_NULL:
            break
        if tag in (_DT_NEEDED, _DT_RPATH, _DT_RUNPATH):
            text = strings[value : strings.index(b"\0", value)].decode()
            if tag == _DT_NEEDED:
                needed.append(text)
            elif tag == _DT_RPATH:
                rpath = text
            else:
                runpath = text
    origin = os.path.dirname(os.path.abspath(path))
    search = [
        os.path.normpath(d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin))
        for d in (runpath or rpath).split(":")
        if d
    ]
    return DynamicSection(tuple(needed), tuple(search))


def _section(f, order: str, wide: bool, at: int) -> tuple[int, int, int, int]:
    """(type, offset, size, link) of the section header at file offset ``at``."""
    f.seek(at)
    if wide:
        raw = f.read(64)
        kind = struct.unpack_from(order + "I", raw, 4)[0]
        offset, size = struct.unpack_from(order + "QQ", raw, 24)
        link = struct.unpack_from(order + "I", raw, 40)[0]
    else:
        raw = f.read(40)
        kind = struct.unpack_from(order + "I", raw, 4)[0]
        offset, size, link = struct.unpack_from(order + "III", raw, 16)
    return kind, offset, size, link


@dataclass(frozen=True)
class MissingLibrary:
    """A needed library that did not load: its soname, the loader's error, and files of the
    same library with another version found where it was looked for (a ROCm or CUDA of
    another release)."""

    soname: str
    error: str
    other_versions: tuple[str, ...] = ()

    def describe(self) -> str:
        # the loader's error usually starts with the soname already
        text = self.error if self.error.startswith(self.soname) else f"{self.soname}: {self.error}"
        if self.other_versions:
            text += f" (found another version: {', '.join(self.other_versions)})"
        return text


def missing_libraries(path: str, extra_dirs: Sequence[str] = ()) -> list[MissingLibrary]:
    """Load each library ``path`` needs, as the loader would find it (``path``'s run path,
    then ``extra_dirs``, then the loader's own search: ``LD_LIBRARY_PATH``, the ldconfig
    cache), and return those that failed. The ones found stay loaded, so a later ``dlopen``
    of ``path`` finds them by soname even in ``extra_dirs``."""
    section = dynamic_section(path)
    directories = [*section.search_path, *extra_dirs]
    missing = []
    for soname in section.needed:
        candidates = (os.path.join(d, soname) for d in directories)
        found = next((c for c in candidates if os.path.isfile(c)), None)
        try:
            ctypes.CDLL(found or soname)
        except OSError as exc:
            missing.append(MissingLibrary(soname, str(exc), _other_versions(soname, directories)))
    return missing


def _other_versions(soname: str, directories: Sequence[str]) -> tuple[str, ...]:
    """Files named like ``soname`` with another version suffix (``libamdhip64.so.6`` for
    ``libamdhip64.so.7``) in ``directories``."""
    stem = soname.split(".so")[0] + ".so"
    found = set()
    for directory in directories:
        for candidate in glob.glob(os.path.join(glob.escape(directory), glob.escape(stem) + ".*")):
            name = os.path.basename(candidate)
            if name != soname and not name.startswith(soname + "."):
                found.add(candidate)
    return tuple(sorted(found))
