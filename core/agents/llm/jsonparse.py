"""Tolerant JSON extraction and one-shot repair, so one bad reply never stops a benchmark."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.agents.llm.base import FailureKind, LLMClient, LLMError, LLMResponse, Usage
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


@dataclass(frozen=True)
class Unusable:
    """Why a reply is unusable: its text, and its kind when it is a failure rather than the model's own answer."""

    text: str
    failure: FailureKind | None = None


def _check(
    text: str, validate: Callable[[dict[str, Any]], object] | None
) -> tuple[dict[str, Any] | None, Unusable | None]:
    if len(text) > MAX_REPLY_CHARS:
        return None, _failed(FailureKind.REPLY_TOO_LARGE,
                             f"{len(text):,} characters, over the cap of {MAX_REPLY_CHARS:,}")
    try:
        obj = parse_json_object(text)
    except MalformedJSON as exc:
        return None, Unusable(_reason("malformed_json", exc))
    if validate is not None:
        try:
            validate(obj)
        except ValueError as exc:
            return None, Unusable(_reason("validation", exc))
    return obj, None


def _reason(kind: str, detail: object) -> str:
    return f"{kind}: {detail}"[:MAX_REASON_CHARS]


def _tag(kind: FailureKind) -> str:
    return kind.value if kind is FailureKind.REPLY_TOO_LARGE else f"llm_error[{kind}]"


_KINDS_BY_TAG = {_tag(kind): kind for kind in FailureKind}


def failure_reason(kind: FailureKind, detail: object) -> str:
    """A failure as stored and shown: `llm_error[kind]: ...`, or `reply_too_large: ...`."""
    return _reason(_tag(kind), detail)


def _failed(kind: FailureKind, detail: object) -> Unusable:
    return Unusable(failure_reason(kind, detail), kind)


def failure_of(text: str | None) -> FailureKind | None:
    """The kind a failure text names (failure_reason's inverse), for a text read back from the store, which
    keeps no kind of its own; None for no text or the model's own bad answer. The one place that reads it."""
    return _KINDS_BY_TAG.get((text or "").partition(": ")[0])


def repair_prompt(prompt: str, bad_output: str, reason: str, schema: dict[str, Any] | None) -> str:
    """The original prompt plus the unusable reply and a demand for schema-valid JSON only."""
    return REPAIR_TEMPLATE.format(
        prompt=prompt, reason=reason, bad=bad_output[:4000],
        schema=json.dumps(schema, sort_keys=True) if schema is not None else "{}",
    )


@dataclass(frozen=True)
class JsonReply:
    """What generate_json got: the object (None exactly when `error` says why), the last response,
    tokens and model seconds summed over the call and its repair (waits for a free model excluded).
    `failure` is set when the error is a failure (FailureKind), not the model's own malformed answer."""

    obj: dict[str, Any] | None
    response: LLMResponse | None
    error: str | None
    usage: Usage
    latency_s: float
    failure: FailureKind | None = None


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
    first, failed = _ask(client, prompt, schema, temperature, validate)
    if first is None:
        return JsonReply(None, None, failed.text, total, 0.0, failed.failure)
    total += first.usage
    obj, reason = _check(first.text, validate)
    if reason is None:
        return JsonReply(obj, first, None, total, first.latency_s)
    second, failed = _ask(client, repair_prompt(prompt, first.text, reason.text, schema), schema, temperature,
                          validate)
    if second is None:
        return JsonReply(None, first, _reason(failed.text, f"(repairing {reason.text})"), total,
                         first.latency_s, failed.failure)
    total += second.usage
    obj, reason = _check(second.text, validate)
    latency = first.latency_s + second.latency_s
    if reason is None:
        return JsonReply(obj, second, None, total, latency)
    return JsonReply(None, second, reason.text, total, latency, reason.failure)


def _ask(client: LLMClient, prompt: str, schema: dict[str, Any] | None, temperature: float,
         validate: Callable[[dict[str, Any]], object] | None) -> tuple[LLMResponse, None] | tuple[None, Unusable]:
    """(the response, None), or (None, the failure: its kind and its `llm_error[kind]: ...` text)."""
    try:
        if isinstance(client, CachedClient):
            return client.generate(prompt, schema=schema, temperature=temperature,
                                   accept=lambda text: _check(text, validate)[1] is None), None
        return client.generate(prompt, schema=schema, temperature=temperature), None
    except LLMError as exc:
        return None, _failed(exc.kind, exc.message)
    except Exception as exc:  # a client's fault ends this call, never the query or the run
        secrets = getattr(client, "secrets", ())
        detail = redact(f"{type(exc).__name__}: {exc}", secrets)
        return None, _failed(FailureKind.CLIENT, detail)
