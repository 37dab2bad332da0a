"""The local backend with the real gemma-3-270m model through llama.cpp, and its failure paths.

Under CI (`.ci/run` runs `make llm` first) the model tests run and never skip; elsewhere they skip
when llama.cpp is not built. The failure-path tests need no model.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.study.one_query import run_query
from core.study.query_result import QueryOutcome
from core.agents.factory import Agents, make_agents
from core.data.loaders import registry_for
from core.retrieval.assemble import build_retriever, load_encoder
from core.retrieval.embedding import corpus_embeddings
from core.agents.llm import CachedClient, CallCache, LLMError
from core.agents.llm.local_llama import LocalLlamaClient
from core.agents.llm.local_model import LocalModelError, resolve_local_model
from core.local_models import GEMMA_270M
from core.agents.prompts import STYLES
from core.settings import PROJECT_ROOT, Settings
from core.agents.stubs import LLMStubWriter
from tests.helpers import MODEL_CACHE, free_port, llama_built, needs_llama

QUERIES = ("find the top tracks of Taylor Swift on Spotify and then search YouTube for the official video",
           "I need a hotel in Barcelona for 3 nights and the exchange rate from EUR to GBP",
           "Tell me a joke about programmers")
EndToEnd = tuple[Agents, list[QueryOutcome]]  # the agents and each query's outcome


needs_model = needs_llama(not llama_built() and not os.environ.get("CI"),
                          reason="llama.cpp is not built here: run `make llm`")


@pytest.fixture(scope="module")
def local_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The local backend; the model comes from the project's cache (assembled once by `make llm`)."""
    assert llama_built(), "CI runs `make llm` before the tests: llama.cpp must be importable here"
    return Settings.from_env(env={"LLM_BACKEND": "local", "CACHE_DIR": str(MODEL_CACHE), "REGISTRY": "full"})


@pytest.fixture(scope="module")
def full_retriever(local_settings: Settings, tmp_path_factory: pytest.TempPathFactory, graph_cache: Path):
    cache = tmp_path_factory.mktemp("cache")
    shutil.copytree(graph_cache / "onnx", cache / "onnx")  # the encoder's graph, built once per session
    return build_retriever(local_settings.with_(cache_dir=cache))[0]


@pytest.fixture(scope="module")
def end_to_end(local_settings: Settings, full_retriever) -> EndToEnd:
    """Each query through every architecture with gemma's stubs and plans, generated once (seconds a call): the
    end-to-end test checks them, the determinism test writes the first query's stubs again after all of them."""
    agents = make_agents(local_settings, full_retriever, use_cache=False)
    return agents, [run_query(q, 5, full_retriever, local_settings, use_cache=False, agents=agents)
                    for q in QUERIES]


@needs_model
@pytest.mark.slow
def test_stubs_and_both_plans_parse_end_to_end(end_to_end: EndToEnd) -> None:
    agents, outcomes = end_to_end
    assert agents.stub_writer.model == "gemma-3-270m-q4_k_m"
    assert agents.stub_writer.prompt_version == STYLES["completion"].discovery_version
    # stored with every run: AVX2 or AVX-512 kernels
    kernels = agents.stub_writer.client.client.provenance()["cpu_kernels"]
    assert kernels.startswith("CPU :") and "AVX2 = 1" in kernels
    for outcome in outcomes:
        out = outcome.to_json()
        ptr = out["ptr"]
        assert not ptr["stub_fallback"] and 1 <= len(ptr["stubs"]) <= 3, ptr["stub_error"]
        assert ptr["backend_label"] == "local gemma-3-270m-q4_k_m"
        assert all(s["name"] and s["reasoning"] for s in ptr["stubs"])
        for arch in ("rtp", "ptr"):
            plan = out[arch]["plan"]
            assert plan["parse_error"] is None
            assert (plan["refusal"] is None) == bool(plan["selected_apis"])  # select or refuse, never both
            assert plan["fidelity"] in (None, 1.0)  # picks are numbers of offered APIs
            assert plan["usage"]["prompt_tokens"] > 100 and plan["usage"]["output_tokens"] > 5
        assert len(out["hybrid"]["hits"]) == 5


