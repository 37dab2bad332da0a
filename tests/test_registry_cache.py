"""The columnar registry cache: same APIs as parsing, rebuilt when the data changes or the file is damaged,
also when the damage still unmarshals (empty, cut, edited) or the data changed under the same path, size and time."""
from __future__ import annotations

import hashlib
import marshal
import os
from pathlib import Path

import pytest

import core.data.registry_cache as rc
from core.data.toolbench import Api, load_registry
from tests.helpers import SMALL_APIS, write_compact_data

ODD = Api(" Spaced Tool", "naïve ünïcode \"quoted\"\n", "", "line one\nline two", "name_only")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_compact_data(tmp_path / "data", [*SMALL_APIS, ODD], [])


def test_the_cache_gives_what_parsing_gives_and_skips_parsing_next_time(data: Path, tmp_path: Path,
                                                                        monkeypatch) -> None:
    cache = tmp_path / "cache"
    first = rc.load_registry_cached(data, "full", cache)
    assert first == load_registry(data, "full") and ODD in first  # raw names, unicode and newlines intact
    assert len(list(cache.glob("registry-*.marshal"))) == 1

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again")

    monkeypatch.setattr(rc, "load_registry", no_parsing)
    assert rc.load_registry_cached(data, "full", cache) == first


def test_new_data_is_parsed_again(data: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    rc.load_registry_cached(data, "full", cache)
    write_compact_data(data, SMALL_APIS[:2], [])
    stat = (data / "registry.jsonl.gz").stat()
    os.utime(data / "registry.jsonl.gz", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert rc.load_registry_cached(data, "full", cache) == list(SMALL_APIS[:2])


@pytest.mark.parametrize("damage", [b"not marshal", marshal.dumps({"tool_name": ["a"]}), marshal.dumps(
    {"tool_name": ["a", "b"], "api_name": ["x"], "category": [], "description": [], "doc_source": []}),
    marshal.dumps(["a list"]), b""], ids=["garbage", "missing columns", "ragged", "not a dict", "empty"])
def test_a_damaged_cache_is_ignored_and_rewritten(data: Path, tmp_path: Path, damage: bytes, caplog) -> None:
    cache = tmp_path / "cache"
    good = rc.load_registry_cached(data, "full", cache)
    [path] = cache.glob("registry-*.marshal")
    path.write_bytes(damage)
    assert rc.load_registry_cached(data, "full", cache) == good
    assert "unreadable" in caplog.text
    assert rc._read(path, rc.source_hash(data / "registry.jsonl.gz")) == good  # rewritten


def _columns(apis) -> dict[str, list[str]]:
    return {f: [getattr(a, f) for a in apis] for f in rc.FIELDS}


def _record(source: Path, apis, **changes) -> bytes:
    """A cache record as _write makes it, with some fields changed."""
    columns = marshal.dumps(_columns(apis))
    record = {"source_sha256": rc.source_hash(source), "n": len(apis), "columns": columns,
              "columns_sha256": hashlib.sha256(columns).hexdigest(), **changes}
    return marshal.dumps(record)


def _flip_one_character(columns: bytes) -> bytes:
    """The same columns, one description character changed: still valid marshal, same length."""
    at = columns.index(b"line two")
    return (columns[:at] + b"l" + columns[at + 1:] if columns[at:at + 1] != b"l"
            else columns[:at] + b"L" + columns[at + 1:])


@pytest.mark.parametrize("forge", [
    lambda source, apis: marshal.dumps(_columns([])),  # the old format, valid but empty
    lambda source, apis: marshal.dumps(_columns(apis[:2])),  # the old format, cut to 2 APIs
    lambda source, apis: _record(source, []),  # a consistent record of no APIs
    lambda source, apis: _record(source, apis[:2], n=len(apis)),  # cut, count kept
    lambda source, apis: _record(source, apis, source_sha256="0" * 64),  # made from other bytes
    lambda source, apis: _record(source, apis, columns=_flip_one_character(marshal.dumps(_columns(apis)))),
], ids=["old-format-empty", "old-format-cut", "empty-record", "cut-record", "other-source", "edited-column"])
def test_a_cache_that_unmarshals_but_disagrees_is_rebuilt(data: Path, tmp_path: Path, forge, caplog) -> None:
    cache = tmp_path / "cache"
    good = rc.load_registry_cached(data, "full", cache)
    [path] = cache.glob("registry-*.marshal")
    path.write_bytes(forge(data / "registry.jsonl.gz", good))
    assert rc.load_registry_cached(data, "full", cache) == good
    assert "stale" in caplog.text or "unreadable" in caplog.text
    assert rc._read(path, rc.source_hash(data / "registry.jsonl.gz")) == good  # rewritten


def test_data_changed_under_the_same_path_size_and_time_is_parsed_again(tmp_path: Path) -> None:
    """A file edited in place and given its old time back (cp -p, an archive, a checkout) keeps its cache name."""
    data = tmp_path / "plain"
    data.mkdir()
    source = data / "registry_full.jsonl"
    source.write_text("".join(f'{{"tool_name": "{a.tool_name}", "api_name": "{a.api_name}", "description": '
                              f'"{a.description}"}}\n' for a in SMALL_APIS))
    cache = tmp_path / "cache"
    first = rc.load_registry_cached(data, "full", cache)
    stat = source.stat()
    source.write_text(source.read_text().replace("A random joke", "A random poem"))
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_size == stat.st_size
    assert [p.name for p in cache.glob("registry-*.marshal")] == [rc.cache_file(source, cache).name]  # same name
    again = rc.load_registry_cached(data, "full", cache)
    assert again == load_registry(data, "full") != first
    assert "A random poem" in {a.description for a in again}
