"""Content-addressed LLM call cache in SQLite, so reruns replay answers exactly and cost nothing.

The key covers everything that changes the answer, the server or model file included; a cache hit
returns the original usage and latency so stored benchmarks stay reproducible. Only a reply that its
caller accepted (generate_json: it parsed into the expected record) and that fits MAX_CACHED_CHARS is
stored: a failed call, an empty or malformed reply or one in the wrong schema is never replayed, so a
query that failed while a server was broken succeeds once it is fixed. A stored reply that the caller
no longer accepts (written by older code) is dropped on read. Where the file cannot be written (a read-only or
full CACHE_DIR) the cache lives in memory for the process, starting from the file's rows when it can be read, with
one warning: a benchmark keeps running, and a run still replays its own answers.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any

from core.agents.llm.base import LLMClient, LLMResponse, Usage
from core.files import CannotWrite, disk_errno, ensure_folder, os_error_words, untold
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
    """One SQLite file in WAL mode; a short-lived connection per operation keeps it thread-safe. In memory (see the
    module's docstring) it is one connection, shared under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._memory: sqlite3.Connection | None = None
        self._memory_lock = threading.Lock()
        try:
            ensure_folder(self.path.parent)
            self._open_file()
        except CannotWrite as exc:
            self._keep_in_memory(exc)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self._memory is not None:
            with self._memory_lock:
                yield self._memory
            return
        with closing(sqlite3.connect(self.path, timeout=30)) as conn:
            yield conn

    def _open_file(self) -> None:
        """The file made ready (an unreadable one moved aside first); CannotWrite when its folder cannot take it."""
        existed = self.path.exists()
        try:
            try:
                self._create()
            except sqlite3.DatabaseError as exc:
                if _code(exc) not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
                    raise
                self._move_aside(exc)
                self._create()
        except sqlite3.DatabaseError as exc:
            if not existed:  # the empty file SQLite made before it found it could not write
                with suppress(OSError):
                    self.path.unlink(missing_ok=True)
            code = errno.ENOSPC if _code(exc) == sqlite3.SQLITE_FULL else disk_errno(self.path.parent)
            words = (os_error_words(OSError(code, ""), self.path.parent) if code else
                     f"{self.path.parent} cannot be written ({exc})")
            raise CannotWrite(None, f"cannot write {self.path.name}: {words}", self.path.parent) from None
        except OSError as exc:  # moving an unreadable file aside, in a read-only folder
            raise CannotWrite(exc.errno, f"cannot move {self.path.name} aside: "
                                         f"{os_error_words(exc, self.path.parent)}", self.path.parent) from None

    def _create(self) -> None:
        with self._lock, self._connection() as conn, conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)

    def _keep_in_memory(self, why: CannotWrite) -> None:
        if untold(why):
            log.warning("the LLM call cache is kept in memory for this run (%s)", why)
        memory = sqlite3.connect(":memory:", check_same_thread=False)
        try:  # a read-only folder's cache still replays: copy its rows in (immutable: SQLite writes nothing there)
            with closing(sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)) as kept:
                kept.backup(memory)
        except sqlite3.Error:  # none there, or unreadable: start empty
            pass
        memory.execute(_SCHEMA)
        self._memory = memory

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
            with self._connection() as conn:
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
            with self._lock, self._connection() as conn, conn:
                conn.execute("INSERT OR REPLACE INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)
        except sqlite3.DatabaseError as exc:
            log.warning("LLM cache write failed (%s); continuing uncached", exc)

    def delete(self, key: str) -> None:
        try:
            with self._lock, self._connection() as conn, conn:
                conn.execute("DELETE FROM llm_calls WHERE key = ?", (key,))
        except sqlite3.DatabaseError as exc:
            log.warning("LLM cache delete failed (%s)", exc)

    def __len__(self) -> int:
        with self._connection() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0])


def _code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of an error (0 when the module raised it itself)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


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