@needs_model
@pytest.mark.slow
def test_the_same_prompt_gives_the_same_reply_whatever_came_before(end_to_end: EndToEnd) -> None:
    """Greedy decoding with reused prompt chunks is deterministic: reuse never changes a reply."""
    agents, outcomes = end_to_end
    first = outcomes[0].writing.stubs
    # other prompts in between (the other queries' stubs, every plan): the KV cache now holds other tokens
    assert agents.stub_writer.write(QUERIES[0]).stubs == first


@needs_model
def test_a_kept_template_prefix_skips_its_chunks_and_changes_no_reply() -> None:
    """Stub and plan prompts alternate on an instance, and each evicts the other from the KV cache: the stub prompt's
    instructions are kept aside once two stub prompts have shared them, loaded for the next one after any other
    prompt, and the reply is the one a fresh instance gives."""
    model = resolve_local_model(GEMMA_270M.name, MODEL_CACHE)
    client = LocalLlamaClient(model, timeout_s=600, n_threads=1, instances=1)
    writer = LLMStubWriter(client, STYLES[client.prompt_style])
    writer.write(QUERIES[0])
    writer.write(QUERIES[1])  # shares the template's chunks with the first: they are kept
    client.generate("Summarise in one line: " + "the registry holds many APIs for hotels, weather and music. " * 12)
    [instance] = client._instances_loaded
    before = instance.restored_tokens
    reply = writer.write(QUERIES[2])
    assert instance.restored_tokens - before >= 64  # at least one whole chunk was loaded, not evaluated
    fresh = LLMStubWriter(LocalLlamaClient(model, timeout_s=600, n_threads=1, instances=1), STYLES[client.prompt_style])
    assert reply.stubs == fresh.write(QUERIES[2]).stubs and reply.stubs


@needs_model
@pytest.mark.slow
def test_a_generation_past_its_deadline_is_a_timeout_and_never_cached(local_settings: Settings,
                                                                     tmp_path: Path) -> None:
    from core.agents.llm.local_llama import LocalLlamaClient

    model = resolve_local_model("", local_settings.cache_dir)
    client = LocalLlamaClient(model, timeout_s=0.05)
    style = STYLES["completion"]
    with pytest.raises(LLMError) as info:
        client.generate(style.discovery(QUERIES[0]), schema=style.discovery_schema())
    assert info.value.kind == "timeout" and "0.05 s limit" in info.value.message
    cache = CallCache(tmp_path / "calls.sqlite")
    outcome = LLMStubWriter(CachedClient(client, cache, style.discovery_version), style).write(QUERIES[0])
    assert outcome.fallback and outcome.error.startswith("llm_error[timeout]")
    assert len(cache) == 0


@needs_model
@pytest.mark.slow
def test_a_reply_cut_short_is_a_parse_failure_that_is_not_cached(local_settings: Settings, tmp_path: Path) -> None:
    from core.agents.llm.local_llama import LocalLlamaClient

    client = LocalLlamaClient(resolve_local_model("", local_settings.cache_dir), max_tokens=6)
    style = STYLES["completion"]
    cache = CallCache(tmp_path / "calls.sqlite")
    outcome = LLMStubWriter(CachedClient(client, cache, style.discovery_version), style).write(QUERIES[1])
    assert outcome.fallback and outcome.error.startswith("malformed_json")
    assert len(cache) == 0  # neither the reply nor its repair is kept


