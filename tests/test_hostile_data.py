"""Data that is there but not what the lab reads (issue 37, cases 1, 5 and 8): each is refused in one line naming
the file and what is wrong, by the loaders and by `python -m core` (exit 1, no traceback).

Before the fix: "full" without registry_full.jsonl.gz was the 4,940-API documented registry under the full one's
name; a broken or Latin-1 test file gave JSON's or the codec's message with no file named; valid JSON of the
wrong shape gave AttributeError, TypeError, KeyError or StopIteration.
"""
from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from core.cli.main import main
from core.data.registry_cache import load_registry_cached
from core.data.toolbench import DataUnreadable, load_queries, load_registry
from core.settings import DataNotFoundError
from tests.helpers import write_official_layout, write_tiny_data

TOOLS = Path("toolenv") / "tools"
TESTS = Path("test_instruction")
LATIN_1 = json.dumps([{"query_id": 1, "query": "caf\u00e9 hotels"}], ensure_ascii=False).encode("latin-1")


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())


def _only_documented(folder: Path) -> Path:
    """Tiny compact data as a folder holding the documented registry and the queries, no registry_full.jsonl.gz."""
    write_tiny_data(folder)
    (folder / "registry_full.jsonl.gz").unlink()
    return folder


def one_error_line(argv: list[str], data: Path, capsys: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> str:
    """What `python -m core argv` prints on `data`: exactly one `error:` line and exit 1, nothing on stdout."""
    monkeypatch.setenv("TOOLBENCH_DATA", str(data))
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("error: "), (code, out, err)
    assert "Traceback" not in err
    return err


# ---------------------------------------------------------------- case 1: "full" without its file

def test_full_without_its_file_is_refused_naming_it(tmp_path: Path) -> None:
    data = _only_documented(tmp_path / "data")
    for load in (lambda: load_registry(data, "full"), lambda: load_registry_cached(data, "full", tmp_path / "cache")):
        with pytest.raises(DataNotFoundError) as caught:
            load()
        message = str(caught.value)
        assert "registry_full.jsonl.gz" in message and "REGISTRY=documented" in message and "\n" not in message
    assert len(load_registry(data, "documented")) == len(load_registry(tmp_path / "data", "documented")) > 0


@pytest.mark.parametrize("argv", [["query", "hotels"], ["index", "--json"]])
def test_the_cli_refuses_full_without_its_file(tiny_env: dict[str, str], tmp_path: Path, argv: list[str],
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    err = one_error_line(argv, _only_documented(tmp_path / "only-documented"), capsys, monkeypatch)
    assert "No full registry (registry_full.jsonl.gz)" in err and "REGISTRY=documented" in err


def test_the_tests_tiny_data_holds_both_registries(tmp_path: Path) -> None:
    data = write_tiny_data(tmp_path / "data")
    assert load_registry(data, "full") == load_registry(data, "documented")


# ---------------------------------------------------------------- cases 5 and 8: official-layout files

def _official(root: Path, rel: Path, value: object) -> Path:
    write_official_layout(root)
    _write(root / rel, value)
    return root


def _without_tools(root: Path) -> Path:
    write_official_layout(root)
    shutil.rmtree(root / TOOLS)
    return root


def _empty_tools(root: Path) -> Path:
    write_official_layout(root)
    shutil.rmtree(root / TOOLS)
    (root / TOOLS).mkdir()
    return root


G1 = TESTS / "G1_instruction.json"
L = TOOLS / "Travel" / "L.json"
REGISTRY_CASES: dict[str, tuple[Callable[[Path], Path], str, str]] = {
    # id: (make the folder, the file the line names, what it says)
    "tool-file-is-a-list": (lambda r: _official(r, L, [1, 2]), str(L),
                            "a tool is an object with `tool_name` and `api_list`, got a list"),
    "api_list-of-strings": (lambda r: _official(r, L, {"tool_name": "L", "api_list": ["a", "b"]}), str(L),
                            "an `api_list` item is an object with `name` and `description`, got text (item 1)"),
    "api_list-an-object": (lambda r: _official(r, L, {"tool_name": "L", "api_list": {"name": "a"}}), str(L),
                           "`api_list` is a list of APIs, got an object"),
    "tool_name-a-number": (lambda r: _official(r, L, {"tool_name": 7, "api_list": []}), str(L),
                           "`tool_name` is text, got a number"),
    "api-description-a-list": (lambda r: _official(r, L, {"tool_name": "L", "api_list": [
        {"name": "a", "description": ["x"]}]}), str(L), "`api_list` item 1's `description` is text, got a list"),
    "toolenv-without-tools": (_without_tools, "toolenv", "has no tools/ folder"),
    "empty-toolenv-tools": (_empty_tools, str(TOOLS), "holds no APIs: no tool files"),
}
QUERY_CASES: dict[str, tuple[Callable[[Path], Path], str, str]] = {
    "test-file-not-json": (lambda r: _official(r, G1, b'[{"query_id": 1, "query": }]'), str(G1),
                           "is not valid JSON (Expecting value at line 1 column 27)"),
    "test-file-latin-1": (lambda r: _official(r, G1, LATIN_1), str(G1), "is not UTF-8 text (byte 0xe9 at offset"),
    "test-file-an-object": (lambda r: _official(r, G1, {"a": 1}), str(G1),
                            'a test file is a list of queries, got an object with "a"'),
    "query-without-query_id": (lambda r: _official(r, G1, [{"query": "hotels", "api_list": []}]), str(G1),
                               "query 1 has no `query_id`"),
    "query-a-list": (lambda r: _official(r, G1, [[1, "hotels"]]), str(G1),
                     "a query is an object with `query_id` and `query`, got a list (query 1)"),
    "query_id-not-a-number": (lambda r: _official(r, G1, [{"query_id": "seven", "query": "hotels"}]), str(G1),
                              "query 1's `query_id` is a whole number, got text"),
    "query-text-a-number": (lambda r: _official(r, G1, [{"query_id": 1, "query": 5}]), str(G1),
                            "query 1's `query` is text, got a number"),
    "gold-api-without-api_name": (lambda r: _official(r, G1, [{"query_id": 1, "query": "hotels", "api_list": [
        {"tool_name": "Hotels"}]}]), str(G1), "query 1's `api_list` item 1 is a [tool, api] pair or an object"),
    "relevant-apis-not-a-list": (lambda r: _official(r, G1, [{"query_id": 1, "query": "hotels",
                                                              "relevant APIs": "Hotels"}]), str(G1),
                                 "query 1's `relevant APIs` is a list of APIs, got text"),
}


def _refused(load: Callable[[], object], named: str, says: str) -> str:
    with pytest.raises(DataUnreadable) as caught:
        load()
    message = str(caught.value)
    assert named in message and says in message and "\n" not in message, message
    assert isinstance(caught.value, DataNotFoundError)  # what every page and command reports in one line
    return message


@pytest.mark.parametrize("case", REGISTRY_CASES, ids=list(REGISTRY_CASES))
def test_a_wrong_shaped_tool_folder_is_named_with_what_is_wrong(tmp_path: Path, case: str) -> None:
    make, named, says = REGISTRY_CASES[case]
    root = make(tmp_path / "official")
    _refused(lambda: load_registry(root, "documented"), named, says)


@pytest.mark.parametrize("case", QUERY_CASES, ids=list(QUERY_CASES))
def test_a_wrong_shaped_test_file_is_named_with_what_is_wrong(tmp_path: Path, case: str) -> None:
    make, named, says = QUERY_CASES[case]
    root = make(tmp_path / "official")
    _refused(lambda: load_queries(root), named, says)


@pytest.mark.parametrize("case", ["tool-file-is-a-list", "api_list-of-strings", "toolenv-without-tools",
                                  "empty-toolenv-tools"])
def test_query_on_a_wrong_shaped_tool_folder_prints_one_line(tiny_env: dict[str, str], tmp_path: Path, case: str,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    make, named, says = REGISTRY_CASES[case]
    err = one_error_line(["query", "find hotels in London"], make(tmp_path / "official"), capsys, monkeypatch)
    assert named in err and says in err


@pytest.mark.parametrize("case", ["test-file-not-json", "test-file-latin-1", "test-file-an-object",
                                  "query-without-query_id"])
def test_eval_on_a_wrong_shaped_test_file_prints_one_line(tiny_env: dict[str, str], tmp_path: Path, case: str,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    make, named, says = QUERY_CASES[case]
    err = one_error_line(["eval", "--arch", "rtp", "--k", "1"], make(tmp_path / "official"), capsys, monkeypatch)
    assert named in err and says in err


def test_the_intact_official_layout_still_loads_and_skips_a_tool_file_that_is_not_json(tmp_path: Path) -> None:
    """ToolBench ships a few tool files that are not JSON: skipped as before (write_official_layout has one)."""
    write_official_layout(tmp_path)
    assert (tmp_path / TOOLS / "Finance" / "broken.json").is_file()
    assert len(load_registry(tmp_path, "documented")) == 3 and len(load_queries(tmp_path)) == 1


def test_compact_gold_lists_are_read_as_before(tmp_path: Path) -> None:
    """The shared pair check reads [tool, api] lists and {tool_name, api_name} objects alike."""
    row = {"subset": "G1_instruction", "group": "G1", "query_id": 3, "query": "q",
           "relevant_apis": [[" A", "x"]], "api_list": [{"tool_name": " A", "api_name": "x"}, ["B", "y"]]}
    with gzip.open(tmp_path / "queries.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
    (query,) = load_queries(tmp_path)
    assert query.relevant_apis == ((" A", "x"),) and query.api_list == ((" A", "x"), ("B", "y"))
