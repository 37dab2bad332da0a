"""Both SDK-backed clients against local fake servers: success, retries, failures, JSON repair."""
from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.agents.llm import LLMError, Usage, generate_json, make_client, parse_json_object
from core.agents.llm.base import LLMClient, kind_for_status
from core.agents.llm.gemini import GeminiClient
from core.agents.llm.jsonparse import MalformedJSON
from core.agents.llm.openai_compat import OpenAICompatClient
from core.agents.llm.retry import RetryPolicy, call_with_retry
from core.agents.prompts import DISCOVERY_SCHEMA, PLANNER_SCHEMA, validate_plan, validate_stubs
from core.settings import Settings
from tests.fake_llm_servers import (
    FakeServer, Scripted, closed_port, gemini_error, gemini_ok, gemini_prompt_blocked, gemini_reply_blocked,
    openai_error, openai_filtered, openai_ok,
)

KEY = "sk-SENTINEL-123"
BACKENDS = ("gemini", "openai")


class SleepRecorder:
    """Injected in place of time.sleep: records the waits, never waits."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


def client_for(backend: str, url: str, sleep: Callable[[float], None], **kw: Any) -> LLMClient:
    if backend == "gemini":
        return GeminiClient(KEY, base_url=url, sleep=sleep, **kw)
    return OpenAICompatClient(f"{url}/v1", "fake-model", api_key=KEY, sleep=sleep, **kw)


def ok(backend: str, text: str) -> Scripted:
    return gemini_ok(text) if backend == "gemini" else openai_ok(text)


def err(backend: str, status: int, message: str = "error", headers: dict[str, str] | None = None) -> Scripted:
    return (gemini_error if backend == "gemini" else openai_error)(status, message, headers)


def sent_prompt(backend: str, body: dict[str, Any]) -> str:
    if backend == "gemini":
        return str(body["contents"][0]["parts"][0]["text"])
    return str(body["messages"][0]["content"])


# --- success and request shape -------------------------------------------------------------

def test_gemini_success_parses_text_usage_and_sends_json_mode(server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(gemini_ok('{"stubs": []}', prompt_tokens=11, output_tokens=7, thoughts_tokens=3))
    client = client_for("gemini", server.url, sleeps)
    resp = client.generate("find a hotel", schema=DISCOVERY_SCHEMA, temperature=0.2)
    assert resp.text == '{"stubs": []}'
    assert resp.usage == Usage(11, 7, 3) and resp.usage.total == 21
    assert (resp.backend, resp.model, resp.cached, resp.attempts) == ("gemini", "gemini-2.5-flash", False, 1)
    assert resp.latency_s > 0
    [req] = server.requests
    assert req.path == "/v1/models/gemini-2.5-flash:generateContent"
    assert req.headers["x-goog-api-key"] == KEY
    config = req.body["generationConfig"]
    assert config["temperature"] == 0.2 and config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["type"] == "OBJECT"
    assert sent_prompt("gemini", req.body) == "find a hotel"


def test_gemini_missing_usage_counts_as_zero(server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(gemini_ok("{}", thoughts_tokens=None))
    resp = client_for("gemini", server.url, sleeps).generate("q", schema=DISCOVERY_SCHEMA)
    assert resp.usage == Usage(11, 7, 0)


def test_openai_success_parses_usage_and_sends_json_object(server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(openai_ok('{"a": 1}', prompt_tokens=13, completion_tokens=5, reasoning_tokens=2))
    resp = client_for("openai", server.url, sleeps).generate("q", schema=PLANNER_SCHEMA, temperature=0.0)
    assert resp.text == '{"a": 1}'
    # reasoning is inside OpenAI's completion_tokens; it is split out to match Gemini's accounting
    assert resp.usage == Usage(prompt_tokens=13, output_tokens=3, thoughts_tokens=2)
    assert (resp.backend, resp.model, resp.attempts) == ("openai", "fake-model", 1)
    [req] = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.body["temperature"] == 0.0 and req.body["model"] == "fake-model"


def test_openai_without_key_sends_placeholder(server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(openai_ok("{}", reasoning_tokens=None))
    resp = OpenAICompatClient(f"{server.url}/v1", "m", sleep=sleeps).generate("q", schema={})
    assert resp.usage == Usage(13, 5, 0)
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


# --- retries and failures --------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_rate_limit_then_success_retries_once(backend: str, server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(err(backend, 429), ok(backend, "{}"))
    resp = client_for(backend, server.url, sleeps).generate("q", schema={})
    assert resp.attempts == 2 and len(server.requests) == 2
    assert len(sleeps.calls) == 1 and 0.25 <= sleeps.calls[0] <= 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_retry_after_header_is_honoured(backend: str, server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(err(backend, 429, headers={"Retry-After": "3"}), ok(backend, "{}"))
    client_for(backend, server.url, sleeps).generate("q", schema={})
    assert sleeps.calls == [3.0]


def test_gemini_retry_info_delay_is_honoured(server: FakeServer, sleeps: SleepRecorder) -> None:
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]}}
    server.enqueue(Scripted(429, body), gemini_ok("{}"))
    client_for("gemini", server.url, sleeps).generate("q")
    assert sleeps.calls == [7.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_errors_exhaust_attempts(backend: str, server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(*[err(backend, 500) for _ in range(3)])
    with pytest.raises(LLMError) as info:
        client_for(backend, server.url, sleeps, max_attempts=3).generate("q")
    assert info.value.kind == "server" and info.value.attempts == 3 and info.value.status == 500
    assert len(server.requests) == 3 and len(sleeps.calls) == 2
    assert sleeps.calls[1] >= sleeps.calls[0] * 0.5  # backoff grows (jittered)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("status", "kind"), [(400, "bad_request"), (401, "auth"), (403, "auth")])
def test_client_errors_are_not_retried(
    backend: str, status: int, kind: str, server: FakeServer, sleeps: SleepRecorder
) -> None:
    server.enqueue(err(backend, status), ok(backend, "{}"))
    with pytest.raises(LLMError) as info:
        client_for(backend, server.url, sleeps).generate("q")
    assert info.value.kind == kind and info.value.attempts == 1
    assert len(server.requests) == 1 and sleeps.calls == []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow
def test_slow_server_times_out(backend: str, server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(*[Scripted(200, {}, delay_s=1.5) for _ in range(2)])
    with pytest.raises(LLMError) as info:
        client_for(backend, server.url, sleeps, timeout_s=0.5, max_attempts=2).generate("q")
    assert info.value.kind == "timeout" and info.value.attempts == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_connection_refused_is_transport(backend: str, sleeps: SleepRecorder) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(LLMError) as info:
        client_for(backend, url, sleeps, max_attempts=2).generate("q")
    assert info.value.kind == "transport" and info.value.attempts == 2 and len(sleeps.calls) == 1


# --- JSON parsing and the one repair call ----------------------------------------------------

@pytest.mark.parametrize("text", [
    '{"a": 1}',
    '```json\n{"a": 1}\n```',
    'Sure! Here it is:\n{"a": 1}\nHope that helps {not json}',
    'prose {broken then {"a": 1}',
])
def test_parse_json_object_tolerates_fences_and_prose(text: str) -> None:
    assert parse_json_object(text) == {"a": 1}


def test_parse_json_object_keeps_braces_inside_strings() -> None:
    assert parse_json_object('x {"s": "a } b {", "n": {"m": []}} y') == {"s": "a } b {", "n": {"m": []}}


@pytest.mark.parametrize("text", ["", "   ", "no json here", "[1, 2]", '{"a": 1'])
def test_parse_json_object_rejects_non_objects(text: str) -> None:
    with pytest.raises(MalformedJSON):
        parse_json_object(text)


@pytest.mark.parametrize("backend", BACKENDS)
def test_malformed_json_gets_one_repair_then_reports(backend: str, server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(ok(backend, "I think you need a weather tool."), ok(backend, "still not json"))
    client = client_for(backend, server.url, sleeps)
    reply = generate_json(client, "q", DISCOVERY_SCHEMA, 0.0, validate_stubs)
    obj, resp, reason, usage = reply.obj, reply.response, reply.error, reply.usage
    assert obj is None and reason is not None and reason.startswith("malformed_json:")
    assert resp is not None and resp.text == "still not json"
    assert len(server.requests) == 2
    repair = sent_prompt(backend, server.requests[1].body)
    assert repair.startswith("q\n") and "I think you need a weather tool." in repair and "valid JSON only" in repair
    assert usage == resp.usage + resp.usage
    assert reply.latency_s > resp.latency_s > 0  # the model time of both calls


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_stubs_fail_validation_then_repair_succeeds(
    backend: str, server: FakeServer, sleeps: SleepRecorder
) -> None:
    server.enqueue(ok(backend, '{"stubs": []}'), ok(backend, '```json\n{"stubs": [{"name": "get_weather"}]}\n```'))
    reply = generate_json(
        client_for(backend, server.url, sleeps), "q", DISCOVERY_SCHEMA, 0.0, validate_stubs
    )
    obj, resp, reason, usage = reply.obj, reply.response, reply.error, reply.usage
    assert reason is None and obj == {"stubs": [{"name": "get_weather"}]}
    assert resp.text == '```json\n{"stubs": [{"name": "get_weather"}]}\n```'
    assert validate_stubs(obj) == [{"name": "get_weather", "reasoning": ""}]
    assert "validation:" in sent_prompt(backend, server.requests[1].body)
    assert usage.total == 2 * resp.usage.total


def test_validation_failing_twice_reports_validation_reason(server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(gemini_ok('{"stubs": []}'), gemini_ok('{"stubs": [{"reasoning": "x"}]}'))
    reply = generate_json(
        client_for("gemini", server.url, sleeps), "q", DISCOVERY_SCHEMA, 0.0, validate_stubs
    )
    obj, reason = reply.obj, reply.error
    assert obj is None and reason == "validation: stub 0 has no name"


@pytest.mark.parametrize("backend", BACKENDS)
def test_refusal_plan_is_parsed(backend: str, server: FakeServer, sleeps: SleepRecorder) -> None:
    plan = {"selected_apis": [], "steps": [], "refusal": "None of the APIs books flights."}
    server.enqueue(ok(backend, json.dumps(plan)))
    reply = generate_json(client_for(backend, server.url, sleeps), "q", PLANNER_SCHEMA, 0.0, validate_plan)
    obj, reason = reply.obj, reply.error
    assert reason is None and obj == plan
    assert validate_plan(obj)["refusal"] == "None of the APIs books flights."
    assert len(server.requests) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_generate_json_reports_llm_errors_without_raising(
    backend: str, server: FakeServer, sleeps: SleepRecorder
) -> None:
    server.enqueue(*[err(backend, 429) for _ in range(2)])
    client = client_for(backend, server.url, sleeps, max_attempts=2)
    reply = generate_json(client, "q", PLANNER_SCHEMA, 0.0, validate_plan)
    obj, resp, reason, usage = reply.obj, reply.response, reply.error, reply.usage
    assert (obj, resp, usage) == (None, None, Usage())
    assert reason is not None and reason.startswith("llm_error[rate_limit]:")


BLOCKED = {  # a reply the API's filter withheld -> what the error says
    "gemini_prompt": ("gemini", gemini_prompt_blocked("SAFETY"),
                      "the prompt was blocked by the API's safety filter (SAFETY)"),
    "gemini_reply": ("gemini", gemini_reply_blocked("SAFETY"),
                     "the reply was blocked by the API's safety filter (SAFETY)"),
    "gemini_recitation": ("gemini", gemini_reply_blocked("RECITATION"),
                          "the reply was blocked by the API's safety filter (RECITATION)"),
    "openai_content_filter": ("openai", openai_filtered(), "the reply was blocked by the API's content filter"),
    "openai_cut_by_filter": ("openai", openai_filtered('{"selected_apis": ['),
                             "the reply was blocked by the API's content filter"),
}


@pytest.mark.parametrize("name", list(BLOCKED))
def test_a_blocked_reply_is_a_failed_call_not_retried_nor_repaired(
    name: str, server: FakeServer, sleeps: SleepRecorder
) -> None:
    """Not an empty reply to repair (`malformed_json: empty response`) but its own failure kind, asked once."""
    backend, reply, says = BLOCKED[name]
    server.enqueue(reply)  # then the empty queue's 500s, which a retry would meet
    with pytest.raises(LLMError) as info:
        client_for(backend, server.url, sleeps).generate("q", schema=PLANNER_SCHEMA)
    assert (info.value.kind, info.value.retryable, info.value.attempts) == ("blocked", False, 1)
    assert says in info.value.message and len(server.requests) == 1 and sleeps.calls == []

    repaired = ok(backend, json.dumps({"selected_apis": [], "steps": [], "refusal": "none"}))  # a repair's answer
    server.enqueue(reply, repaired)
    answer = generate_json(client_for(backend, server.url, sleeps), "q", PLANNER_SCHEMA, 0.0, validate_plan)
    assert answer.obj is None and answer.error is not None and answer.error.startswith(f"llm_error[blocked]: {says}")
    assert len(server.requests) == 2  # no repair prompt followed


def test_generate_json_reports_error_during_repair(server: FakeServer, sleeps: SleepRecorder) -> None:
    server.enqueue(gemini_ok("nope"), gemini_error(400, "bad"))
    reply = generate_json(client_for("gemini", server.url, sleeps), "q", {}, 0.0)
    obj, resp, reason, usage = reply.obj, reply.response, reply.error, reply.usage
    assert obj is None and resp is not None and resp.text == "nope" and usage == resp.usage
    assert reason is not None and reason.startswith("llm_error[bad_request]:") and "malformed_json" in reason


# --- retry helper ----------------------------------------------------------------------------

def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=3.0)
    error = LLMError("server", "x")
    assert [policy.delay(n, error, rng=lambda: 1.0) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay(2, error, rng=lambda: 0.0) == 0.5
    assert policy.delay(1, LLMError("rate_limit", "x", retry_after_s=500.0)) == policy.max_retry_after_s


def test_call_with_retry_stops_on_non_retryable() -> None:
    calls: list[int] = []

    def boom() -> None:
        calls.append(1)
        raise LLMError("auth", "no")

    with pytest.raises(LLMError):
        call_with_retry(boom, RetryPolicy(), sleep=lambda _: None)
    assert calls == [1]


def test_status_classification() -> None:
    assert [kind_for_status(c) for c in (429, 408, 401, 403, 404, 422, 500, 503)] == [
        "rate_limit", "timeout", "auth", "auth", "bad_request", "bad_request", "server", "server"]
    with pytest.raises(ValueError):
        LLMError("bogus", "x")  # type: ignore[arg-type]


def test_llm_error_pickles() -> None:
    error = pickle.loads(pickle.dumps(LLMError("rate_limit", "slow down", status=429, attempts=3)))
    assert (error.kind, error.message, error.status, error.attempts) == ("rate_limit", "slow down", 429, 3)


# --- secrets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_api_key_never_leaks(
    backend: str, server: FakeServer, sleeps: SleepRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # A server that echoes the key back in its error body must not get it into our messages.
    server.enqueue(err(backend, 500, f"bad key {KEY}"), err(backend, 401, f"invalid key {KEY}"), ok(backend, "{}"))
    client = client_for(backend, server.url, sleeps)
    with pytest.raises(LLMError) as info:
        client.generate("q")
    client.generate("q")
    reply = generate_json(client_for(backend, f"http://127.0.0.1:{closed_port()}", sleeps), "q", {})
    reason = reply.error
    texts = [str(info.value), repr(info.value), info.value.message, repr(client), str(reason), caplog.text]
    assert all(KEY not in t for t in texts)
    assert "***" in str(info.value)
    assert any(r.levelno == logging.INFO and "retrying" in r.getMessage() for r in caplog.records)


def test_make_client_follows_settings() -> None:
    assert make_client(Settings(llm_backend="offline")) is None
    gemini = make_client(Settings(llm_backend="gemini", llm_model="gemini-2.5-pro", gemini_api_key=KEY))
    assert isinstance(gemini, GeminiClient) and gemini.model == "gemini-2.5-pro" and KEY not in repr(gemini)
    compat = make_client(Settings(llm_backend="openai", llm_model="m", openai_base_url="http://127.0.0.1:1/v1"))
    assert isinstance(compat, OpenAICompatClient)
    with pytest.raises(ValueError):
        make_client(Settings(llm_backend="gemini"))
    with pytest.raises(ValueError):
        make_client(Settings(llm_backend="openai", llm_model="m"))
