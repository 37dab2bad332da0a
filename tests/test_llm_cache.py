"""The SQLite call cache: exact replay without HTTP, misses on any changed input, self-healing."""
from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.agents.llm import CachedClient, CallCache, LLMError, LLMResponse, Usage, cache_key
from core.agents.llm.cache import MAX_CACHED_CHARS
from core.agents.llm.jsonparse import MalformedJSON, parse_json_object
from core.agents.llm.gemini import GeminiClient
from core.agents.prompts import DISCOVERY_SCHEMA, DISCOVERY_VERSION, PLANNER_VERSION
from tests.fake_llm_servers import FakeServer, gemini_error, gemini_ok

KEY = "sk-SENTINEL-123"


def usable(text: str) -> bool:
    """What a caller accepts here: a JSON object (generate_json passes its own parse-and-validate check)."""
    try:
        parse_json_object(text)
    except MalformedJSON:
        return False
    return True


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def cache(tmp_path: Path) -> CallCache:
    return CallCache(tmp_path / "llm_calls.sqlite")


def gemini(server: FakeServer) -> GeminiClient:
    return GeminiClient(KEY, base_url=server.url, sleep=lambda _: None)


def test_second_identical_call_replays_without_http(server: FakeServer, cache: CallCache) -> None:
    server.enqueue(gemini_ok('{"stubs": [{"name": "get_weather"}]}', 21, 8, 5))
    client = CachedClient(gemini(server), cache, DISCOVERY_VERSION)
    first = client.generate("weather in Paris", schema=DISCOVERY_SCHEMA, temperature=0.0, accept=usable)
    second = client.generate("weather in Paris", schema=DISCOVERY_SCHEMA, temperature=0.0, accept=usable)
    assert len(server.requests) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text and second.usage == first.usage == Usage(21, 8, 5)
    assert second.latency_s == first.latency_s and second.attempts == first.attempts
    assert (second.backend, second.model) == ("gemini", "gemini-2.5-flash")
    assert (client.backend, client.model) == ("gemini", "gemini-2.5-flash")


def test_replay_survives_reopening_the_file(server: FakeServer, tmp_path: Path) -> None:
    server.enqueue(gemini_ok("{}"))
    path = tmp_path / "c.sqlite"
    CachedClient(gemini(server), CallCache(path), PLANNER_VERSION).generate("q", accept=usable)
    again = CachedClient(gemini(server), CallCache(path), PLANNER_VERSION).generate("q", accept=usable)
    assert again.cached and len(server.requests) == 1


@pytest.mark.parametrize(("version", "prompt", "schema", "temperature"), [
    (PLANNER_VERSION, "q", DISCOVERY_SCHEMA, 0.0),
    (DISCOVERY_VERSION, "q2", DISCOVERY_SCHEMA, 0.0),
    (DISCOVERY_VERSION, "q", {"type": "OBJECT"}, 0.0),
    (DISCOVERY_VERSION, "q", DISCOVERY_SCHEMA, 0.7),
], ids=["prompt_version", "prompt", "schema", "temperature"])
def test_any_changed_input_misses(
    version: str, prompt: str, schema: dict[str, Any], temperature: float, server: FakeServer, cache: CallCache
) -> None:
    server.enqueue(gemini_ok('{"a": 1}'), gemini_ok('{"a": 2}'))
    CachedClient(gemini(server), cache, DISCOVERY_VERSION).generate("q", schema=DISCOVERY_SCHEMA, temperature=0.0,
                                                                     accept=usable)
    resp = CachedClient(gemini(server), cache, version).generate(prompt, schema=schema, temperature=temperature,
                                                                 accept=usable)
    assert not resp.cached and resp.text == '{"a": 2}' and len(server.requests) == 2


def test_cache_key_is_canonical() -> None:
    schema_a = {"type": "OBJECT", "properties": {"a": {"type": "STRING"}, "b": {"type": "STRING"}}}
    schema_b = {"properties": {"b": {"type": "STRING"}, "a": {"type": "STRING"}}, "type": "OBJECT"}
    key = cache_key("gemini", "m", "v1", "p", 0, schema_a)
    assert key == cache_key("gemini", "m", "v1", "p", 0.0, schema_b)
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    # the documented inputs, as canonical JSON (sorted keys, no spaces, temperature a float)
    canonical = ('{"backend":"gemini","identity":"","model":"m","prompt":"p","prompt_version":"v1",'
                 '"schema":{"properties":{"a":{"type":"STRING"},"b":{"type":"STRING"}},"type":"OBJECT"},'
                 '"temperature":0.0}')
    assert key == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert key != cache_key("gemini", "m", "v1", "p", 0.0, schema_a, identity="http://other")
    assert key != cache_key("openai", "m", "v1", "p", 0.0, schema_a)
    assert key != cache_key("gemini", "m2", "v1", "p", 0.0, schema_a)


