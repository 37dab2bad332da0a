"""PtR and the planner end to end through the real SDK clients against local fake servers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.retrieval.discovery import Hit, Retriever
from core.retrieval.archs import arch
from core.study.one_query import run_query
from core.agents.factory import make_agents
from core.agents.planner import Plan, match_selections
from core.settings import Settings
from tests.fake_llm_servers import FakeServer, gemini_ok, openai_ok

SENTINEL = "sk-SENTINEL-123"
QUERY = "Find hotels in London and check the currency exchange rate"
STUBS = {"stubs": [{"name": "search_hotels", "reasoning": "find hotels in a city"},
                   {"name": "get_exchange_rate", "reasoning": "currency exchange rate"}]}


def plan_json(selected: list[str], refusal: str | None = None) -> str:
    return json.dumps({"selected_apis": selected, "steps": ["look up", "answer"], "refusal": refusal})


@pytest.fixture
def gemini(tmp_path: Path):
    with FakeServer() as server:
        settings = Settings.from_env(env={"LLM_BACKEND": "gemini", "GEMINI_API_KEY": SENTINEL,
                                          "GEMINI_BASE_URL": server.url, "CACHE_DIR": str(tmp_path / "cache"),
                                          "LLM_TIMEOUT_S": "5"})
        yield server, settings


def test_ptr_with_gemini_stubs_and_plans(gemini, small_retriever: Retriever) -> None:
    server, settings = gemini
    server.enqueue(gemini_ok(json.dumps(STUBS), output_tokens=40),
                   gemini_ok(plan_json(["Hotels/search hotels"])),
                   gemini_ok(plan_json(["Hotels/search hotels", "currency/EXCHANGE RATE", "Made/Up"])))
    gold = {("Hotels", "search hotels"), ("Currency", "exchange rate")}
    # The stubs come first, then PtR's planner, then RtP's (so a page can show PtR's column early).
    result = run_query(QUERY, 3, small_retriever, settings, gold=gold).to_json()
    assert len(server.requests) == 3
    ptr = result["ptr"]
    assert [s["name"] for s in ptr["stubs"]] == ["search_hotels", "get_exchange_rate"]
    assert not ptr["stub_fallback"] and ptr["usage"]["output_tokens"] == 40
    assert {h["stub"] for h in ptr["hits"]} <= {"search_hotels", "get_exchange_rate"}
    assert ptr["recall"] == 1.0 and ptr["backend_label"] == "gemini gemini-2.5-flash"
    rtp_plan = result["rtp"]["plan"]
    assert rtp_plan["apis_named"] == 3
    # "Made/Up" was never retrieved: fidelity counts it against the planner.
    assert rtp_plan["fidelity"] == pytest.approx(len(rtp_plan["matched"]) / 3)
    assert ["Hotels", "search hotels"] in rtp_plan["matched"]
    assert SENTINEL not in json.dumps(result)


def test_malformed_answers_fall_back_and_rtp_still_shows(gemini, small_retriever: Retriever) -> None:
    server, settings = gemini
    server.enqueue(gemini_ok("{\"stubs\": []}"), gemini_ok("{\"stubs\": []}"),  # stubs + repair: empty
                   gemini_ok("no json here"), gemini_ok("still not json"),  # PtR planner + its repair
                   gemini_ok("not json either"), gemini_ok("nor this"))  # RtP planner + its repair
    result = run_query(QUERY, 3, small_retriever, settings).to_json()
    assert len(result["rtp"]["hits"]) == 3
    assert result["rtp"]["plan"]["parse_error"].startswith("malformed_json")
    ptr = result["ptr"]
    assert ptr["stub_fallback"] and ptr["stubs"] == [{"name": QUERY, "reasoning": ""}]
    assert ptr["stub_error"].startswith("validation")
    # The fallback stub is the raw query, so PtR retrieves what RtP did and its planner prompt is the
    # same; the malformed answer to it was not cached, so the model is asked again rather than replayed.
    assert [h["api_name"] for h in ptr["hits"]] == [h["api_name"] for h in result["rtp"]["hits"]]
    assert not ptr["plan"]["cached"] and ptr["plan"]["parse_error"].startswith("malformed_json")
    assert len(server.requests) == 6


def test_refusal_is_recorded(gemini, small_retriever: Retriever) -> None:
    server, settings = gemini
    server.enqueue(gemini_ok(plan_json([], refusal="nothing fits")))
    result = run_query("tell me a joke", 2, small_retriever, settings, archs=[arch("rtp")], plans=False).to_json()
    assert "plan" not in result["rtp"]  # plans come with --arch all
    agents = make_agents(settings, small_retriever)
    plan = agents.planner.plan("tell me a joke", [Hit("Jokes", "random joke", "", 0.5, 1)])
    assert plan.refusal == "nothing fits" and plan.selected_apis == () and plan.fidelity is None


def test_second_identical_query_is_served_from_the_cache(gemini, small_retriever: Retriever) -> None:
    server, settings = gemini
    server.enqueue(gemini_ok(json.dumps(STUBS)), gemini_ok(plan_json(["Currency/exchange rate"])),
                   gemini_ok(plan_json(["Hotels/search hotels"])))
    first = run_query(QUERY, 3, small_retriever, settings).to_json()
    assert len(server.requests) == 3
    second = run_query(QUERY, 3, small_retriever, settings).to_json()
    assert len(server.requests) == 3  # no new HTTP request
    assert second["ptr"]["stubs"] == first["ptr"]["stubs"]
    assert second["ptr"]["plan"]["cached"] and second["ptr"]["usage"] == first["ptr"]["usage"]
    # PtR's column alone, with its plan, is what a page shows first; it too comes from the cache.
    alone = run_query(QUERY, 3, small_retriever, settings, archs=[arch("ptr")], plans=True).to_json()
    assert len(server.requests) == 3 and "rtp" not in alone and alone["ptr"]["plan"] == second["ptr"]["plan"]
    agents = make_agents(settings, small_retriever, use_cache=False)
    server.enqueue(gemini_ok(json.dumps(STUBS)))
    agents.stub_writer.write(QUERY)
    assert len(server.requests) == 4  # --no-cache bypasses it


def test_openai_compatible_backend(tmp_path: Path, small_retriever: Retriever) -> None:
    with FakeServer() as server:
        settings = Settings.from_env(env={"LLM_BACKEND": "openai", "OPENAI_BASE_URL": server.url + "/v1",
                                          "OPENAI_MODEL": "gpt-oss-120b", "OPENAI_API_KEY": SENTINEL,
                                          "CACHE_DIR": str(tmp_path)})
        server.enqueue(openai_ok(json.dumps(STUBS)))
        result = run_query(QUERY, 2, small_retriever, settings, archs=[arch("ptr")], plans=False).to_json()
        assert [s["name"] for s in result["ptr"]["stubs"]] == ["search_hotels", "get_exchange_rate"]
        assert result["ptr"]["backend_label"] == "openai gpt-oss-120b"
        assert server.requests[0].path == "/v1/chat/completions"
        assert SENTINEL not in json.dumps(result)


def test_match_selections_exact_then_normalised() -> None:
    hits = [Hit(" Weather", "forecast", "Weather", 0.9, 1), Hit("IP Lookup", "ip info", "Data", 0.8, 2)]
    assert match_selections([" Weather/forecast", "ip-lookup/IP_Info", "weather/forecast", "x/y"], hits) == (
        (" Weather", "forecast"), ("IP Lookup", "ip info"))
    plan = Plan(("a/b", "Weather/forecast"), ((" Weather", "forecast"),), (), None, 5, "x", "m", "v")
    assert plan.fidelity == 0.5 and plan.selection_rate == 0.2 and plan.apis_named == 2


@pytest.mark.parametrize("k", [0, 101])
def test_a_library_call_refuses_k_outside_1_to_max_k(k: int) -> None:
    from core.retrieval.discovery import QueryError
    from tests.helpers import make_retriever

    with pytest.raises(QueryError, match="k must be from 1 to 100"):
        run_query("find hotels in Paris", k, make_retriever(), Settings())
