"""Tolerant JSON extraction and one-shot repair, so one bad reply never stops a benchmark."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.agents.llm.base import LLMClient, LLMError, LLMResponse, Usage
from core.agents.llm.cache import CachedClient
from core.settings import redact

MAX_REASON_CHARS = 200
# Stubs and plans are a few hundred characters; a reply past this is not parsed (parsing a 20 MB reply
# of thousands of stubs is where unbounded work starts) but fails as `reply_too_large`.
MAX_REPLY_CHARS = 32_000
_DECODER = json.JSONDecoder()

REPAIR_TEMPLATE = """{prompt}

Your previous reply could not be used ({reason}). The previous reply was:
<<<
{bad}
>>>
Reply again with valid JSON only: one JSON object matching this schema, no prose, no code fences.
Schema: {schema}"""


class MalformedJSON(ValueError):
    """The reply holds no JSON object."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in `text`, ignoring ```json fences and prose around it."""
    if not text or not text.strip():
        raise MalformedJSON("empty response")
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    raise MalformedJSON(f"no JSON object in reply: {text.strip()[:80]!r}")


def _check(
    text: str, validate: Callable[[dict[str, Any]], object] | None
) -> tuple[dict[str, Any] | None, str | None]:
    if len(text) > MAX_REPLY_CHARS:
        return None, _reason("reply_too_large", f"{len(text):,} characters, over the cap of {MAX_REPLY_CHARS:,}")
    try:
        obj = parse_json_object(text)
    except MalformedJSON as exc:
        return None, _reason("malformed_json", exc)
    if validate is not None:
        try:
            validate(obj)
        except ValueError as exc:
            return None, _reason("validation", exc)
    return obj, None


def _reason(kind: str, detail: object) -> str:
    return f"{kind}: {detail}"[:MAX_REASON_CHARS]


def repair_prompt(prompt: str, bad_output: str, reason: str, schema: dict[str, Any] | None) -> str:
    """The original prompt plus the unusable reply and a demand for schema-valid JSON only."""
    return REPAIR_TEMPLATE.format(
        prompt=prompt, reason=reason, bad=bad_output[:4000],
        schema=json.dumps(schema, sort_keys=True) if schema is not None else "{}",
    )


@dataclass(frozen=True)
class JsonReply:
    """What generate_json got: the object (None exactly when `error` says why), the last response,
    tokens and model seconds summed over the call and its repair (waits for a free model excluded)."""

    obj: dict[str, Any] | None
    response: LLMResponse | None
    error: str | None
    usage: Usage
    latency_s: float


def generate_json(
    client: LLMClient,
    prompt: str,
    schema: dict[str, Any] | None,
    temperature: float = 0.0,
    validate: Callable[[dict[str, Any]], object] | None = None,
) -> JsonReply:
    """Ask for a JSON object, repairing once. Never raises for LLM or JSON failures, so a caller can
    record the reason and move on: any exception a client raises (an SDK choking on an HTML page or on
    truncated JSON, say) becomes an `llm_error[...]` reason like a failed call. A caching client stores
    only a reply that passes the same checks, so a failure is never replayed."""
    total = Usage()
    first, error = _ask(client, prompt, schema, temperature, validate)
    if first is None:
        return JsonReply(None, None, error, total, 0.0)
    total += first.usage
    obj, reason = _check(first.text, validate)
    if reason is None:
        return JsonReply(obj, first, None, total, first.latency_s)
    second, error = _ask(client, repair_prompt(prompt, first.text, reason, schema), schema, temperature, validate)
    if second is None:
        return JsonReply(None, first, _reason(error or "llm_error", f"(repairing {reason})"), total,
                         first.latency_s)
    total += second.usage
    obj, reason = _check(second.text, validate)
    return JsonReply(obj, second, reason, total, first.latency_s + second.latency_s)


def _ask(client: LLMClient, prompt: str, schema: dict[str, Any] | None, temperature: float,
         validate: Callable[[dict[str, Any]], object] | None) -> tuple[LLMResponse | None, str | None]:
    """(the response, None), or (None, the failure as an `llm_error[kind]: ...` reason)."""
    try:
        if isinstance(client, CachedClient):
            return client.generate(prompt, schema=schema, temperature=temperature,
                                   accept=lambda text: _check(text, validate)[1] is None), None
        return client.generate(prompt, schema=schema, temperature=temperature), None
    except LLMError as exc:
        return None, _reason(f"llm_error[{exc.kind}]", exc.message)
    except Exception as exc:  # noqa: BLE001 - a client's fault ends this call, never the query or the run
        secrets = getattr(client, "secrets", ())
        detail = redact(f"{type(exc).__name__}: {exc}", secrets)
        return None, _reason("llm_error[client]", detail)
