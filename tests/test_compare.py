"""Two stored systems compared query by query (core.analysis.compare, ResultsReader.compare_systems, `python -m core
compare`): on a real SQLite store of two fake models, the figures are the report's, to the last bit."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from core.agents.factory import Agents
from core.agents.stubs import Stub, StubOutcome
from core.agents.llm.base import Usage
from core.analysis.compare import COMPARABLE_ARCHS, Side, compare_rows, summarise
from core.analysis.model_size import model_size_table
from core.analysis.paper import load_paper
from core.analysis.reader import ResultsReader
from core.cli.compare import render_text
from core.cli.main import main
from core.evaluation.stats import bootstrap_ci
from core.study.hybrid import run_hybrid
from core.study.ksweep import run_ksweep
from core.study.main_study import run_main
from core.store.store import Store
from core.data.toolbench import Query
from tests.helpers import CV, FP, FX, H, IP, JC, JK, WX, FakePlanner, FakeStubWriter, bench_context, make_retriever

ONE, TWO = "fake:fake-llm-1", "fake:fake-llm-2"  # system names that hold a ':' themselves
SUBSETS = ("G1_instruction", "G2_instruction")
MAIN_K = 2  # of ten APIs: at k=5 every side recalls nearly everything
# fake-llm-1's stub writer puts these words in API terms ("laugh" -> "random joke"), one of them wrongly
PHRASEBOOK = {"laugh": "random joke", "sleep": "hotels", "soccer": "football player stats",
              "money": "currency exchange rate", "dollars": "football transfers", "rain": "weather forecast",
              "where": "ip geolocation", "messi": "the greatest ever"}
# Queries that RtP misses and the phrasebook finds, and the other way round: on this store every outcome occurs.
SPECS = (
    ("G1_instruction", "Find hotels in Paris with prices", (H,)),
    ("G1_instruction", "Something to make me laugh", (JK,)),
    ("G1_instruction", "Weather forecast for Berlin", (WX,)),
    ("G1_instruction", "A cheap place to sleep", (H,)),
    ("G1_instruction", "Ping 1.2.3.4 origin", (IP,)),
    ("G1_instruction", "Convert dollars", (CV,)),
    ("G1_instruction", "Will it rain", (WX,)),
    ("G1_instruction", "Statistics of the football player Messi", (FP,)),
    ("G2_instruction", "Find hotels in London and check the currency exchange rate", (H, FX)),
    ("G2_instruction", "Something to laugh at and will it rain", (JK, WX)),
    ("G2_instruction", "Show soccer stats and the weather forecast", (FP, WX)),
    ("G2_instruction", "Where am I and a place to sleep", (IP, H)),
    ("G2_instruction", "Convert dollars and tell me a random joke", (CV, JK)),
    ("G2_instruction", "A random joke and the weather forecast for a city", (JK, WX)),
    ("G2_instruction", "Ping my box and find a snack", (IP, JC)),
    ("G2_instruction", "money and sleep", (FX, H)),
    ("G2_instruction", "Nap somewhere and munch something", (FP, CV)),
)
COPIES = 3  # each query thrice (ids of its own): 8 queries give too few bootstrap means to tell two orders apart
QUERIES = [Query(subset, subset[:2], 200 + 100 * copy + i, text, gold, gold) for copy in range(COPIES)
           for i, (subset, text, gold) in enumerate(SPECS)]


class PhrasebookStubWriter(FakeStubWriter):
    """fake-llm-1: a stub per ' and '-part, in PHRASEBOOK's words alone when it knows one (so the hybrid's raw query
    adds something), else the part itself; from run 1 on a joke stub more, so its two runs differ and recall is a
    mean over runs."""

    def write(self, query: str) -> StubOutcome:
        self.calls += 1
        parts = [p.strip() for p in query.split(" and ") if p.strip()]
        texts = [" ".join(PHRASEBOOK[w] for w in p.lower().split() if w in PHRASEBOOK) or p for p in parts]
        stubs = [Stub("_".join(text.lower().split()[:3]), text) for text in texts]
        if self.run_index % 2:
            stubs.append(Stub("get_random_joke", "a random joke"))
        return StubOutcome(tuple(stubs), self.backend, self.model, self.prompt_version, Usage(30, 12, 4), 0.01)


class WholeQueryStubWriter(FakeStubWriter):
    """fake-llm-2: one stub, the query itself."""

    model = "fake-llm-2"

    def write(self, query: str) -> StubOutcome:
        self.calls += 1
        return StubOutcome((Stub("_".join(query.lower().split()[:3]), query),), self.backend, self.model,
                           self.prompt_version, Usage(30, 12, 0), 0.01)


class SecondPlanner(FakePlanner):
    model = "fake-llm-2"


class ThirdStubWriter(WholeQueryStubWriter):
    model = "fake-llm-3"


class ThirdPlanner(FakePlanner):
    model = "fake-llm-3"


def first_model(run_index: int) -> Agents:
    return Agents(PhrasebookStubWriter(run_index), FakePlanner())


def second_model(run_index: int) -> Agents:
    return Agents(WholeQueryStubWriter(run_index), SecondPlanner())


def third_model(run_index: int) -> Agents:
    return Agents(ThirdStubWriter(run_index), ThirdPlanner())


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """fake-llm-1: main (2 runs), k sweep and hybrid; fake-llm-2: main (1 run) only."""
    url = f"sqlite:///{tmp_path_factory.mktemp('compare') / 'results.sqlite'}"
    store = Store(url)
    context = bench_context(store, make_retriever(), QUERIES, commit="abc123")
    run_main(context, runs=2, k=MAIN_K, agents_for=first_model)
    run_ksweep(context, ks=(1, 3))
    run_hybrid(context)
    run_main(context, runs=1, k=MAIN_K, agents_for=second_model)
    store.close()
    return url


@pytest.fixture
def reader(url: str) -> ResultsReader:
    return ResultsReader(url)


def comparison(reader: ResultsReader, a: Side, b: Side, subset: str | None = None, k: int | None = None):
    return summarise(reader.compare_systems(a, b, subset, "api_list", k))


def test_the_store_holds_two_systems_whose_sides_differ(reader: ResultsReader) -> None:
    assert reader.backends() == [ONE, TWO]
    rows = reader.compare_systems(Side(ONE, "ptr"), Side(TWO, "ptr"))
    assert len(rows) == len(QUERIES) and (rows["diff"] > 0).any() and (rows["diff"] < 0).any()
    assert (reader.compare_systems(Side(ONE, "hybrid"), Side(ONE, "ptr"))["diff"] != 0).any()
    for subset in SUBSETS:  # every outcome, in each subset: the counts below are tested on all four
        outcomes = reader.compare_systems(Side(ONE, "ptr"), Side(ONE, "rtp"), subset)["outcome"]
        assert set(outcomes) == {"a_wins", "tie", "both_miss", "b_wins"}, subset


@pytest.mark.parametrize("arch,columns", [("ptr", ("ptr_minus_rtp", "ptr_low", "ptr_high")),
                                          ("hybrid", ("hybrid_minus_rtp", "hybrid_low", "hybrid_high"))])
def test_a_systems_arch_against_its_rtp_is_the_model_size_tables_difference_exactly(
        reader: ResultsReader, arch: str, columns: tuple[str, str, str]) -> None:
    table = model_size_table(reader, load_paper(), {})
    ours = table[(table["source"] == "this lab") & (table["model"] == "fake fake-llm-1")]
    assert sorted(ours["subset"]) == list(SUBSETS)
    for row in ours.itertuples(index=False):
        c = comparison(reader, Side(ONE, arch), Side(ONE, "rtp"), row.subset)
        assert (c.mean_diff, c.low, c.high) == tuple(getattr(row, name) for name in columns)
        assert c.n == row.n and c.b_mean == row.rtp_recall


def test_ptr_against_rtp_is_the_paired_tests_row_exactly_at_the_main_k_and_another(reader: ResultsReader) -> None:
    for k in (MAIN_K, 3):
        paired = reader.paired_tests("api_list", k, ONE)
        for row in paired[paired["metric"] == "recall"].itertuples(index=False):
            c = comparison(reader, Side(ONE, "ptr"), Side(ONE, "rtp"), row.subset, k)
            assert (c.n, c.a_mean, c.b_mean, c.mean_diff, c.low, c.high) == (
                row.n, row.ptr_mean, row.rtp_mean, row.mean_diff, row.diff_low, row.diff_high)


def test_the_interval_resamples_the_queries_in_the_reports_order_not_the_tables(reader: ResultsReader) -> None:
    """compare_rows sorts by difference; the bootstrap must see the queries in the report's order, and on this
    store the two orders give different intervals (so the tests above would catch the wrong one)."""
    differs = 0
    for subset in SUBSETS:
        rows = reader.compare_systems(Side(ONE, "ptr"), Side(ONE, "rtp"), subset)
        c, shuffled = summarise(rows), summarise(rows.sample(frac=1, random_state=1))
        assert (shuffled.low, shuffled.high) == (c.low, c.high)  # whatever order the rows come in
        differs += bootstrap_ci(rows["diff"].tolist()) != (c.low, c.high)
    assert differs


def test_the_outcome_counts_add_up_and_match_a_hand_count(reader: ResultsReader) -> None:
    pq = reader.per_query(None, "api_list", MAIN_K, ONE)
    for subset in SUBSETS:
        part = pq[pq["subset"] == subset]
        ptr, rtp = part["ptr_recall"], part["rtp_recall"]
        both_miss = int(((ptr == 0) & (rtp == 0)).sum())
        hand = (int((ptr > rtp).sum()), int((ptr < rtp).sum()), int(((ptr == rtp) & (ptr > 0)).sum()), both_miss)
        c = comparison(reader, Side(ONE, "ptr"), Side(ONE, "rtp"), subset)
        assert (c.a_wins, c.b_wins, c.ties, c.both_miss) == hand
        assert c.a_wins + c.b_wins + c.ties + c.both_miss == c.n == len(part)
        wins = reader.win_counts("api_list", ONE).set_index("subset").loc[subset]
        assert (c.a_wins, c.b_wins, c.ties, c.both_miss) == (wins["ptr_wins"], wins["rtp_wins"], wins["tie"],
                                                              wins["both_miss"])


def test_swapping_the_sides_negates_the_difference_and_swaps_the_wins(reader: ResultsReader) -> None:
    a, b = Side(ONE, "ptr"), Side(TWO, "ptr")
    forward, backward = reader.compare_systems(a, b), reader.compare_systems(b, a)
    joined = forward.merge(backward, on=["subset", "query_id"], suffixes=("", "_swapped"))
    assert len(joined) == len(forward) == len(backward)
    assert (joined["diff"] == -joined["diff_swapped"]).all()
    assert (joined["a_recall"] == joined["b_recall_swapped"]).all()
    swapped = {"a_wins": "b_wins", "b_wins": "a_wins", "tie": "tie", "both_miss": "both_miss"}
    assert (joined["outcome"].map(swapped) == joined["outcome_swapped"]).all()
    f, s = summarise(forward), summarise(backward)
    assert (f.a_wins, f.b_wins, f.ties, f.both_miss, f.a_mean) == (s.b_wins, s.a_wins, s.ties, s.both_miss, s.b_mean)
    assert f.a_wins != f.b_wins  # the swap is seen
    assert f.mean_diff == -s.mean_diff and (f.low, f.high) == pytest.approx((-s.high, -s.low))


def test_rows_are_the_queries_both_define_largest_difference_first() -> None:
    a = pd.DataFrame({"subset": ["G2_instruction", "G1_instruction", "G1_instruction", "G1_instruction"],
                      "query_id": [1, 2, 3, 4], "recall": [0.5, 0.0, 1.0, None]})
    b = pd.DataFrame({"subset": ["G2_instruction", "G1_instruction", "G1_instruction", "G1_instruction"],
                      "query_id": [1, 2, 9, 4], "recall": [0.25, 0.0, 1.0, 1.0]})
    rows = compare_rows(a, b)
    assert rows[["subset", "query_id", "outcome"]].values.tolist() == [["G2_instruction", 1, "a_wins"],
                                                                        ["G1_instruction", 2, "both_miss"]]
    assert rows["diff"].tolist() == [0.25, 0.0]
    ties = compare_rows(a.assign(recall=0.5), b.assign(recall=0.5))
    assert ties["outcome"].tolist() == ["tie"] * 3
    assert ties["subset"].tolist() == ["G1_instruction", "G1_instruction", "G2_instruction"]  # equal diffs: query order
    empty = summarise(compare_rows(a.iloc[0:0], b))
    assert empty.n == 0 and empty.to_json()["low"] is None


def test_a_side_parses_on_the_last_colon_and_is_labelled_from_its_setup(reader: ResultsReader) -> None:
    setups = {system: reader.setup(system) for system in reader.backends()}
    side = Side.parse(f"{ONE}:ptr", setups)
    assert side == Side(ONE, "ptr") and side.label == "fake fake-llm-1 · PtR"
    assert Side.parse(f"{TWO}:hybrid", setups).label == "fake fake-llm-2 · hybrid"
    assert Side("offline", "rtp").label == "offline · RtP"  # no setup: the system's name
    for text, words in ((ONE, "a side is SYSTEM:ARCH"), ("ptr", "a side is SYSTEM:ARCH"),
                        (":ptr", "a side is SYSTEM:ARCH"), ("fake:fake-llm-3:ptr", f"one of {ONE}, {TWO}, not"),
                        (f"{ONE}:PtR", "arch must be one of rtp, ptr, hybrid, not 'PtR'")):
        with pytest.raises(ValueError, match=words) as error:
            Side.parse(text, setups)
        assert "\n" not in str(error.value)
    assert COMPARABLE_ARCHS == ("rtp", "ptr", "hybrid")


def test_a_side_with_nothing_stored_reads_empty(reader: ResultsReader) -> None:
    assert reader.side_recall(TWO, "hybrid").empty  # fake-llm-2 has no hybrid runs
    assert reader.side_recall(ONE, "hybrid", k=3).empty  # the hybrid runs at the main k only
    assert reader.side_recall("offline", "rtp").empty
    assert len(reader.side_recall(ONE, "hybrid")) == len(reader.side_recall(ONE, "ptr", k=3)) == len(QUERIES)
    assert reader.compare_systems(Side(ONE, "ptr"), Side(TWO, "hybrid")).empty


def test_sides_whose_main_k_differ_need_a_k(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'two_k.sqlite'}"
    store = Store(url)
    context = bench_context(store, make_retriever(), QUERIES, commit="abc123")
    run_main(context, runs=1, k=MAIN_K, agents_for=first_model)
    run_main(context, runs=1, k=3, agents_for=second_model)
    store.close()
    reader = ResultsReader(url)
    with pytest.raises(ValueError, match=r"have different main k \(2, 3\): name one k"):
        reader.compare_systems(Side(ONE, "ptr"), Side(TWO, "ptr"))
    assert len(reader.compare_systems(Side(TWO, "ptr"), Side(TWO, "rtp"))) == len(QUERIES)  # one system: its k


def test_a_comparisons_provenance_names_the_runs_of_the_subsets_it_compares(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture) -> None:
    """fake-llm-2 stored on G1 only: fake-llm-1's G2 runs gave no row, so they are not named. fake-llm-3, on G2
    only, has no query in common with fake-llm-2."""
    url = f"sqlite:///{tmp_path / 'g1_only.sqlite'}"
    store = Store(url)
    run_main(bench_context(store, make_retriever(), QUERIES, commit="abc123"), runs=1, k=MAIN_K,
             agents_for=first_model)
    g1 = [q for q in QUERIES if q.subset == "G1_instruction"]
    g2 = [q for q in QUERIES if q.subset == "G2_instruction"]
    run_main(bench_context(store, make_retriever(), g1, commit="def456"), runs=1, k=MAIN_K, agents_for=second_model)
    run_main(bench_context(store, make_retriever(), g2, commit="def456"), runs=1, k=MAIN_K, agents_for=third_model)
    store.close()
    reader = ResultsReader(url)
    runs = reader.runs()
    ptr = runs[(runs["arch"] == "ptr") & (runs["llm_model"] == "fake-llm-1")]
    assert len(reader.side_provenance(ONE, "ptr")["run_ids"]) == 2
    assert main(["compare", "--a", f"{ONE}:ptr", "--b", f"{TWO}:ptr", "--json", "--db", url]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["n"] == len(g1) and {r["subset"] for r in out["rows"]} == {"G1_instruction"}
    assert out["provenance"]["a"]["run_ids"] == ptr.loc[ptr["subset"] == "G1_instruction", "id"].tolist()
    assert (out["provenance"]["a"]["commit"], out["provenance"]["b"]["commit"]) == ("abc123", "def456")
    assert main(["compare", "--a", f"{TWO}:ptr", "--b", "fake:fake-llm-3:rtp", "--db", url]) == 2
    assert capsys.readouterr().err == ("error: fake fake-llm-2 · PtR and fake fake-llm-3 · RtP have no query in "
                                       "common\n")


def test_the_cli_prints_json_text_and_a_csv_with_provenance(url: str, reader: ResultsReader, tiny_env: dict,
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("DATABASE_URL", url)
    target = tmp_path / "rows.csv"
    assert main(["compare", "--a", f"{ONE}:ptr", "--b", f"{ONE}:rtp", "--subset", "G2_instruction", "--json",
                 "--csv", str(target)]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = reader.compare_systems(Side(ONE, "ptr"), Side(ONE, "rtp"), "G2_instruction")
    assert out["summary"] == summarise(rows).to_json()
    assert (out["a"]["label"], out["b"]["label"]) == ("fake fake-llm-1 · PtR", "fake fake-llm-1 · RtP")
    assert (out["subset"], out["gold"], out["k"]) == ("G2_instruction", "api_list", MAIN_K)
    assert [r["query_id"] for r in out["rows"]] == rows["query_id"].tolist()
    runs = reader.runs()
    main_ptr = runs[(runs["kind"] == "main") & (runs["arch"] == "ptr") & (runs["subset"] == "G2_instruction")
                    & (runs["llm_model"] == "fake-llm-1")]
    provenance = out["provenance"]["a"]
    assert provenance["run_ids"] == main_ptr["id"].tolist() and len(provenance["run_ids"]) == 2
    assert provenance["commit"] == "abc123" and provenance["llm_model"] == "fake-llm-1" and provenance["k"] == MAIN_K
    assert provenance["embedding_model"] and provenance["registry"]
    with target.open() as fh:
        written = list(csv.DictReader(fh))
    assert len(written) == len(rows) and written[0]["query_id"] == str(rows["query_id"].iloc[0])
    assert {written[0]["a_llm_model"], written[0]["b_llm_model"]} == {"fake-llm-1"}
    assert written[0]["a_run_ids"] == " ".join(map(str, main_ptr["id"]))

    assert main(["compare", "--a", f"{ONE}:ptr", "--b", f"{TWO}:ptr", "--db", url]) == 0
    text = capsys.readouterr().out.splitlines()
    c = comparison(reader, Side(ONE, "ptr"), Side(TWO, "ptr"))
    assert text[0] == ("a = fake fake-llm-1 · PtR  vs  b = fake fake-llm-2 · PtR | subset all | gold api_list | "
                       f"k 2 | n {c.n}")
    assert text[1] == f"a wins {c.a_wins} / b wins {c.b_wins} / ties {c.ties} / both miss {c.both_miss}"
    assert f"diff (a - b) {c.mean_diff:+.3f} [95% CI {c.low:+.3f}, {c.high:+.3f}]" in text[2]
    assert text[3].startswith("top 10 by diff") and text[14].startswith("bottom 10 by diff") and len(text) == 25


def test_the_text_output_never_lists_a_query_twice() -> None:
    """Fewer than twice ten queries: the bottom list holds the ones the top list left."""
    side = pd.DataFrame({"subset": ["G1_instruction"] * 12, "query_id": range(12),
                         "recall": [i / 12 for i in range(12)]})
    rows = compare_rows(side, side.assign(recall=0.5))
    report = {"a": {"label": "A"}, "b": {"label": "B"}, "subset": None, "gold": "api_list", "k": 5,
              "summary": summarise(rows).to_json()}
    lines = render_text(report, rows).splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    assert lines[3].startswith("top 10") and lines[14].startswith("bottom 2")
    assert sorted(listed) == sorted(f"G1_instruction:{i}" for i in range(12))


@pytest.mark.parametrize("args,words", [
    (["--a", "nobody:ptr", "--b", f"{ONE}:rtp"], f"error: system must be one of {ONE}, {TWO}, not 'nobody'"),
    (["--a", f"{ONE}:ptr", "--b", f"{TWO}:hybrid"], f"error: no stored hybrid runs of {TWO} at k=2"),
    (["--a", f"{ONE}:ptr", "--b", f"{ONE}:rtp", "--subset", "G9_nothing"],
     f"error: no stored ptr runs of {ONE} on G9_nothing at k=2"),
    (["--a", f"{ONE}:hybrid", "--b", f"{ONE}:rtp", "--k", "3"], "error: no stored hybrid runs of "
     f"{ONE} at k=3 (the hybrid runs at the main k only)"),
])
def test_the_cli_refuses_in_one_error_line(url: str, tiny_env: dict, capsys: pytest.CaptureFixture, args: list[str],
                                           words: str) -> None:
    assert main(["compare", *args, "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(words) and err.count("\n") == 1
