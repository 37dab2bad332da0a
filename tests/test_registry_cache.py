"""The columnar registry cache: same APIs as parsing, rebuilt when the data changes or the file is damaged."""
from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

import core.data.registry_cache as rc
from core.data.toolbench import Api, load_registry
from tests.helpers import SMALL_APIS, write_compact_data, write_official_layout

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
    assert rc._read(path) == good  # rewritten


def test_an_unwritable_cache_costs_speed_not_correctness(data: Path, tmp_path: Path, caplog) -> None:
    blocked = tmp_path / "a_file"
    blocked.write_text("not a directory")
    assert rc.load_registry_cached(data, "full", blocked) == load_registry(data, "full")
    assert "could not write" in caplog.text


def test_the_official_layout_is_parsed_directly(tmp_path: Path) -> None:
    write_official_layout(tmp_path / "official")
    cache = tmp_path / "cache"
    assert rc.load_registry_cached(tmp_path / "official", "full", cache) == load_registry(tmp_path / "official")
    assert not cache.exists()
