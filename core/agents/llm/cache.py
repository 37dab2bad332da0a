"""Content-addressed LLM call cache in SQLite, so reruns replay answers exactly and cost nothing.

The key covers everything that changes the answer, the server or model file included; a cache hit
returns the original usage and latency so stored benchmarks stay reproducible. Only a reply that its
caller accepted (generate_json: it parsed into the expected record) and that fits MAX_CACHED_CHARS is
stored: a failed call, an empty or malformed reply or one in the wrong schema is never replayed, so a
query that failed while a server was broken succeeds once it is fixed. A stored reply that the caller
no longer accepts (written by older code) is dropped on read.
"""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from contextlib import closing
from pathlib import Path
from typing import Any

from core.agents.llm.base import LLMClient, LLMResponse, Usage
from core.settings import redact

log = logging.getLogger(__name__)

# A stub or plan reply is under 2 kB; a reply this large is a fault (an echoed prompt, a runaway model),
# and a 20 MB one once wrote about 80 MB to the cache.
MAX_CACHED_CHARS = 32_000
Accept = Callable[[str], bool]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    thoughts_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(
    backend: str, model: str, prompt_version: str, prompt: str, temperature: float,
    schema: dict[str, Any] | None, identity: str = "",
) -> str:
    """sha256 hex of a canonical JSON of every input that can change the reply. `identity` names the
    model beyond its name: the server it is asked on, or the sha256 of a local model file."""
    payload = {
        "backend": backend, "model": model, "prompt_version": prompt_version,
        "prompt": prompt, "temperature": float(temperature), "schema": schema, "identity": identity,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CallCache:
    """One SQLite file in WAL mode; a short-lived connection per operation keeps it thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._create()
        except sqlite3.DatabaseError as exc:
            self._move_aside(exc)
            self._create()

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def _create(self) -> None:
        with self._lock, closing(self._connect()) as conn, conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)

    def _move_aside(self, exc: sqlite3.DatabaseError) -> None:
        """Keep an unreadable file for inspection and start afresh, rather than fail a benchmark."""
        suffix = f".corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 1_000_000:06d}"
        target = self.path.with_name(self.path.name + suffix)
        log.warning("LLM cache %s is unreadable (%s); moved to %s", self.path, exc, target.name)
        self.path.replace(target)
        for sidecar in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + sidecar)
            if side.exists():
                side.replace(target.with_name(target.name + sidecar))

    def get(self, key: str) -> LLMResponse | None:
        """The stored response marked `cached=True`, or None on a miss or an unreadable row."""
        try:
            with closing(self._connect()) as conn:
                row = conn.execute(
                    "SELECT text, prompt_tokens, output_tokens, thoughts_tokens, latency_s, backend,"
                    " model, attempts FROM llm_calls WHERE key = ?", (key,),
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            log.warning("LLM cache read failed (%s); treating as a miss", exc)
            return None
        if row is None:
            return None
        text, p_tok, o_tok, t_tok, latency, backend, model, attempts = row
        return LLMResponse(text, Usage(p_tok, o_tok, t_tok), latency, backend, model,
                           cached=True, attempts=attempts)

    def put(self, key: str, prompt_version: str, response: LLMResponse) -> None:
        """Store a successful response; a write failure is logged, never raised."""
        usage = response.usage
        row = (key, response.backend, response.model, prompt_version, response.text,
               usage.prompt_tokens, usage.output_tokens, usage.thoughts_tokens,
               response.latency_s, response.attempts, time.time())
        try:
            with self._lock, closing(self._connect()) as conn, conn:
                conn.execute("INSERT OR REPLACE INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)
        except sqlite3.DatabaseError as exc:
            log.warning("LLM cache write failed (%s); continuing uncached", exc)

    def delete(self, key: str) -> None:
        try:
            with self._lock, closing(self._connect()) as conn, conn:
                conn.execute("DELETE FROM llm_calls WHERE key = ?", (key,))
        except sqlite3.DatabaseError as exc:
            log.warning("LLM cache delete failed (%s)", exc)

    def __len__(self) -> int:
        with closing(self._connect()) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0])


class CachedClient:
    """Wraps an `LLMClient`; the same prompt, settings and prompt version hit the cache.

    Every reply passes through here, so this is where the configured keys (`secrets`) are scrubbed from
    successful replies too: a server that echoes the key in a 200 gets it into no stub, plan, cache row,
    results row or printed answer.
    """

    def __init__(
        self, client: LLMClient, cache: CallCache | None, prompt_version: str, enabled: bool = True,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.client = client
        self.cache = cache
        self.prompt_version = prompt_version
        self.enabled = enabled
        self.secrets = tuple(s for s in secrets if s)
        self.backend = client.backend
        self.model = client.model

    def __repr__(self) -> str:
        return f"CachedClient({self.client!r}, prompt_version={self.prompt_version!r}, enabled={self.enabled})"

    def generate(
        self, prompt: str, *, schema: dict[str, Any] | None = None, temperature: float = 0.0,
        accept: Accept | None = None,
    ) -> LLMResponse:
        """The cached reply if there is one that `accept` takes, else the model's; the model's is stored
        only when `accept` takes it (without `accept` nothing is stored: nothing says the reply is usable)."""
        if not self.enabled or self.cache is None:
            return self._scrub(self.client.generate(prompt, schema=schema, temperature=temperature))
        key = self._key(prompt, schema, temperature)
        hit = self.cache.get(key)
        if hit is not None:
            if accept is not None and accept(hit.text):
                return self._scrub(hit)
            self.cache.delete(key)  # unusable, or nothing vouches for it: never replay it as an answer
        response = self._scrub(self.client.generate(prompt, schema=schema, temperature=temperature))
        if accept is not None and len(response.text) <= MAX_CACHED_CHARS and accept(response.text):
            self.cache.put(key, self.prompt_version, response)
        return response

    def _scrub(self, response: LLMResponse) -> LLMResponse:
        text = redact(response.text, self.secrets)
        return response if text == response.text else replace(response, text=text)

    def _key(self, prompt: str, schema: dict[str, Any] | None, temperature: float) -> str:
        return cache_key(self.backend, self.model, self.prompt_version, prompt, temperature, schema,
                         getattr(self.client, "identity", ""))