@needs_model
@pytest.mark.slow
def test_openai_compatible_client_against_llama_cpps_real_server(local_settings: Settings, tmp_path: Path) -> None:
    """The OpenAI-compatible client over real HTTP to llama-cpp-python's own server on 127.0.0.1."""
    from core.agents.llm.openai_compat import OpenAICompatClient

    port = free_port()
    model = resolve_local_model("", local_settings.cache_dir)
    log = tmp_path / "server.log"
    with log.open("wb") as out:  # a file, not a pipe: the server logs a lot, and a full pipe would block it
        server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model.path), "--port",
                                   str(port), "--host", "127.0.0.1", "--n_ctx", "1024", "--model_alias", "gemma"],
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:  # the server imports FastAPI and loads the model before it listens
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
                time.sleep(0.3)
        client = OpenAICompatClient(f"http://127.0.0.1:{port}/v1", "gemma", timeout_s=60, max_tokens=12)
        reply = client.generate("The capital of France is")
        # What a base model answers is its own affair (on an AVX2-only CPU gemma's greedy reply was "\n"): the
        # client must carry the server's text and usage over HTTP, whatever they are.
        assert reply.text and reply.usage.prompt_tokens > 0 and 0 < reply.usage.output_tokens <= 12
        assert (reply.backend, reply.model) == ("openai", "gemma")
    finally:
        server.terminate()
        server.wait(10)


# ---------------------------------------------------------------- failure paths (no model needed)

@needs_model
def test_llm_check_judges_whether_the_model_works_not_how_fast(local_settings: Settings) -> None:
    """`make llm`'s check failed on a busy CI machine when the 60 s call timeout cut gemma's stubs short: with a call
    timeout no real reply meets, the check still passes on a model that works, and says its speed."""
    env = {**os.environ, "CACHE_DIR": str(MODEL_CACHE), "LLM_TIMEOUT_S": "0.1"}
    out = subprocess.run([sys.executable, "-m", "core", "llm", "check", "--model", GEMMA_270M.name, "--json"],
                         cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["stub_error"] is None and report["stubs"] and report["generation_tok_s"] > 0


def test_a_missing_model_file_is_one_clear_message(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="LOCAL_MODEL points at .* which is not a file"):
        resolve_local_model(str(tmp_path / "nope.gguf"), tmp_path)


def test_a_file_that_is_not_gguf_is_refused_before_llama_cpp_reads_it(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"<html>not a model</html>")
    with pytest.raises(LocalModelError, match="not a GGUF model file"):
        resolve_local_model(str(fake), tmp_path)


@needs_model
def test_a_damaged_default_model_is_assembled_again(tmp_path: Path) -> None:
    target = tmp_path / "models" / GEMMA_270M.file
    target.parent.mkdir()
    target.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 1000)  # a partial download: right magic, wrong sha
    model = resolve_local_model("", tmp_path)
    assert model.path == target and target.stat().st_size > 200_000_000


@pytest.mark.subprocess
def test_without_llama_cpp_rtp_still_answers_and_the_cli_says_how_to_install(tiny_env, tmp_path: Path,
                                                                             graph_cache: Path) -> None:
    """`import llama_cpp` failing (the wheel not built) is one line on stderr; RtP answers, exit 0."""
    # The index is not this test's subject: the query encoder's graph (built once per session) and the tiny corpus
    # embedded here by the numpy pass, so that the command neither builds the graph nor imports torch to embed.
    settings = Settings.from_env(env=tiny_env)
    shutil.copytree(graph_cache / "onnx", settings.cache_dir / "onnx")
    corpus_embeddings(load_encoder(settings.embedding_model, "numpy"), registry_for(settings), settings.cache_dir)
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "llama_cpp.py").write_text("raise ImportError('simulated: not built')\n")
    env = {**os.environ, **tiny_env, "PYTHONPATH": f"{blocker}{os.pathsep}{PROJECT_ROOT}", "LLM_BACKEND": "local",
           "CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "core", "query", "find hotels in Paris", "--arch", "all", "--json"],
                         cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["rtp"]["hits"] and "ptr" not in result
    assert "make llm" in result["llm_error"]
    assert "LLM unavailable" in out.stderr and "Traceback" not in out.stderr

