from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.cli.main import main
from core.settings import PROJECT_ROOT


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.subprocess
def test_help_lists_every_command() -> None:
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("index", "query", "eval", "perf"):
        assert command in out.stdout
    assert run_cli("eval", "--help").returncode == 0


@pytest.mark.parametrize("text", ["", "   "])
@pytest.mark.subprocess
def test_empty_query_is_one_line_exit_2(tiny_env, text: str) -> None:
    out = run_cli("query", text, env=tiny_env)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "empty" in out.stderr


@pytest.mark.subprocess
def test_missing_data_names_the_setting(tiny_env, tmp_path) -> None:
    out = run_cli("index", env={**tiny_env, "TOOLBENCH_DATA": str(tmp_path / "nowhere")})
    assert out.returncode == 1
    assert "TOOLBENCH_DATA" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.subprocess
def test_bad_k_is_a_usage_error(tiny_env) -> None:
    assert run_cli("eval", "--k", "0,x", env=tiny_env).returncode == 2


@pytest.mark.slow
def test_query_and_eval_json_with_real_model(tiny_env, capsys) -> None:
    assert main(["index", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["size"] == 10 and info["dim"] == 384 and info["source"] == "built"
    assert main(["index", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == "cache"

    assert main(["query", "currency exchange rate", "--k", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["query"] == "currency exchange rate" and result["k"] == 3
    hits = result["rtp"]["hits"]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert set(hits[0]) >= {"rank", "tool_name", "api_name", "category", "score"}
    assert hits[0]["tool_name"] == "Currency"
    assert result["rtp"]["top1_score"] == pytest.approx(hits[0]["score"], abs=1e-6)

    assert main(["eval", "--arch", "rtp", "--subset", "G2_instruction", "--k", "1,3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["k"] for r in rows] == [1, 3]
    for row in rows:
        assert {"subset", "arch", "gold", "k", "n", "recall", "precision"} <= set(row)
        assert row["n"] == 1 and 0 <= row["recall"] <= 1
    assert rows[1]["recall"] >= rows[0]["recall"]

    assert main(["eval", "--arch", "hybrid", "--subset", "G2_instruction", "--k", "3", "--json"]) == 0
    hybrid = json.loads(capsys.readouterr().out)
    assert hybrid["arch"] == "hybrid" and hybrid["backend"] == "offline heuristic, not an LLM"
    assert hybrid["recall"] >= rows[1]["recall"]  # the hybrid also searches the raw query, as RtP does

    assert main(["eval", "--subset", "G9_nothing", "--json"]) == 2
    assert "Unknown subset" in capsys.readouterr().err


@pytest.mark.slow
def test_api_key_never_reaches_output(tiny_env, capsys, caplog) -> None:
    from tests.fake_llm_servers import FakeServer, gemini_error

    sentinel = "sk-SENTINEL-123"
    with FakeServer() as server:
        # A server that echoes the key back in its error text, as real ones sometimes do.
        server.enqueue(*[gemini_error(401, f"API key {sentinel} not valid")] * 6)
        env = {"LLM_BACKEND": "gemini", "GEMINI_API_KEY": sentinel, "GEMINI_BASE_URL": server.url}
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            with caplog.at_level("DEBUG"):
                code = main(["query", "find hotels and the exchange rate", "--arch", "all", "--json"])
        out = capsys.readouterr()
    assert code == 0
    result = json.loads(out.out)
    assert result["ptr"]["stub_fallback"] and "auth" in result["ptr"]["stub_error"]
    assert len(result["rtp"]["hits"]) == 5  # RtP still shows
    for text in (out.out, out.err, caplog.text):
        assert sentinel not in text
    assert any(sentinel in r.headers.get("x-goog-api-key", "") for r in server.requests)  # it was sent


def test_query_json_drops_nul_characters_as_the_store_does(tiny_env, capsys, monkeypatch, tmp_path) -> None:
    """An LLM reply holding NUL characters is printed by `query --json` as the stored row holds it: without
    them (neither raw nor as the \\u0000 escape), the rest of the text unchanged."""
    from core.settings import Settings
    from core.study.main_study import run_main
    from core.store.store import Store
    from tests.fake_llm_servers import ModeServer, openai_ok
    from tests.helpers import bench_context, make_queries, make_retriever

    # One reply that parses both as stubs and as a plan answers every call.
    reply = json.dumps({"stubs": [{"name": "search\u0000_hotels", "reasoning": "hotels\u0000 in a city"}],
                        "selected_apis": [], "steps": ["call\u0000 the API"], "refusal": "none\u0000 fits"})
    retriever = make_retriever()
    query = make_queries(1)[0]
    with ModeServer(openai_ok(reply)) as server:
        env = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_MODEL": "fake-model"}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr("core.cli.main.retriever_for", lambda settings: (retriever, None))
        assert main(["query", query.query, "--k", "3", "--arch", "all", "--json"]) == 0
        printed = capsys.readouterr().out
        url = f"sqlite:///{tmp_path / 'nul.sqlite'}"
        settings = Settings.from_env({**tiny_env, **env})
        run_main(bench_context(Store(url), retriever, [query], settings=settings), runs=1, k=3, concurrency=1)

    assert "\x00" not in printed and "\\u0000" not in printed
    result = json.loads(printed)
    assert result["ptr"]["stubs"] == [{"name": "search_hotels", "reasoning": "hotels in a city"}]
    assert not result["ptr"]["stub_fallback"]
    rows = [row for run in (1, 2) for row in Store(url).results(run, ("stubs", "plan"))]
    stored = {"ptr" if row["stubs"] else "rtp": row for row in rows}
    assert result["ptr"]["stubs"] == [{"name": s["name"], "reasoning": s["reasoning"]} for s in stored["ptr"]["stubs"]]
    for arch in ("rtp", "ptr"):
        plan = result[arch]["plan"]
        assert (plan["steps"], plan["refusal"]) == (["call the API"], "none fits")
        assert (plan["steps"], plan["refusal"]) == (stored[arch]["plan"]["steps"], stored[arch]["plan"]["refusal"])
