"""OPENAI_BASE_URL naming several servers: calls in turn, retries on the next one, provenance without credentials."""
from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from core.agents.llm import make_client
from core.agents.llm.base import LLMUnavailable
from core.agents.llm.openai_compat import OpenAICompatClient, public_url
from core.cli.bench import llm_provenance
from core.settings import Settings
from tests.fake_llm_servers import FakeServer, openai_error, openai_ok


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    started = [FakeServer().start() for _ in range(3)]
    yield started
    for server in started:
        server.stop()


def pool_url(servers: list[FakeServer]) -> str:
    """Comma-separated, with spaces and credentials in the URLs, as a user might write it."""
    return " , ".join(f"http://user:s3cret@127.0.0.1:{s.port}/v1" for s in servers)


def test_calls_go_to_each_server_in_turn(servers: list[FakeServer]) -> None:
    for server in servers:
        server.enqueue(*(openai_ok(json.dumps({"port": server.port})) for _ in range(2)))
    client = OpenAICompatClient(pool_url(servers), "m", sleep=lambda _: None)
    replies = [json.loads(client.generate(f"q{i}").text)["port"] for i in range(6)]
    assert replies == [s.port for s in servers] * 2
    assert [len(s.requests) for s in servers] == [2, 2, 2]
    assert all(r.path == "/v1/chat/completions" for s in servers for r in s.requests)


def test_a_failed_attempt_is_retried_on_the_next_server(servers: list[FakeServer]) -> None:
    servers[0].enqueue(openai_error(503, "overloaded"))
    servers[1].enqueue(openai_ok("{}"))
    sleeps: list[float] = []
    response = OpenAICompatClient(pool_url(servers[:2]), "m", sleep=sleeps.append).generate("q")
    assert (response.text, response.attempts, len(sleeps)) == ("{}", 2, 1)
    assert [len(s.requests) for s in servers[:2]] == [1, 1]


def test_concurrent_calls_are_spread_evenly(servers: list[FakeServer]) -> None:
    for server in servers:
        server.enqueue(*(replace(openai_ok("{}"), delay_s=0.05) for _ in range(4)))
    client = OpenAICompatClient(pool_url(servers), "m", sleep=lambda _: None)
    with ThreadPoolExecutor(6) as pool:
        assert [r.text for r in pool.map(lambda i: client.generate(f"q{i}"), range(12))] == ["{}"] * 12
    assert [len(s.requests) for s in servers] == [4, 4, 4]


def test_provenance_names_every_server_without_credentials(servers: list[FakeServer]) -> None:
    settings = Settings.from_env(env={"LLM_BACKEND": "openai", "OPENAI_MODEL": "m", "OPENAI_API_KEY": "sk-x",
                                      "OPENAI_BASE_URL": pool_url(servers)})
    recorded = llm_provenance(settings)
    assert recorded == {"llm": {"servers": [f"http://127.0.0.1:{s.port}/v1/" for s in servers],
                                "routing": "round-robin per call"}}
    assert "s3cret" not in json.dumps(recorded) and "s3cret" not in repr(make_client(settings))


def test_one_server_is_unchanged_and_an_empty_list_is_refused(servers: list[FakeServer]) -> None:
    single = OpenAICompatClient(f"{servers[0].url}/v1", "m")
    assert single.identity == f"{servers[0].url}/v1"  # the call cache's keys of existing single-server runs hold
    assert single.provenance() == {"servers": [f"{servers[0].url}/v1/"], "routing": "single"}
    with pytest.raises(LLMUnavailable, match="OPENAI_BASE_URL"):
        make_client(Settings(llm_backend="openai", llm_model="m", openai_base_url=" , "))


def test_public_url_keeps_scheme_host_port_and_path() -> None:
    assert public_url("https://u:p@h.example:8443/v1?key=k#f") == "https://h.example:8443/v1"
    assert public_url("http://[::1]:9/v1") == "http://[::1]:9/v1"
