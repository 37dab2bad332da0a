"""The lab's vocabulary, declared once: architectures (core.archs) and gold definitions (core.data.toolbench).
Another architecture is one declaration plus its retrieval, which the single query and `eval` then run."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from core import archs
from core.agents.factory import Agents
from core.archs import ARCH_LIST, ARCHS, PAPER_ARCHS, Arch, arch
from core.data.toolbench import DEFAULT_GOLD, GOLD_DEFINITIONS, gold_definition
from core.retrieval.batch import rtp_batch, truncate
from core.retrieval.discovery import Discovery, Retriever, rtp
from core.settings import Settings
from core.study.evaluate import evaluate_subset
from core.study.single_query import inspect_query
from tests.helpers import SMALL_APIS, FakePlanner, FakeStubWriter, make_queries, make_retriever, write_compact_data

QUERY = "Find hotels in London and check the currency exchange rate"


def rtp_2k_one(query: str, written: object, k: int, retriever: Retriever) -> Discovery:
    """A throwaway architecture: RtP retrieving 2k, keeping the top k."""
    return truncate(rtp(query, 2 * k, retriever), k)


def rtp_2k_many(texts: Sequence[str], written: object, ks: Sequence[int],
                retriever: Retriever) -> dict[int, list[Discovery]]:
    wide = rtp_batch(texts, 2 * max(ks), retriever)
    return {k: [truncate(d, k) for d in wide] for k in ks}


WIDE = Arch("rtp@2k", "RtP@2k", "RtP@2k · 2k retrieved, top k kept", "#000000", f"{__name__}:rtp_2k_one",
            f"{__name__}:rtp_2k_many")


def test_the_declarations_name_the_stored_values_and_their_retrieval() -> None:
    assert ARCHS == ("rtp", "ptr", "hybrid") and PAPER_ARCHS == ("rtp", "ptr")
    assert [a.label for a in ARCH_LIST] == ["RtP", "PtR", "hybrid"] and arch("hybrid").legend == "Hybrid"
    assert arch("hybrid").table_label == "hybrid (beyond the paper)" and arch("ptr").table_label == "PtR"
    assert [a.name for a in ARCH_LIST if a.carries_stubs] == ["ptr"]
    for declared in ARCH_LIST:  # every "module:function" imports and is callable
        for spec in (declared.one, declared.batch):
            module, _, function = spec.partition(":")
            assert callable(getattr(__import__(module, fromlist=[function]), function)), spec
    with pytest.raises(ValueError, match="arch must be one of rtp, ptr, hybrid, not 'rag'"):
        arch("rag")


def test_gold_definitions_read_the_query_and_name_its_columns() -> None:
    query = make_queries(1)[0]
    assert GOLD_DEFINITIONS == ("api_list", "relevant") and DEFAULT_GOLD.name == "api_list"
    relevant = gold_definition("relevant")
    assert relevant.of(query) == frozenset(query.relevant_apis) == query.gold("relevant")
    assert DEFAULT_GOLD.of(query) == frozenset(query.api_list)
    assert relevant.column("recall") == "recall_relevant" and DEFAULT_GOLD.column("plan_pass") == "plan_pass_api_list"
    assert (DEFAULT_GOLD.hit_flag, relevant.hit_flag) == ("gold", "gold_relevant")
    with pytest.raises(ValueError, match="gold definition must be one of api_list, relevant, not 'all'"):
        query.gold("all")


def test_a_new_architecture_is_one_declaration_plus_its_retrieval(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(archs.ARCHS_BY_NAME, WIDE.name, WIDE)
    retriever = make_retriever()
    data = write_compact_data(tmp_path / "data", SMALL_APIS, [
        {"subset": q.subset, "group": q.group, "query_id": q.query_id, "query": q.query,
         "relevant_apis": [list(k) for k in q.relevant_apis], "api_list": [list(k) for k in q.api_list]}
        for q in make_queries()])
    settings = Settings.from_env(env={"CACHE_DIR": str(tmp_path / "cache"), "TOOLBENCH_DATA": str(data)})
    agents = Agents(FakeStubWriter(), FakePlanner())
    result = inspect_query(QUERY, 3, retriever, settings, agents=agents)
    assert [b.arch for b in result.blocks] == ["rtp", "ptr", "hybrid", "rtp@2k"]
    assert result.get("rtp@2k").keys == result.get("rtp").keys  # an exact index: the top k of 2k is the top k
    assert result.get("rtp@2k").plan is None and "rtp@2k" in result.to_json()
    alone = inspect_query(QUERY, 3, retriever, settings, archs="rtp@2k")
    assert [b.arch for b in alone.blocks] == ["rtp@2k"] and alone.llm_error is None

    rows = {name: evaluate_subset(settings, retriever, name, "G2_instruction", "api_list", [1, 3])
            for name in ("rtp", "rtp@2k")}
    assert [r["arch"] for r in rows["rtp@2k"]] == ["rtp@2k", "rtp@2k"]
    assert [{**r, "arch": "rtp"} for r in rows["rtp@2k"]] == rows["rtp"]
