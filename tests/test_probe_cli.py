"""`query TEXT --stubs FILE` and `query TEXT --models ...` (core.cli.probe), in-process on the fake retriever.

--stubs: given stubs searched as PtR and the hybrid with no LLM, every such block labelled as edited, a bad file one
error line. --models: each system that can run here, one after another; in these tests only the offline heuristic
can (no local model in the temporary CACHE_DIR, none in a temporary wheel folder), unless a test configures one.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from core.backends import OFFLINE_LABEL
from core.cli.main import main
from core.local_models import GEMMA_270M
from core.retrieval.discovery import Retriever
from core.retrieval.records import Stub
from core.study.edited_stubs import EDITED, search_edited
from tests.helpers import MODEL_CACHE, llama_built, make_retriever, needs_llama

QUERY = "Find hotels in London, check the currency exchange rate and look up my IP address."
STUBS = [{"name": "search_hotels", "reasoning": "hotels in London"},
         {"name": "get_exchange_rate", "reasoning": "currency rate"}]


@pytest.fixture
def retriever(tiny_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Retriever:
    """The fake retriever behind every `query`, and no local model anywhere this test can see."""
    found = make_retriever()
    for where in ("core.cli.main.retriever_for", "core.cli.probe.retriever_for"):
        monkeypatch.setattr(where, lambda settings: (found, None))
    monkeypatch.setattr("core.agents.llm.local_model.WHEELS_DIR", tmp_path / "no-wheels")
    monkeypatch.delenv("LOCAL_MODEL", raising=False)
    return found


def run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(["query", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, data: Any, name: str = "stubs.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def untimed(value: Any) -> Any:
    """A result's JSON without its measured seconds, which differ between two runs of the same query."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if not key.endswith("latency_s")}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value


# ------------------------------------------------------------------------------------------------ --stubs

def test_edited_stubs_json_is_labelled_and_searched_as_ptr_would(retriever, capsys, tmp_path) -> None:
    code, out, err = run(capsys, QUERY, "--k", "3", "--json", "--stubs", write(tmp_path, STUBS))
    assert code == 0 and err == ""
    result = json.loads(out)
    assert set(result) == {"query", "k", "stubs", "source", "rtp", "ptr", "hybrid"}
    assert (result["query"], result["k"], result["source"], result["stubs"]) == (QUERY, 3, EDITED, STUBS)
    expected = search_edited(QUERY, [Stub(**s) for s in STUBS], 3, retriever)
    for name in ("ptr", "hybrid"):
        block = result[name]
        assert block["label"] == EDITED and block["backend_label"] == EDITED
        assert block["hits"] == expected.block(name).to_json()["hits"]
    assert result["ptr"]["stubs"] == STUBS and result["ptr"]["stub_fallback"] is False
    assert result["ptr"]["usage"]["prompt_tokens"] == 0 and result["ptr"]["stub_latency_s"] is None
    assert "label" not in result["rtp"] and "backend_label" not in result["rtp"]  # RtP is the live retrieval
    assert [h["rank"] for h in result["rtp"]["hits"]] == [1, 2, 3]


def test_a_ptr_runs_own_stubs_give_its_hits(retriever, capsys, tmp_path) -> None:
    """The PtR block of `query --arch all --json`, fed back as it is, gives that block's hits and the hybrid's."""
    assert main(["query", QUERY, "--k", "3", "--arch", "all", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    code, out, _ = run(capsys, QUERY, "--k", "3", "--json", "--stubs", write(tmp_path, written["ptr"]))
    edited = json.loads(out)
    assert code == 0 and edited["stubs"] == [{"name": s["name"], "reasoning": s["reasoning"]}
                                             for s in written["ptr"]["stubs"]]
    for name in ("rtp", "ptr", "hybrid"):
        assert edited[name]["hits"] == written[name]["hits"]


def test_edited_stubs_text_is_headed_as_edited(retriever, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps([["ip_lookup", "my IP"]]).encode())))
    code, out, _ = run(capsys, QUERY, "--k", "2", "--stubs", "-")
    assert code == 0
    headings = [line for line in out.splitlines() if line.startswith("==")]
    assert headings[0].startswith("== RTP (top-1 cosine ")
    assert headings[1].startswith(f"== PTR ({EDITED})") and headings[2].startswith(f"== HYBRID ({EDITED})")
    assert "   stub ip_lookup: my IP" in out and "<- ip_lookup" in out


def test_no_stubs_leave_ptr_null_and_the_hybrid_on_rtps_hits(retriever, capsys, tmp_path) -> None:
    code, out, _ = run(capsys, QUERY, "--json", "--stubs", write(tmp_path, []))
    result = json.loads(out)
    assert code == 0 and result["ptr"] is None and result["stubs"] == []
    same = ("tool_name", "api_name", "score", "rank")
    assert [{key: h[key] for key in same} for h in result["hybrid"]["hits"]] == \
        [{key: h[key] for key in same} for h in result["rtp"]["hits"]]
    code, out, _ = run(capsys, QUERY, "--stubs", write(tmp_path, {"stubs": []}))
    assert f"== PTR ({EDITED}): no stubs given" in out


