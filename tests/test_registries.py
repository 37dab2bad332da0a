"""Every declared registry is loaded, searched and reported the same way: the shipped benchmarks load with their
queries and ready indexes, the CLI takes --registry, and a store holding several registries' runs reports each
apart (ToolBench's tables unchanged by another registry's runs)."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.analysis.reader import ResultsReader
from core.analysis.report import build_report
from core.cli.main import main
from core.data.loaders import queries_for, query_set_for, registry_for
from core.data.registry import Registry
from core.data.sources import SOURCES, recognise, source
from core.data.toolbench import Api, DataUnreadable, Param, subset_order
from core.registries import REGISTRIES, REGISTRY_LIST, registry_decl
from core.retrieval.archs import arch
from core.retrieval.discovery import Retriever
from core.retrieval.index import VectorIndex
from core.retrieval.memo import memoised
from core.settings import PROJECT_ROOT, DataNotFoundError, Settings
from core.store.store import Store
from core.study.main_study import run_main
from tests.helpers import SMALL_APIS, FakeEncoder, bench_context, fake_agents, make_queries

SHIPPED = {"sealtools": (4_076, 1_354, {"in_domain_single": 200, "in_domain_multi": 500, "out_domain_single": 94,
                                        "out_domain_multi": 560}),
           "livemcpbench": (527, 94, {"single": 16, "multi": 78})}


def settings_of(name: str, tmp_path: Path) -> Settings:
    return Settings.from_env(env={"REGISTRY": name, "CACHE_DIR": str(tmp_path), "LLM_BACKEND": "offline"})


def test_the_declarations_name_every_registry_once() -> None:
    assert REGISTRIES == ("full", "documented", "sealtools", "livemcpbench")
    assert all(r.source in SOURCES for r in REGISTRY_LIST)
    with pytest.raises(ValueError, match="REGISTRY must be one of full, documented, sealtools, livemcpbench"):
        Settings.from_env(env={"REGISTRY": "petstore"})


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_benchmark_loads_with_its_queries(name: str, tmp_path: Path) -> None:
    apis, queries, subsets = SHIPPED[name]
    settings = settings_of(name, tmp_path)
    registry = registry_for(settings)
    assert registry.name == name and len(registry) == apis
    loaded = queries_for(settings)
    assert len(loaded) == queries
    assert {s: sum(q.subset == s for q in loaded) for s in subset_order({q.subset for q in loaded})} == subsets
    assert all(q.gold("api_list") <= q.gold("relevant") and q.gold("relevant") for q in loaded)
    assert all(registry.row(key) is not None for q in loaded for key in q.gold("relevant"))
    declared = registry_decl(name)
    assert recognise(settings.registry_dir() / declared.tools) is source(declared.source)


def test_livemcpbench_keeps_its_unresolved_gold_counted(tmp_path: Path) -> None:
    query_set = query_set_for(settings_of("livemcpbench", tmp_path))
    assert (query_set.ambiguous, query_set.unmatched) == (29, 5) and len(query_set.dropped) == 1
    assert query_set_for(settings_of("full", tmp_path)) is None  # ToolBench's gold is keys already


@pytest.mark.parametrize("name", sorted(SHIPPED))
@pytest.mark.slow
def test_a_shipped_benchmark_answers_from_its_shipped_index(name: str, tmp_path: Path) -> None:
    from core.retrieval.assemble import build_retriever

    retriever, info = build_retriever(settings_of(name, tmp_path))
    assert info.source == "artifact" and info.size == SHIPPED[name][0]
    query = queries_for(settings_of(name, tmp_path))[0]
    found = arch("rtp").retrieve(query.query, None, 5, retriever)
    assert len(found.hits) == 5 and found.top1_score > 0.3  # the shipped vectors are the registry's, not noise


def test_a_missing_benchmark_folder_says_how_to_restore_it(tmp_path: Path) -> None:
    settings = Settings.from_env(env={"REGISTRY": "sealtools"}, root=tmp_path)
    with pytest.raises(DataNotFoundError, match="git checkout data/registries"):
        settings.registry_dir()


def test_parameters_join_the_document_and_toolbench_documents_stay_as_they_were() -> None:
    plain = Api("Weather", "forecast", "Data", "Daily forecast")
    assert plain.document == "Weather/forecast: Daily forecast"
    with_params = Api("Weather", "forecast", "", "Daily forecast",
                      parameters=(Param("city", "the city"), Param("days")))
    assert with_params.document == "Weather/forecast: Daily forecast Parameters: city: the city; days"


def test_recognise_names_the_formats_when_none_fits(tmp_path: Path) -> None:
    stray = tmp_path / "notes.txt"
    stray.write_text("hello")
    with pytest.raises(DataUnreadable, match="no known format; name one of toolbench, openapi, mcp, jsonl"):
        recognise(stray)


def _small(name: str) -> Retriever:
    encoder = FakeEncoder()
    registry = Registry(name, SMALL_APIS)
    return memoised(Retriever(registry, encoder, VectorIndex(encoder.encode(registry.documents))))


def test_each_registry_is_reported_apart(tmp_path: Path) -> None:
    """The same study on two registries in one store: each reader sees only its own runs, and the first
    registry's report is the same before and after the second's runs arrive."""
    url = f"sqlite:///{tmp_path / 'two.sqlite'}"
    store = Store(url)
    queries = make_queries()
    run_main(bench_context(store, _small("small"), queries, commit="x"), runs=1, k=5, concurrency=1,
             agents_for=fake_agents())
    before = build_report(ResultsReader(url, registry="small"), "api_list", None)
    run_main(bench_context(store, _small("other"), queries[:4], commit="x"), runs=1, k=5, concurrency=1,
             agents_for=fake_agents())
    store.close()
    assert build_report(ResultsReader(url, registry="small"), "api_list", None) == before
    other = ResultsReader(url, registry="other")
    assert set(other.runs()["registry_name"]) == {"other"}
    assert other.main_table()["n_queries"].max() < ResultsReader(url, registry="small").main_table()["n_queries"].max()
    assert ResultsReader(url, registry="full").runs().empty


@pytest.mark.slow
def test_the_cli_takes_any_registry(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    monkeypatch.setenv("CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LLM_BACKEND", "offline")
    assert main(["eval", "--registry", "livemcpbench", "--arch", "rtp", "--json"]) == 0
    row = __import__("json").loads(capsys.readouterr().out)
    assert (row["subset"], row["n"]) == ("single", 16) and 0 <= row["recall"] <= 1
    assert main(["bench", "main", "--registry", "livemcpbench", "--subsets", "G1_instruction", "--db",
                 f"sqlite:///{tmp_path / 'x.sqlite'}"]) == 2
    assert "single, multi; unknown: G1_instruction" in capsys.readouterr().err


def test_the_committed_toolbench_data_is_still_what_full_reads() -> None:
    assert Settings.from_env(env={}).registry_dir() == PROJECT_ROOT / "data" / "toolbench"


def test_registry_gains_pair_each_registrys_queries_by_kind(tmp_path: Path) -> None:
    from core.analysis.paper import load_paper
    from core.analysis.registry_gains import kind_of, paper_gains, registry_gains, systems_on_registries
    from core.analysis.store_summary import StoreSummary
    from core.study.hybrid import run_hybrid

    url = f"sqlite:///{tmp_path / 'gains.sqlite'}"
    store = Store(url)
    queries = make_queries()
    for name in ("full", "sealtools"):
        context = bench_context(store, _small(name), queries, commit="x")
        run_main(context, runs=1, k=5, concurrency=1, agents_for=fake_agents())
        if name == "full":
            run_hybrid(context)
    store.close()
    assert StoreSummary(url).systems("sealtools") == ["fake"] and StoreSummary(url).systems("livemcpbench") == []
    assert systems_on_registries(url) == ["fake"]
    gains = registry_gains(url, system="fake")
    assert list(gains["registry"]) == ["full", "full", "sealtools", "sealtools"]
    per_query = ResultsReader(url, registry="full").per_query(None, "api_list", 5, "fake")
    multi = per_query[per_query["subset"].map(kind_of) == "multi"]
    row = gains[(gains["registry"] == "full") & (gains["kind"] == "multi")].iloc[0]
    assert row["n"] == len(multi) and row["mean_diff"] == pytest.approx(multi["recall_diff"].mean())
    assert row["diff_low"] <= row["mean_diff"] <= row["diff_high"]
    # The hybrid ran on full only: its paired difference there, none on sealtools (NaN, never 0).
    hybrid = ResultsReader(url, registry="full").hybrid_per_query("api_list", "fake")
    both = multi.merge(hybrid, on=["subset", "query_id"])
    assert row["hybrid_n"] == len(multi) and row["hybrid_diff"] == pytest.approx(
        (both["hybrid_recall"] - both["rtp_recall"]).mean())
    assert gains[gains["registry"] == "sealtools"]["hybrid_diff"].isna().all()
    # The paper's G1 for single; G2 (+0.045 over 200) and G3 (+0.012 over 100) pooled by count for multi.
    paper = paper_gains(load_paper()).set_index("kind")
    assert paper.loc["single", "mean_diff"] == pytest.approx(-0.083) and paper.loc["multi", "n"] == 300
    assert paper.loc["multi", "mean_diff"] == pytest.approx((0.045 * 200 + 0.012 * 100) / 300, abs=1e-3)
    # The report carries the same rows for every system, whichever registry it reports.
    across = build_report(ResultsReader(url, registry="full"), "api_list", None)["registries"]
    assert len(across["ours"]) == len(gains) and {r["system"] for r in across["ours"]} == {"fake"}
    assert ((kind_of("G1_tool"), kind_of("G3_instruction"), kind_of("out_domain_single"))
            == ("single", "multi", "single"))
