"""Query sets: gold names resolved by their four rules and scored as documented, bad files refused in one line,
and the shipped Seal-Tools and LiveMCPBench registries reproducing their published counts, rebuilt byte for byte."""
from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from core.data import jsonl_tools, mcp
from core.data.benchmarks import build, livemcpbench
from core.data.query_sets import QuerySet, Resolver, read_query_set, summary
from core.data.toolbench import Api, DataUnreadable
from core.settings import PROJECT_ROOT

SHIPPED = PROJECT_ROOT / "data" / "registries"
FORENSIC = "Chemical Engineering/Forensic engineering"
APIS = (
    Api(FORENSIC, "analyzeEvidence"),
    Api("weather", "current"),
    Api("weather/v2", "current"),              # "current" is held by two tools: ambiguous when written bare
    Api("petstore", "listPets", aliases=("GET /pets",)),
    Api("petstore", "addPet", aliases=("post /pets",)),
    Api("clock", "Current"),                   # matches "current" only when case is ignored, by the last rule
    Api("maps", "Get Route"),
    Api("a", "b/c"),                           # "a/b/c": the last "/" gives no key, the one before does
)


def write(tmp_path: Path, *rows: dict | str) -> Path:
    path = tmp_path / "queries.jsonl"
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "keys"), [
    (f"{FORENSIC}/analyzeEvidence", [(FORENSIC, "analyzeEvidence")]),   # tool/api, the tool holding a "/"
    ("weather/v2/current", [("weather/v2", "current")]),
    ("weather/current", [("weather", "current")]),
    ("a/b/c", [("a", "b/c")]),
    ("analyzeEvidence", [(FORENSIC, "analyzeEvidence")]),               # a unique api name
    ("current", [("weather", "current"), ("weather/v2", "current")]),   # an api name held by two: ambiguous
    ("CURRENT", [("weather", "current"), ("weather/v2", "current"), ("clock", "Current")]),
    ("POST /pets", [("petstore", "addPet")]),
    ("get /pets", [("petstore", "listPets")]),                          # an alias, the method in any case
    ("GET  /pets", [("petstore", "listPets")]),
    ("getroute", [("maps", "Get Route")]),                              # case and whitespace ignored
    ("GET /pets/{id}", []), ("nothing/here", []), ("Weather/Current", []),
])
def test_gold_names_resolve_by_the_first_rule_that_matches(name: str, keys: list) -> None:
    assert list(Resolver.of(APIS).candidates(name)) == keys


def test_strict_gold_is_the_resolved_names_and_lenient_adds_every_ambiguous_candidate(tmp_path: Path) -> None:
    qs = read_query_set(write(tmp_path, {"id": 1, "query": "q", "gold": ["analyzeEvidence", "current", "nope",
                                                                         "analyzeEvidence", "GET /pets"]}), APIS)
    (query,) = qs.queries
    assert query.api_list == ((FORENSIC, "analyzeEvidence"), ("petstore", "listPets"))
    assert query.relevant_apis == ((FORENSIC, "analyzeEvidence"), ("weather", "current"), ("weather/v2", "current"),
                                   ("petstore", "listPets"))
    assert query.gold("api_list") == set(query.api_list) and query.gold("relevant") == set(query.relevant_apis)
    assert (qs.names, qs.resolved, qs.ambiguous, qs.unmatched, qs.dropped_queries) == (4, 2, 1, 1, 0)
    assert [(u.query_uid, u.name, len(u.candidates)) for u in qs.unresolved] == [("multi:1", "current", 2),
                                                                                 ("multi:1", "nope", 0)]


