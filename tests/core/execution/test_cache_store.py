"""The files of the persistent compilation cache (execution/cache_store.py): the entry format,
atomic writes, recency and least-recently-used eviction."""

from __future__ import annotations

import os
import time

import pytest

from ember._src.execution import cache_store
from ember._src.execution.cache_store import CacheDirectory, CorruptEntryError

PAYLOAD = bytes(range(256)) * 40


@pytest.mark.parametrize("compress", [False, True])
def test_an_entry_holds_its_payload_and_compile_time(compress):
    data = cache_store.pack(PAYLOAD, 2.5, compress)
    entry = cache_store.unpack(data)
    assert entry.payload == PAYLOAD and entry.compile_seconds == 2.5
    assert data.startswith(cache_store.MAGIC)
    assert (len(data) < len(PAYLOAD)) == compress  # this payload compresses well


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d[:20], "shorter than the 60-byte header"),
        (lambda d: d[:-5], "announces"),
        (lambda d: d + b"extra", "announces"),
        (lambda d: d[:100] + bytes([d[100] ^ 0x10]) + d[101:], "checksum"),
        (lambda d: b"NOTEMBER" + d[8:], "does not start with an ember cache header"),
        (lambda d: d[:8] + (99).to_bytes(2, "big") + d[10:], "format version 99"),
    ],
)
def test_a_damaged_entry_is_recognised(damage, message):
    with pytest.raises(CorruptEntryError, match=message):
        cache_store.unpack(damage(cache_store.pack(PAYLOAD, 1.0, False)))


def test_entry_names_are_safe_file_names():
    name = cache_store.entry_name("jit_f/<lambda> x" * 10, "ab" * 32)
    assert "/" not in name and " " not in name and name.endswith("ab" * 32 + cache_store.SUFFIX)
    assert len(name) < 160


def test_writes_replace_whole_entries_and_leave_no_temporary_file(tmp_path):
    directory = CacheDirectory(str(tmp_path / "a" / "b"))
    directory.ensure_exists()
    directory.write("e" + cache_store.SUFFIX, cache_store.pack(b"one", 1.0, False))
    directory.write("e" + cache_store.SUFFIX, cache_store.pack(b"two", 1.0, False))
    assert os.listdir(directory.path) == ["e" + cache_store.SUFFIX]
    assert directory.read("e" + cache_store.SUFFIX).payload == b"two"
    assert directory.read("missing" + cache_store.SUFFIX) is None


def test_a_file_in_place_of_the_directory_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError, match="a file is in its place"):
        CacheDirectory(str(tmp_path / "f")).ensure_exists()
    with pytest.raises(NotADirectoryError):  # a file as a parent
        CacheDirectory(str(tmp_path / "f" / "cache")).ensure_exists()


def test_reading_an_entry_makes_it_the_most_recently_used(tmp_path):
    directory = CacheDirectory(str(tmp_path))
    directory.write("e" + cache_store.SUFFIX, cache_store.pack(b"x", 1.0, False))
    path = tmp_path / ("e" + cache_store.SUFFIX)
    os.utime(path, (1_000_000, 1_000_000))
    directory.read("e" + cache_store.SUFFIX)
    assert path.stat().st_mtime > time.time() - 60


def write_aged(directory: CacheDirectory, name: str, size: int, age: int) -> None:
    directory.write(name, cache_store.pack(b"x" * size, 1.0, False))
    stamp = 1_000_000 + age
    os.utime(os.path.join(directory.path, name), (stamp, stamp))


def test_eviction_deletes_the_least_recently_used_until_the_entries_fit(tmp_path):
    directory = CacheDirectory(str(tmp_path))
    for age, name in enumerate(["a", "b", "c", "d"]):  # a is the oldest
        write_aged(directory, name + cache_store.SUFFIX, 1000, age)
    (tmp_path / "notes.txt").write_text("not an entry: never counted nor deleted")
    entry_size = (tmp_path / ("a" + cache_store.SUFFIX)).stat().st_size
    assert directory.evict(2 * entry_size, keep="a" + cache_store.SUFFIX) == 2
    assert sorted(os.listdir(tmp_path)) == ["a" + cache_store.SUFFIX, "d" + cache_store.SUFFIX,
                                            "notes.txt"]  # fmt: skip
    assert directory.evict(10 * entry_size, keep="") == 0


def test_eviction_tolerates_entries_another_process_deleted(tmp_path, monkeypatch):
    directory = CacheDirectory(str(tmp_path))
    for age, name in enumerate(["a", "b", "c"]):
        write_aged(directory, name + cache_store.SUFFIX, 1000, age)
    entry_size = (tmp_path / ("a" + cache_store.SUFFIX)).stat().st_size
    listed = directory._entries()
    os.remove(tmp_path / ("a" + cache_store.SUFFIX))  # gone between listing and deleting
    monkeypatch.setattr(directory, "_entries", lambda: listed)
    assert directory.evict(entry_size, keep="") == 1  # b deleted here; a was already gone
    assert os.listdir(tmp_path) == ["c" + cache_store.SUFFIX]


def test_abandoned_temporary_files_are_removed_and_fresh_ones_kept(tmp_path):
    directory = CacheDirectory(str(tmp_path))
    old = tmp_path / ".writing-1-dead.tmp"
    fresh = tmp_path / ".writing-2-live.tmp"
    old.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(old, (1_000_000, 1_000_000))
    directory.evict(0, keep="")
    assert not old.exists() and fresh.exists()


def test_a_failed_write_leaves_neither_entry_nor_temporary_file(tmp_path, monkeypatch):
    directory = CacheDirectory(str(tmp_path))

    def disk_full(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_store.os, "replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        directory.write("e" + cache_store.SUFFIX, cache_store.pack(b"x", 1.0, False))
    assert os.listdir(tmp_path) == []