@pytest.mark.parametrize("content, words", [
    (None, "no such file"),
    ("{not json", "is not JSON"),
    (b"\xff\xfe[]", "is not UTF-8 text"),
    ({"name": "a"}, 'got an object without "stubs"'),
    ([{"reasoning": "no name"}], "stub 1 is not an object"),
    ([f"s{i}" for i in range(11)], "11 stubs given"),
    ([{"name": "  "}], "stub 1 has no name with a letter or digit"),
    ("[" * 100_000, "nested too deep"),
])
def test_a_bad_stubs_file_is_one_error_line(retriever, capsys, tmp_path, content, words) -> None:
    path = tmp_path / "stubs.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        write(tmp_path, content)
    code, out, err = run(capsys, QUERY, "--stubs", str(path))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and words in err
    assert str(path) in err  # the file is named


def test_a_folder_as_stubs_file_is_one_line(retriever, capsys, tmp_path) -> None:
    code, _, err = run(capsys, QUERY, "--stubs", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "cannot be read" in err


def test_stubs_with_models_is_refused_by_argparse_in_one_line(retriever, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["query", QUERY, "--stubs", write(tmp_path, STUBS), "--models", "all"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert "not allowed with argument --stubs" in err


@pytest.mark.parametrize("probe", [["--stubs", "-"], ["--models", "all"]])
def test_arch_beside_a_probe_is_one_line(retriever, capsys, probe) -> None:
    code, out, err = run(capsys, QUERY, "--arch", "ptr", *probe)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--arch does not apply" in err


# ----------------------------------------------------------------------------------------------- --models

def test_models_all_here_is_the_offline_heuristic_as_plain_query(retriever, capsys) -> None:
    assert main(["query", QUERY, "--k", "3", "--arch", "all", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    code, out, err = run(capsys, QUERY, "--k", "3", "--models", "all", "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert set(result) == {"query", "k", "rtp", "systems"} and (result["query"], result["k"]) == (QUERY, 3)
    [system] = result["systems"]
    assert system["system"] == "offline" and system["label"] == OFFLINE_LABEL and "not an LLM" in system["label"]
    assert system["seconds"] >= 0
    assert untimed(system["result"]) == untimed(plain)
    assert untimed(result["rtp"]) == untimed({key: v for key, v in plain["rtp"].items() if key != "plan"})


def test_models_by_name_and_their_text(retriever, capsys) -> None:
    code, out, _ = run(capsys, QUERY, "--k", "2", "--models", "offline")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("== RTP (top-1 cosine ")
    assert f"## offline ({OFFLINE_LABEL}), " in out and "   RTP plan (" in out and "== PTR (top-1 cosine" in out
    assert sum(line.startswith("== RTP") for line in lines) == 1  # RtP once, whatever the systems


@pytest.mark.parametrize("value", ["gpt-9", "offline,local:nowhere", " , "])
def test_an_unknown_system_is_one_line_naming_those_that_can_run(retriever, capsys, value) -> None:
    code, out, err = run(capsys, QUERY, "--models", value)
    assert code == 2 and out == ""
    assert err.startswith("error: --models: ") and err.count("\n") == 1 and "these can: offline (or all)" in err


def test_a_model_that_cannot_load_fails_alone(retriever, capsys, tmp_path, monkeypatch) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    monkeypatch.setenv("LOCAL_MODEL", str(broken))
    code, out, err = run(capsys, QUERY, "--models", "all", "--json")
    assert code == 0
    systems = {s["system"]: s for s in json.loads(out)["systems"]}
    assert list(systems) == ["offline", "local:broken"]
    assert "not a GGUF model file" in systems["local:broken"]["result"]["llm_error"]
    assert systems["local:broken"]["label"] == "local broken"
    assert "local:broken: LLM unavailable" in err
    assert not systems["offline"]["result"].get("llm_error") and systems["offline"]["result"]["ptr"]["plan"]


GEMMA_FILE = MODEL_CACHE / "models" / GEMMA_270M.file


@needs_llama(not (llama_built() and GEMMA_FILE.is_file()) and not os.environ.get("CI"),
             reason="llama.cpp or gemma is not installed here: run `make llm`")
@pytest.mark.slow
def test_models_runs_a_real_local_model_beside_the_heuristic(retriever, capsys, monkeypatch) -> None:
    """gemma-3-270m as LOCAL_MODEL=path, so that its sha256 memo goes to the test's own CACHE_DIR."""
    monkeypatch.setenv("LOCAL_MODEL", str(GEMMA_FILE))
    code, out, _ = run(capsys, QUERY, "--k", "3", "--models", "all", "--no-cache", "--json")
    assert code == 0
    systems = {s["system"]: s for s in json.loads(out)["systems"]}
    gemma = systems[f"local:{GEMMA_270M.name}"]
    assert gemma["label"] == f"local {GEMMA_270M.name}" and not gemma["result"].get("llm_error")
    ptr = gemma["result"]["ptr"]
    assert not ptr["stub_fallback"] and ptr["backend_label"] == f"local {GEMMA_270M.name}", ptr["stub_error"]
    assert systems["offline"]["label"] == OFFLINE_LABEL