def test_a_query_whose_gold_resolves_to_nothing_is_dropped_and_counted(tmp_path: Path) -> None:
    qs = read_query_set(write(tmp_path, {"id": 1, "query": "q", "gold": ["current"]},
                              {"id": 2, "query": "r", "gold": ["nope", "gone"]},
                              {"id": 3, "query": "s", "gold": []}), APIS)
    assert [q.uid for q in qs.queries] == ["multi:1"]   # two tools among its candidates
    assert qs.dropped == ("single:2", "single:3") and qs.dropped_queries == 2
    assert qs.unmatched == 2 and qs.queries[0].api_list == ()
    shown = summary(qs)
    assert "1 queries kept, 2 dropped" in shown and "'nope' (single:2)" in shown and "single:3" in shown


def test_subset_and_group_default_by_distinct_gold_tools_and_string_ids_take_the_line_number(tmp_path: Path) -> None:
    qs = read_query_set(write(tmp_path, {"id": 7, "query": "one tool", "gold": ["weather/current"]},
                              "",
                              {"id": "x", "query": "two tools", "gold": ["weather/current", "listPets"]},
                              {"id": 8, "query": "two APIs of one tool", "gold": ["listPets", "addPet"]},
                              {"id": 7, "query": "given", "gold": ["listPets"], "subset": "city", "group": "g"},
                              {"id": "x", "query": "same id, other subset", "gold": ["listPets"], "subset": "city"}),
                        APIS)
    assert [(q.uid, q.group) for q in qs.queries] == [("single:7", "single"), ("multi:3", "multi"),
                                                      ("single:8", "single"), ("city:7", "g"), ("city:6", "single")]


def test_the_summary_counts_and_shows_at_most_five_examples(tmp_path: Path) -> None:
    rows = [{"id": i, "query": "q", "gold": ["listPets", f"missing{i}", "current"]} for i in range(1, 8)]
    shown = summary(read_query_set(write(tmp_path, *rows), APIS))
    assert "21 gold names: 7 resolved, 7 ambiguous, 7 unmatched" in shown
    assert "'missing5'" in shown and "'missing6'" not in shown and "(2 more)" in shown
    assert "weather/current | weather/v2/current" in shown


GOOD = {"id": 1, "query": "q", "gold": ["listPets"]}


@pytest.mark.parametrize(("rows", "what"), [
    (['{"id": 1, "query": '], "line 1 is not valid JSON"),
    ([GOOD, "[1, 2]"], "line 2 is not a JSON object"),
    ([{"id": 1, "gold": ["listPets"]}], 'line 1: missing "query"'),
    ([{"id": 1, "query": "q"}], 'line 1: missing "gold"'),
    ([{"query": "q", "gold": []}], 'line 1: missing "id"'),
    ([{"id": 1, "query": "  ", "gold": ["listPets"]}], 'line 1: "query" is empty'),
    ([{"id": 1, "query": "q", "gold": "listPets"}], 'line 1: "gold" must be a list'),
    ([{"id": 1, "query": "q", "gold": [3]}], 'line 1: "gold" must hold API names'),
    ([{"id": 1.5, "query": "q", "gold": []}], 'line 1: "id" must be an integer or a string'),
    ([{**GOOD, "subset": ""}], 'line 1: "subset" must be a non-empty string'),
    ([GOOD, {**GOOD, "query": "again"}], "line 2: duplicate id 1 (query single:1, first on line 1)"),
    ([{**GOOD, "id": "a"}, {**GOOD, "id": "a"}], 'line 2: duplicate id "a"'),
    ([{**GOOD, "id": "a"}, {**GOOD, "id": 1}], "line 2: duplicate id 1 (query single:1, first on line 1)"),
    ([{"id": 1, "query": "q", "gold": ["nope"]}, {"id": 2, "query": "q", "gold": []}],
     "names no API of the registry in any query's gold"),
    ([""], "holds no queries"),
])
def test_bad_input_is_one_line_naming_the_file_and_the_line(tmp_path: Path, rows: list, what: str) -> None:
    path = write(tmp_path, *rows)
    with pytest.raises(DataUnreadable) as caught:
        read_query_set(path, APIS)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)) and what in message


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(DataUnreadable, match="cannot be read"):
        read_query_set(path, APIS)
    with pytest.raises(DataUnreadable, match="cannot be read"):
        read_query_set(tmp_path / "absent.jsonl", APIS)


