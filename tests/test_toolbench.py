from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from core.settings import DataNotFoundError, Settings
from core.data.toolbench import DataUnreadable, load_queries, load_registry
from tests.helpers import write_official_layout


def test_official_layout_loader(tmp_path: Path) -> None:
    write_official_layout(tmp_path)
    apis = load_registry(tmp_path)
    assert [a.key for a in apis] == [("FX", "rate"), (" Hotels", "search"), (" Hotels", "details")]
    assert apis[1].category == "Travel"
    assert apis[2].description == ""
    assert apis[1].document == " Hotels/search: Find hotels"  # names kept byte-for-byte
    (query,) = load_queries(tmp_path)
    assert query.subset == "G2_instruction" and query.group == "G2" and query.query_id == 7
    assert query.gold("relevant") == {(" Hotels", "search"), ("FX", "rate")}
    assert query.gold("api_list") == query.gold("relevant")


def test_compact_loader(tmp_path: Path) -> None:
    rows = [{"category": "", "tool_name": " A", "api_name": "x", "description": "d", "doc_source": "name_only"},
            {"category": "C", "tool_name": " A", "api_name": "x", "description": "dup"}]
    with gzip.open(tmp_path / "registry.jsonl.gz", "wt") as fh:
        fh.write("\n".join(json.dumps(r) for r in rows) + "\n")
    apis = load_registry(tmp_path, "documented")
    assert len(apis) == 1 and apis[0].description == "d" and apis[0].doc_source == "name_only"
    with pytest.raises(DataNotFoundError, match="No full registry .registry_full.jsonl.gz."):
        load_registry(tmp_path, "full")  # never the documented file under the full registry's name


def test_corrupt_jsonl_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "registry.jsonl").write_text('{"tool_name": "a", "api_name": "b"}\n{oops\n')
    with pytest.raises(DataUnreadable, match="line 2 is not valid JSON"):
        load_registry(tmp_path, "documented")
    # The file's own line numbers, blank lines counted (one reader for every JSONL: core.data.json_lines).
    (tmp_path / "registry.jsonl").write_text('{"tool_name": "a", "api_name": "b"}\n\n{"tool_name": "a"}\n')
    with pytest.raises(DataUnreadable, match="line 3 lacks a usable field"):
        load_registry(tmp_path, "documented")


def test_unknown_gold_definition(tmp_path: Path) -> None:
    write_official_layout(tmp_path)
    with pytest.raises(ValueError, match="gold definition"):
        load_queries(tmp_path)[0].gold("both")


def test_data_dir_resolution(tmp_path: Path) -> None:
    write_official_layout(tmp_path)
    assert Settings.from_env(env={"TOOLBENCH_DATA": str(tmp_path)}).data_dir() == tmp_path
    with pytest.raises(DataNotFoundError, match="TOOLBENCH_DATA"):
        Settings.from_env(env={"TOOLBENCH_DATA": str(tmp_path / "missing")}).data_dir()


def test_real_data_counts(real_data: Path) -> None:
    queries = load_queries(real_data)
    assert len(queries) == 1100
    documented = load_registry(real_data, "documented")
    assert len(documented) == 4940
    keys = {a.key for a in documented}
    assert all(k in keys for q in queries for k in q.relevant_apis)  # SOURCES.md: 100% gold coverage