def test_disabled_or_absent_cache_always_calls(server: FakeServer, cache: CallCache) -> None:
    server.enqueue(*[gemini_ok("{}") for _ in range(4)])
    for client in (CachedClient(gemini(server), cache, "v", enabled=False), CachedClient(gemini(server), None, "v")):
        client.generate("q", accept=usable)
        assert not client.generate("q", accept=usable).cached
    assert len(server.requests) == 4 and len(cache) == 0


def test_failures_are_not_cached(server: FakeServer, cache: CallCache) -> None:
    server.enqueue(gemini_error(400, "bad"), gemini_ok("{}"))
    client = CachedClient(gemini(server), cache, "v")
    with pytest.raises(LLMError):
        client.generate("q", accept=usable)
    assert len(cache) == 0
    assert not client.generate("q", accept=usable).cached and len(server.requests) == 2


def test_corrupt_cache_file_is_moved_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "llm_calls.sqlite"
    path.write_bytes(b"this is not a database, just some bytes " * 200)
    cache = CallCache(path)
    [moved] = list(tmp_path.glob("llm_calls.sqlite.corrupt-*"))
    assert moved.read_bytes().startswith(b"this is not a database")
    assert "unreadable" in caplog.text
    response = LLMResponse("{}", Usage(1, 2, 3), 0.5, "gemini", "m")
    cache.put("k", "v", response)
    assert cache.get("k") == LLMResponse("{}", Usage(1, 2, 3), 0.5, "gemini", "m", cached=True)


def test_concurrent_use_from_threads(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")

    class Echo:
        backend, model = "fake", "echo"

        def generate(self, prompt: str, *, schema: dict[str, Any] | None = None,
                     temperature: float = 0.0) -> LLMResponse:
            return LLMResponse(prompt.upper(), Usage(1, 1, 0), 0.01, self.backend, self.model)

    client = CachedClient(Echo(), cache, "v")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                assert client.generate(f"p{(n + i) % 10}", accept=bool).text == f"P{(n + i) % 10}"
        except BaseException as exc:  # surfaced below; a thread's failure would otherwise vanish
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(cache) == 10


def test_api_key_never_reaches_the_cache(server: FakeServer, tmp_path: Path) -> None:
    server.enqueue(gemini_ok('{"ok": true}'))
    path = tmp_path / "c.sqlite"
    client = CachedClient(gemini(server), CallCache(path), "v")
    client.generate("q", accept=usable)
    assert KEY not in repr(client)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT * FROM llm_calls").fetchall()
    conn.close()
    assert len(rows) == 1 and KEY not in repr(rows)
    for file in tmp_path.iterdir():
        assert KEY.encode() not in file.read_bytes()


@pytest.mark.parametrize("reply", ["", "I'm sorry, I can't help with that.", '{"stubs": [', "[1, 2]"],
                         ids=["empty", "refusal", "truncated", "not_an_object"])
def test_a_reply_the_caller_rejects_is_never_stored(reply: str, server: FakeServer, cache: CallCache) -> None:
    server.enqueue(gemini_ok(reply), gemini_ok('{"stubs": []}'))
    client = CachedClient(gemini(server), cache, "v")
    assert client.generate("q", accept=usable).text == reply
    assert len(cache) == 0
    fixed = client.generate("q", accept=usable)  # the server is fixed: the query is asked again, not replayed
    assert (fixed.text, fixed.cached, len(server.requests)) == ('{"stubs": []}', False, 2)


def test_without_accept_nothing_is_stored(server: FakeServer, cache: CallCache) -> None:
    server.enqueue(gemini_ok("{}"))
    CachedClient(gemini(server), cache, "v").generate("q")
    assert len(cache) == 0


def test_a_stored_reply_the_caller_now_rejects_is_dropped(server: FakeServer, cache: CallCache) -> None:
    """A poisoned row written by older code (it cached any 200) is never replayed."""
    client = CachedClient(gemini(server), cache, "v")
    cache.put(client._key("q", None, 0.0), "v", LLMResponse("not json", Usage(1, 1, 0), 0.1, "gemini", "m"))
    server.enqueue(gemini_ok('{"ok": 1}'))
    reply = client.generate("q", accept=usable)
    assert (reply.text, reply.cached, len(server.requests)) == ('{"ok": 1}', False, 1)
    assert client.generate("q", accept=usable).cached


def test_an_oversized_reply_is_not_stored(server: FakeServer, cache: CallCache) -> None:
    huge = '{"a": "' + "x" * MAX_CACHED_CHARS + '"}'
    server.enqueue(gemini_ok(huge))
    assert CachedClient(gemini(server), cache, "v").generate("q", accept=usable).text == huge
    assert len(cache) == 0


def test_a_key_echoed_in_a_successful_reply_is_scrubbed(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    server.enqueue(gemini_ok(f'{{"stubs": [{{"name": "get_key", "reasoning": "the key is {KEY}"}}]}}'))
    client = CachedClient(gemini(server), CallCache(path), "v", secrets=(KEY,))
    reply = client.generate("q", accept=usable)
    assert KEY not in reply.text and "***" in reply.text
    assert client.generate("q", accept=usable).cached
    for file in tmp_path.iterdir():
        assert KEY.encode() not in file.read_bytes()