@pytest.mark.parametrize(("text", "names"), [
    ("1. get-weread-rank\n2. write_file", ["get-weread-rank", "write_file"]),
    ("1.  duckduckgo_web_search\n2. `fetch`.", ["duckduckgo_web_search", "fetch"]),
    ("- search, fetch; 3) read_file\n\n(4) write_file\n* search", ["search", "fetch", "read_file", "write_file"]),
    ("12306-query", ["12306-query"]),
])
def test_livemcpbench_gold_text_is_parsed_by_its_rules(text: str, names: list[str]) -> None:
    assert livemcpbench.gold_names(text) == names


# ----------------------------------------------------------------- the shipped benchmarks, from data/registries/

def shipped(name: str, tools_file: str, reader) -> tuple[list[Api], QuerySet]:
    apis = reader(SHIPPED / name / tools_file, name)
    return apis, read_query_set(SHIPPED / name / "queries.jsonl", apis)


@pytest.fixture(scope="module")
def sealtools() -> tuple[list[Api], QuerySet]:
    return shipped("sealtools", "tools.jsonl.gz", jsonl_tools.read)


@pytest.fixture(scope="module")
def livemcp() -> tuple[list[Api], QuerySet]:
    return shipped("livemcpbench", "tools.json", mcp.read)


def test_sealtools_ships_its_4076_apis_and_both_test_splits_all_resolved(sealtools) -> None:
    apis, qs = sealtools
    assert len(apis) == 4076 and len({api.category for api in apis}) == 146
    assert Counter(q.subset for q in qs.queries) == {"in_domain_single": 200, "in_domain_multi": 500,
                                                     "out_domain_single": 94, "out_domain_multi": 560}
    assert all((len(q.api_list) > 1) == (q.group == "multi") for q in qs.queries)
    assert (qs.unresolved, qs.dropped) == ((), ())
    evidence = next(api for api in apis if api.api_name == "analyzeEvidence")
    assert evidence.tool_name == FORENSIC and evidence.category == "Chemical Engineering"
    assert [(p.name, p.required) for p in evidence.parameters][:2] == [("evidence_type", True), ("method", True)]


def test_livemcpbench_ships_its_527_tools_95_tasks_and_the_unresolved_mentions(livemcp) -> None:
    apis, qs = livemcp
    rows = [json.loads(line) for line in (SHIPPED / "livemcpbench" / "queries.jsonl").read_text().splitlines()]
    assert len(apis) == 527 and len(rows) == 95 and sum(row["group"] == "multi" for row in rows) == 78
    assert (qs.resolved, qs.ambiguous, qs.unmatched) == (222, 29, 5)
    assert {u.name for u in qs.unresolved if not u.ambiguous} == {
        "trial_references", "ddg-search", "execute_command", "get_maven_latest_version", "open_document"}
    assert len(qs.queries) == 94 and qs.dropped_queries == 1   # its one gold tool is get_maven_latest_version
    conversion = json.loads((SHIPPED / "livemcpbench" / "conversion.json").read_text())
    counts = conversion["counts"]
    assert (counts["ambiguous"], len(conversion["ambiguous"]), len(conversion["unmatched"])) == (29, 29, 5)


@pytest.mark.skipif(not build.RAW_DIR.is_dir(), reason="no ../shared/registries beside this clone to rebuild from")
@pytest.mark.slow
def test_rebuilding_the_shipped_registries_is_byte_identical(tmp_path: Path) -> None:
    build.build(tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made == sorted(p.relative_to(SHIPPED) for p in SHIPPED.rglob("*") if p.is_file())
    for path in made:
        assert (tmp_path / path).read_bytes() == (SHIPPED / path).read_bytes(), path
    assert gzip.decompress((tmp_path / "sealtools" / "tools.jsonl.gz").read_bytes()).count(b"\n") == 4076
