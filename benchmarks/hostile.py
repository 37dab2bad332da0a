"""Hostile input, round two (issue 23): replay the issue's reproductions against a checkout and sort each outcome.

Why: the issue is done when one table, over the same cases, is clean before and after, so the cases must run
unchanged against an old commit and against today's code. They run `python -m core` (this venv's Python) on a copy
of the checkout's core/ and ui/ inside each case's own folder: PROJECT_ROOT follows the code's path, and the
default results database, its committed archive and `.streamlit/secrets.toml` live under it, so the copy is what
keeps every case away from the checkout's data/ and secrets. Each case has its own CACHE_DIR (a copy of one warmed
once), results database and data files, a memory cap (RLIMIT_AS) and a timeout, and runs at nice 15 or lower.

Outcomes, one per case (the first that applies):
- lost: stored rows are missing (a run marked complete short of its rows, rows there before gone, a writer that
  exited 0 whose rows are not there);
- traceback: a Python traceback or a native abort in the output, or rc < 0 (a kill on timeout included);
- wrong: a number that differs from an undamaged run, a success where a refusal is due, a file left behind, a
  damaged or foreign file changed, a deadline missed;
- clean: the correct result, or a refusal in one `error:` line with exit 1 or 2 (the CLI's documented codes).

    nice -n 15 .venv/bin/python benchmarks/hostile.py [--root PATH] [--skip-timing] [--cases TEXT] [--json PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent.parent
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"  # the default local model, in CACHE_DIR/models/ in old and new code
CLEAN, TRACEBACK, WRONG, LOST, SKIPPED = "clean", "traceback", "wrong", "lost", "skipped"
VERDICTS = (CLEAN, TRACEBACK, WRONG, LOST)
GROUPS = {1: "1 cached artefacts", 2: "2 deadlines (timing)", 3: "3 unbounded settings", 4: "4 unwritable cache",
          5: "5 damaged/foreign stores", 6: "6 two writers", 7: "7 LLM replies"}
QUERY = "Find hotels in Paris with prices"
TRACE_MARKERS = ("Traceback (most recent call last)", "terminate called", "std::bad_alloc", "Fatal Python error",
                 "Segmentation fault", "core dumped")
ERROR_LINE = re.compile(r"^(?:[\w .-]+: )?error: ")
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b")
SETTING_NAMES = frozenset({"DATABASE_URL", "CACHE_DIR", "INDEX_DIR", "TOOLBENCH_DATA", "REGISTRY", "INDEX",
                           "ENCODER_RUNTIME", "EMBEDDING_MODEL", "PYTHONPATH"})
SETTING_PREFIXES = ("LLM_", "OPENAI_", "GEMINI_", "GOOGLE_", "LOCAL_", "HNSW_", "IVF_")

# Tiny ToolBench data in the compact format (as tests/helpers.py writes it): no case embeds the full registry.
TINY_APIS = (
    ("Hotels", "search hotels", "Travel", "Find hotels in a city with prices"),
    ("Hotels", "hotel details", "Travel", "Details and reviews of one hotel"),
    ("Currency", "exchange rate", "Finance", "Currency exchange rate between two currencies"),
    ("Currency", "convert", "Finance", "Convert an amount from one currency to another"),
    ("IP Lookup", "ip info", "Data", "Look up geolocation of an IP address"),
    (" Weather", "forecast", "Weather", "Weather forecast for a city"),
    ("Jokes", "random joke", "Entertainment", "A random joke"),
    ("Jokes", "joke by category", "Entertainment", "A joke from a category"),
    ("Football", "player stats", "Sports", "Statistics of a football player"),
    ("Football", "transfers", "", "Transfers of football players"),
)
TINY_QUERIES = (  # (subset, query id, text, gold APIs)
    ("G1_instruction", 1, QUERY, (("Hotels", "search hotels"),)),
    ("G1_instruction", 2, "Tell me a random joke", (("Jokes", "random joke"),)),
    ("G2_instruction", 3, "Find hotels in London and check the currency exchange rate",
     (("Hotels", "search hotels"), ("Currency", "exchange rate"))),
    ("G2_instruction", 4, "Weather forecast for Rome and a random joke",
     ((" Weather", "forecast"), ("Jokes", "random joke"))),
)
# One LLM reply that parses both as PtR's stubs and as a plan (as tests/test_cli.py uses), and one with NULs.
REPLY = json.dumps({"stubs": [{"name": "search_hotels", "reasoning": "hotels in a city"}],
                    "selected_apis": [], "steps": ["call the API"], "refusal": "none fits"})
NUL_REPLY = json.dumps({"stubs": [{"name": "search\u0000_hotels", "reasoning": "hotels\u0000 in a city"}],
                        "selected_apis": [], "steps": ["call\u0000 the API"], "refusal": "none\u0000 fits"})


class Skip(Exception):
    """The case cannot run here (no root for read-only mounts, no local model file); it is not counted."""


# ------------------------------------------------------------------ fake LLM servers

def openai_body(text: str) -> dict:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 13, "completion_tokens": 5, "total_tokens": 18}}


def gemini_body(text: str) -> dict:
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18},
            "modelVersion": "gemini-2.5-flash"}


SAFETY = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
GEMINI_PROMPT_BLOCKED = {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": SAFETY},
                         "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
                         "modelVersion": "gemini-2.5-flash"}
GEMINI_REPLY_BLOCKED = {"candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": SAFETY}],
                        "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
                        "modelVersion": "gemini-2.5-flash"}


class FakeLLM:
    """An HTTP server on 127.0.0.1 giving every POST one JSON body (either dialect: the path is not read), or,
    with `hang`, holding every request open until the server stops. Records when the first request came."""

    def __init__(self, body: dict, hang: bool = False) -> None:
        self.body, self.hang = json.dumps(body).encode(), hang
        self.first_request: float | None = None
        self.requests = 0
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def env(self, backend: str) -> dict[str, str]:
        """The settings that point `backend` ("openai" or "gemini") at this server."""
        if backend == "openai":
            return {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": f"{self.url}/v1", "OPENAI_MODEL": "fake-model",
                    "OPENAI_API_KEY": "fake-key"}
        return {"LLM_BACKEND": "gemini", "GEMINI_API_KEY": "fake-key", "GEMINI_BASE_URL": self.url}

    def __enter__(self) -> FakeLLM:
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests += 1
                if server.first_request is None:
                    server.first_request = time.monotonic()
                if server.hang:
                    server._stopping.wait(900)
                    return
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(server.body)))
                    self.end_headers()
                    self.wfile.write(server.body)

        return Handler


# ------------------------------------------------------------------ processes

def tail(path: Path, limit: int = 2_000_000) -> str:
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - limit))
        return fh.read().decode("utf-8", "replace")


@dataclass
class Proc:
    """One finished `python ...` process of a case."""

    argv: list[str]
    rc: int
    out: str
    err: str
    started: float
    ended: float
    killed: str = ""

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    @property
    def crashed(self) -> bool:
        return self.rc < 0 or bool(self.killed) or any(m in self.out or m in self.err for m in TRACE_MARKERS)

    def crash(self) -> str:
        """What the crash looked like, in one line: the kill, or the last line of the traceback or abort."""
        if self.killed:
            return self.killed
        lines = [line for line in (self.err + "\n" + self.out).splitlines() if line.strip()]
        pick = [line for line in lines if line.startswith("terminate called")] or \
            [line for line in lines if EXCEPTION_LINE.match(line)] or lines or ["(no output)"]
        return f"rc {self.rc}: {pick[-1][:300]}"

    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if ERROR_LINE.match(line)]

    @property
    def refused(self) -> bool:
        """A refusal as documented: no crash, exit 1 or 2, one `error:` line."""
        return not self.crashed and self.rc in (1, 2) and len(self.error_lines()) == 1

    def last_lines(self, n: int = 2) -> str:
        lines = [line for line in (self.out + "\n" + self.err).splitlines() if line.strip()]
        return " | ".join(line[:200] for line in lines[-n:]) or "(no output)"

    def json(self) -> Any:
        for text in (self.out, *reversed(self.out.splitlines())):
            with contextlib.suppress(ValueError):
                return json.loads(text)
        return None

    def detail(self) -> dict[str, Any]:
        shown = ["python" if arg == sys.executable else arg[:300] for arg in self.argv]
        return {"argv": shown, "rc": self.rc, "seconds": round(self.seconds, 1), "killed": self.killed,
                "stdout": self.out[-2000:], "stderr": self.err[-4000:]}


@dataclass
class Running:
    popen: subprocess.Popen
    argv: list[str]
    out: Path
    err: Path
    started: float

    def kill(self) -> None:
        """SIGKILL the process group this case started (start_new_session made the process its leader), while
        the leader is not yet reaped, so its id cannot belong to anyone else."""
        if self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)

    def finish(self, timeout: float) -> Proc:
        killed = ""
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.popen.wait()
            killed = f"killed by the harness after {timeout:g} s (a runaway)"
        ended = time.monotonic()
        return Proc(self.argv, rc, tail(self.out), tail(self.err), self.started, ended, killed)


def limits(mem_bytes: int) -> Callable[[], None]:
    """The child's caps: address space (so a runaway fails instead of eating the machine), no core file, nice 15."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.nice(max(0, 15 - os.nice(0)))
    return apply


def core(*args: str) -> list[str]:
    return ["-m", "core", *args]


def lab_variable(name: str) -> bool:
    return name in SETTING_NAMES or name.startswith(SETTING_PREFIXES)


# ------------------------------------------------------------------ a case's folder, and the session

class Box:
    """Where one case runs: its copy of the code (`root`), its CACHE_DIR and results file; keeps every process."""

    def __init__(self, lab: Lab, path: Path, root: Path, cache: Path) -> None:
        self.lab, self.path, self.root, self.cache = lab, path, root, cache
        self.db = path / "results.sqlite"
        self.procs: list[Proc] = []

    def env(self, data: str = "tiny", **extra: str | None) -> dict[str, str]:
        """The environment: this box's paths, the offline backend, tiny data (or the documented registry of the
        checkout's own ToolBench files); an `extra` value of None removes that variable."""
        env = {k: v for k, v in os.environ.items() if not lab_variable(k)}
        env |= {"PYTHONPATH": str(self.root), "CACHE_DIR": str(self.cache), "INDEX_DIR": str(self.lab.index),
                "DATABASE_URL": f"sqlite:///{self.db}", "LLM_BACKEND": "offline", "TQDM_DISABLE": "1",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "TOOLBENCH_DATA": str(self.lab.tiny if data == "tiny" else self.lab.real)}
        if data == "documented":
            env["REGISTRY"] = "documented"
        env |= extra
        return {k: v for k, v in env.items() if v is not None}

    def start(self, argv: Sequence[str], env: dict[str, str], readonly: Sequence[Path] = ()) -> Running:
        """Start `python argv` in the box's code copy; `readonly` folders are mounted read-only for it alone."""
        n = sum(1 for _ in self.path.glob("proc-*.out"))
        out, err = self.path / f"proc-{n}.out", self.path / f"proc-{n}.err"
        command = [self.lab.python, *argv]
        if readonly:
            if os.geteuid() != 0 or not shutil.which("unshare"):
                raise Skip("read-only mounts need root and unshare")
            mounts = " && ".join(f"mount --bind {shlex.quote(str(p))} {shlex.quote(str(p))} && "
                                 f"mount -o remount,bind,ro {shlex.quote(str(p))}" for p in readonly)
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c", f'{mounts} && exec "$@"', "sh",
                       *command]
        with out.open("wb") as fo, err.open("wb") as fe:
            popen = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, cwd=self.root, env=env,
                                     preexec_fn=limits(self.lab.mem_bytes), start_new_session=True)
        return Running(popen, [self.lab.python, *argv], out, err, time.monotonic())

    def run(self, argv: Sequence[str], env: dict[str, str], timeout: float = 240,
            readonly: Sequence[Path] = ()) -> Proc:
        proc = self.start(argv, env, readonly).finish(timeout)
        self.procs.append(proc)
        return proc


@dataclass
class Lab:
    """One harness run against one checkout: the copied code, data and warmed cache every case starts from."""

    root: Path
    work: Path
    python: str
    mem_bytes: int
    gguf_source: Path | None  # the local model file to copy, when a chosen case needs it
    baselines: dict[str, Proc] = field(default_factory=dict)

    @property
    def code(self) -> Path:
        return self.work / "code"

    @property
    def tiny(self) -> Path:
        return self.work / "tiny"

    @property
    def real(self) -> Path:
        return self.work / "toolbench"

    @property
    def index(self) -> Path:
        return self.work / "index"

    @property
    def template(self) -> Path:
        return self.work / "template-cache"

    @property
    def good(self) -> Path:
        """A results database of the checkout's own making (a tiny bench), one file, no WAL."""
        return self.work / "good.sqlite"

    @property
    def gguf(self) -> Path:
        return self.work / GGUF_NAME

    def setup(self, say: Callable[[str], None]) -> None:
        """Copy the code and data, warm a CACHE_DIR (ONNX graph, registries, decoded index, LLM call cache) and
        write a results database, each by the checkout's own code, once for every case."""
        for part in ("core", "ui"):
            shutil.copytree(self.root / part, self.code / part, ignore=shutil.ignore_patterns("__pycache__"))
        (self.code / "data").mkdir()
        for path in (self.root / "data").glob("*.json"):
            shutil.copy2(path, self.code / "data" / path.name)
        write_tiny(self.tiny)
        shutil.copytree(self.root / "data" / "toolbench", self.real)
        self.index.mkdir()
        for path in (self.root / "data" / "index").glob("*--documented.vec"):
            shutil.copy2(path, self.index / path.name)
        box = Box(self, self.work / "setup", self.code, self.template)
        box.path.mkdir()
        steps: list[tuple[str, list[str], dict[str, str]]] = [
            ("tiny query (builds the ONNX graph)", core("query", QUERY, "--json"), box.env()),
            ("documented query (decodes the shipped index)", core("query", QUERY, "--json"), box.env("documented")),
            ("tiny bench (the results database)",
             core("bench", "main", "--subsets", "G1_instruction,G2_instruction", "--runs", "1", "--no-progress"),
             box.env(DATABASE_URL=f"sqlite:///{self.good}"))]
        with FakeLLM(openai_body(REPLY)) as server:
            steps.append(("tiny LLM query (the LLM call cache)", core("query", QUERY, "--arch", "all", "--json"),
                          box.env(**server.env("openai"))))
            for label, argv, env in steps:
                started = time.monotonic()
                proc = box.run(argv, env, timeout=900)
                if proc.rc != 0 or proc.crashed:
                    raise SystemExit(f"setup failed at {label}: {proc.crash()}\n{proc.err[-3000:]}")
                say(f"setup: {label}: {time.monotonic() - started:.1f} s")
        with contextlib.closing(sqlite3.connect(self.good)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode=DELETE")
        shutil.rmtree(self.good.with_name(self.good.name + "-claims"), ignore_errors=True)
        if self.gguf_source and self.gguf_source.is_file():
            shutil.copy2(self.gguf_source, self.gguf)

    @contextlib.contextmanager
    def box(self, name: str, cache: bool = True, model: bool = False) -> Iterator[Box]:
        """A new folder for one case: the code copy (its bytecode too), the warmed cache when asked (else an empty
        folder) and the local model file linked in; removed afterwards."""
        path = Path(tempfile.mkdtemp(prefix=re.sub(r"[^\w]+", "-", name)[:40] + "-", dir=self.work))
        try:
            shutil.copytree(self.code, path / "root")
            if cache:
                shutil.copytree(self.template, path / "cache")
            else:
                (path / "cache").mkdir()
            if model:
                if not self.gguf.is_file():
                    raise Skip(f"no local model file ({self.gguf_source} is missing)")
                (path / "cache" / "models").mkdir(exist_ok=True)
                os.link(self.gguf, path / "cache" / "models" / GGUF_NAME)
            yield Box(self, path, path / "root", path / "cache")
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def baseline(self, key: str, argv: list[str], data: str) -> Proc:
        """`argv` on an undamaged copy of the warmed cache, once per session."""
        if key not in self.baselines:
            with self.box("baseline-" + key) as box:
                self.baselines[key] = box.run(argv, box.env(data))
        return self.baselines[key]


def write_tiny(folder: Path) -> None:
    """Both registries, the same bytes: "full" is refused without its own file, and old code reads it first too."""
    folder.mkdir(parents=True)
    rows = "".join(json.dumps({"category": category, "tool_name": tool, "api_name": api, "description": description,
                               "doc_source": "full"}) + "\n" for tool, api, category, description in TINY_APIS)
    registry = gzip.compress(rows.encode("utf-8"))
    for name in ("registry_full.jsonl.gz", "registry.jsonl.gz"):
        (folder / name).write_bytes(registry)
    with gzip.open(folder / "queries.jsonl.gz", "wt", encoding="utf-8") as fh:
        for subset, qid, text, gold in TINY_QUERIES:
            fh.write(json.dumps({"subset": subset, "group": subset[:2], "query_id": qid, "query": text,
                                 "relevant_apis": [list(g) for g in gold],
                                 "api_list": [list(g) for g in gold]}) + "\n")


# ------------------------------------------------------------------ files and stores

def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "(missing)"


def listing(folder: Path) -> set[str]:
    """Every file and folder under `folder`, relative, bytecode left out."""
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if "__pycache__" not in path.parts}


def damage(path: Path, how: str) -> None:
    """zero: 64 KB of zeros at 80% of the file, size kept; random: 64 KB of random bytes there; truncate: half."""
    size = path.stat().st_size
    if how == "truncate":
        os.truncate(path, size // 2)
        return
    at = int(size * 0.8)
    length = min(65_536, size - at)
    with path.open("r+b") as fh:
        fh.seek(at)
        fh.write(bytes(length) if how == "zero" else random.Random(23).randbytes(length))


def malformed_copy(good: Path, target: Path) -> None:
    """A copy of a results file whose query_results leaf pages are overwritten (as tests/test_bad_input.py damages
    one in its middle): the schema and the runs still read, the rows do not."""
    with contextlib.closing(sqlite3.connect(good)) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'query_results' "
                                            "AND pagetype = 'leaf'")]
    data = bytearray(good.read_bytes())
    for n in pages:
        data[(n - 1) * size: n * size] = b"\xab" * size
    target.write_bytes(bytes(data))


def foreign_db(target: Path) -> None:
    """Someone else's SQLite database, with free pages a VACUUM would remove."""
    with contextlib.closing(sqlite3.connect(target)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [(f"note {i} " * 40,) for i in range(400)])
        conn.execute("DELETE FROM notes WHERE id % 2 = 0")
        conn.commit()


class RunRow(NamedTuple):
    id: int
    subset: str
    arch: str
    run_index: int
    status: str
    n_queries: int
    rows: int
    distinct: int

    @property
    def whole(self) -> bool:
        return self.status == "complete" and self.distinct >= self.n_queries


def main_runs(db: Path) -> list[RunRow]:
    """The main study's runs in a results file, each with its stored and distinct row counts."""
    if not db.is_file():
        return []
    with contextlib.closing(sqlite3.connect(db, timeout=60)) as conn:
        with contextlib.suppress(sqlite3.Error):
            return [RunRow(*row) for row in conn.execute(
                "SELECT r.id, r.subset, r.arch, r.run_index, r.status, r.n_queries, COUNT(q.id), "
                "COUNT(DISTINCT q.query_uid) FROM runs r LEFT JOIN query_results q ON q.run_id = r.id "
                "WHERE r.kind = 'main' GROUP BY r.id ORDER BY r.id")]
    return []


def stored_rows(db: Path) -> set[tuple[int, str]]:
    if not db.is_file():
        return set()
    with contextlib.closing(sqlite3.connect(db, timeout=60)) as conn:
        with contextlib.suppress(sqlite3.Error):
            return set(conn.execute("SELECT run_id, query_uid FROM query_results"))
    return set()


def failure_labels(db: Path) -> list[str]:
    """The PtR stub errors and every plan stored in the results file, as text."""
    with contextlib.closing(sqlite3.connect(db, timeout=60)) as conn:
        rows = conn.execute("SELECT stub_error, plan FROM query_results").fetchall()
    return [str(value) for row in rows for value in row if value]


# ------------------------------------------------------------------ verdicts shared by several cases

Outcome = tuple[str, str]


def refusal_due(proc: Proc, names: Sequence[str]) -> Outcome:
    """Bad input: one `error:` line naming the setting, exit 1 or 2."""
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if proc.rc == 0:
        return WRONG, f"exit 0: it ran where a refusal is due ({proc.last_lines(1)})"
    if not proc.refused:
        return WRONG, f"exit {proc.rc} without one error line: {proc.last_lines()}"
    line = proc.error_lines()[0]
    if not any(name.lower() in line.lower() for name in names):
        return WRONG, f"the refusal does not name {names[0]}: {line}"
    return CLEAN, line


def answers_or_refuses(proc: Proc) -> Outcome:
    """Either a query's answer (RtP hits) with exit 0, or one `error:` line."""
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if proc.rc == 0:
        data = proc.json()
        if isinstance(data, dict) and data.get("rtp", {}).get("hits"):
            return CLEAN, f"answered (RtP top-1 {data['rtp']['hits'][0]['api_name']!r})"
        return WRONG, f"exit 0 without an answer: {proc.last_lines()}"
    if proc.refused:
        return CLEAN, proc.error_lines()[0]
    return WRONG, f"exit {proc.rc} without one error line: {proc.last_lines()}"


def notice(proc: Proc) -> str:
    """The first warning line a run printed, if any."""
    return next((line.strip() for line in proc.err.splitlines() if "WARNING" in line or "rebuil" in line.lower()), "")


# ------------------------------------------------------------------ 1. cached artefacts

ARTEFACTS: dict[str, tuple[str, dict[str, str]]] = {  # which cached file: (its glob in CACHE_DIR, settings)
    "ONNX graph": ("onnx/*.onnx", {}),
    "decoded index": ("emb-*-f16-*.npy", {}),
    "registry cache": ("registry-*.marshal", {}),
    "HNSW index": ("ann-*.faiss", {"INDEX": "hnsw", "OMP_NUM_THREADS": "1"}),
}


def numbers(proc: Proc, command: str) -> Any:
    """What must not move: RtP's hits and scores (query), or the recall, precision and hit rate (eval)."""
    data = proc.json()
    if not isinstance(data, dict):
        return None
    if command == "query":
        return [(h["tool_name"], h["api_name"], h["score"]) for h in data["rtp"]["hits"]], data["rtp"]["top1_score"]
    return {key: data.get(key) for key in ("n", "recall", "precision", "hit_rate")}


def artefact_case(artefact: str, how: str, command: str, lab: Lab, box: Box) -> Outcome:
    """Damage one cached file of the documented registry's run, then compare the output with an undamaged run."""
    pattern, settings = ARTEFACTS[artefact]
    argv = core("query", QUERY, "--k", "5", "--json") if command == "query" else \
        core("eval", "--arch", "rtp", "--subset", "G1_instruction", "--k", "5", "--json")
    env = box.env("documented", **settings)
    if artefact == "HNSW index":  # built by the first run, in this box's cache
        base = box.run(argv, env)
    else:
        base = lab.baseline(command, argv, "documented")
        box.procs.append(base)
    if base.crashed or base.rc != 0:
        return (TRACEBACK if base.crashed else WRONG), f"the undamaged run failed: {base.crash()}"
    files = sorted(box.cache.glob(pattern), key=lambda p: p.stat().st_size)
    if not files:
        raise Skip(f"no {pattern} in CACHE_DIR to damage")
    damage(files[-1], how)
    after = box.run(argv, env)
    if after.crashed:
        return TRACEBACK, after.crash()
    if after.rc != 0:
        return WRONG, f"exit {after.rc} instead of rebuilding: {after.last_lines()}"
    before_n, after_n = numbers(base, command), numbers(after, command)
    if after_n != before_n:
        if command == "query":
            return WRONG, f"top-1 score {after_n[1]:.6f} instead of {before_n[1]:.6f}, silently" if after_n else \
                f"no answer: {after.last_lines()}"
        return WRONG, f"eval {after_n} instead of {before_n}"
    said = notice(after)
    return CLEAN, "same numbers as undamaged" + (f"; said: {said[:200]}" if said else " (no warning printed)")


# ------------------------------------------------------------------ 2. deadlines

def deadline_case(backend: str, lab: Lab, box: Box) -> Outcome:
    """A server that never answers; LLM_QUERY_BUDGET_S=5 must end the query within 5 + 2 s of its first call."""
    body = openai_body(REPLY) if backend == "openai" else gemini_body(REPLY)
    with FakeLLM(body, hang=True) as server:
        env = box.env(LLM_QUERY_BUDGET_S="5", LLM_TIMEOUT_S="60", **server.env(backend))
        proc = box.run(core("query", QUERY, "--arch", "all", "--json"), env, timeout=400)
        first = server.first_request
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if first is None:
        return WRONG, f"no LLM call reached the server: {proc.last_lines()}"
    took = proc.ended - first
    if took > 5 + 2:
        return WRONG, f"the query took {took:.1f} s from its first LLM call (budget 5 s + 2 s)"
    outcome = answers_or_refuses(proc)
    return outcome[0], f"{took:.1f} s from the first LLM call; {outcome[1]}"


# ------------------------------------------------------------------ 3. settings without bounds

def setting_case(env_extra: dict[str, str], args: Sequence[str], data: str, names: Sequence[str],
                 lab: Lab, box: Box) -> Outcome:
    proc = box.run(core(*args), box.env(data, **env_extra), timeout=120)
    return refusal_due(proc, names)


INSPECTOR_QID = ("from ui.inspector_view import parse_view\n"
                 "view, messages = parse_view({'qid': 'G1_instruction:' + '9' * 5000}, 5, ('offline',))\n"
                 "print(view.qid is None, len(messages))\n")


def inspector_qid_case(lab: Lab, box: Box) -> Outcome:
    """The Inspector's URL parsing (ui.inspector_view.parse_view) on a 5,000-digit query id, without a browser."""
    proc = box.run(["-c", INSPECTOR_QID], box.env(), timeout=120)
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if proc.out.split()[:1] == ["True"] and proc.out.split()[1:2] != ["0"]:
        return CLEAN, "the link's query id is refused with a message"
    return WRONG, f"the 5,000-digit query id was taken: {proc.last_lines()}"


# ------------------------------------------------------------------ 4. cache folders that cannot be written

def cache_case(variant: str, lab: Lab, box: Box) -> Outcome:
    argv = core("query", QUERY, "--json")
    if variant == "/proc/self/nope":
        return answers_or_refuses(box.run(argv, box.env(CACHE_DIR="/proc/self/nope")))
    if variant == "read-only, a subfolder":
        return answers_or_refuses(box.run(argv, box.env(CACHE_DIR=str(box.cache / "sub")), readonly=[box.cache]))
    if variant in ("read-only, empty", "read-only, filled, offline"):
        return answers_or_refuses(box.run(argv, box.env(), readonly=[box.cache]))
    with FakeLLM(openai_body(REPLY)) as server:  # read-only, filled, with an LLM backend
        return answers_or_refuses(box.run(core("query", QUERY, "--arch", "all", "--json"),
                                          box.env(**server.env("openai")), readonly=[box.cache]))


# ------------------------------------------------------------------ 5. damaged results files and foreign databases

def archive_case(command: str, how: str, lab: Lab, box: Box) -> Outcome:
    """The committed archive (data/results.sqlite.gz of the code copy) truncated or random; no DATABASE_URL."""
    data = box.root / "data"
    packed = gzip.compress(lab.good.read_bytes(), mtime=0)
    archive = data / "results.sqlite.gz"
    archive.write_bytes(packed[: len(packed) // 2] if how == "truncated" else random.Random(7).randbytes(len(packed)))
    before, digest = listing(data), sha(archive)
    args = ("report",) if command == "report" else \
        ("bench", "main", "--subsets", "G1_instruction", "--runs", "1", "--no-progress")
    proc = box.run(core(*args), box.env(DATABASE_URL=None))
    left = sorted(name for name in listing(data) - before if ".tmp" in name or proc.rc != 0)
    if proc.crashed:
        return TRACEBACK, proc.crash() + (f"; left behind: {', '.join(left)}" if left else "")
    if left:
        return WRONG, f"left behind: {', '.join(left)}"
    if sha(archive) != digest:
        return WRONG, "the archive was changed"
    if proc.refused:
        return CLEAN, proc.error_lines()[0]
    if proc.rc == 0 and "results.sqlite.gz" in proc.out + proc.err:
        return CLEAN, f"ran and named the archive: {proc.last_lines(1)}"
    return WRONG, f"exit {proc.rc} without naming the damaged archive: {proc.last_lines()}"


def untouched_refusal(proc: Proc, path: Path, digest: str, folder: Path, before: set[str],
                      wrong_if: Callable[[str], bool] = lambda line: False) -> Outcome:
    """A refusal in one line that leaves `path` byte-identical and nothing new in `folder`."""
    left = ", ".join(f"{name} ({(folder / name).stat().st_size:,} bytes)" for name in sorted(listing(folder) - before))
    changed = sha(path) != digest
    if proc.crashed:
        return TRACEBACK, proc.crash() + (f"; left behind: {left}" if left else "") + \
            (f"; {path.name} was changed" if changed else "")
    if left:
        return WRONG, f"left behind: {left}"
    if changed:
        return WRONG, f"{path.name} was changed"
    if proc.rc == 0:
        return WRONG, f"exit 0 where a refusal is due: {proc.last_lines(1)}"
    if not proc.refused:
        return WRONG, f"exit {proc.rc} without one error line: {proc.last_lines()}"
    line = proc.error_lines()[0]
    return (WRONG, f"refused with a raw error: {line}") if wrong_if(line) else (CLEAN, line)


def store_case(variant: str, lab: Lab, box: Box) -> Outcome:
    files = box.path / "files"
    files.mkdir()
    bad = files / ("foreign.sqlite" if variant == "pack --db foreign" else "bad.sqlite")
    if variant == "pack --db foreign":
        foreign_db(bad)
    else:
        malformed_copy(lab.good, bad)
    before, digest = listing(files), sha(bad)
    if variant == "db copy from malformed":
        proc = box.run(core("db", "copy", f"sqlite:///{bad}", f"sqlite:///{files / 'copy.sqlite'}"), box.env())
    elif variant == "report --db malformed":
        proc = box.run(core("report", "--db", f"sqlite:///{bad}"), box.env())
        return untouched_refusal(proc, bad, digest, files, before, lambda line: "sqlalche.me" in line)
    else:
        proc = box.run(core("pack", "--db", f"sqlite:///{bad}"), box.env())
    return untouched_refusal(proc, bad, digest, files, before)


def uri_case(form: str, lab: Lab, box: Box) -> Outcome:
    """A read-only URI to a database with runs: either read as it is or refused by the option's name."""
    files = box.path / "files"
    files.mkdir()
    good = files / "good.sqlite"
    shutil.copy2(lab.good, good)
    url = f"sqlite:///file:{good}?mode=ro&uri=true" if form == "file:" else f"sqlite:///{good}?mode=ro&uri=true"
    before, before_root, digest = listing(files), listing(box.root), sha(good)
    proc = box.run(core("report"), box.env(DATABASE_URL=url))
    if proc.crashed:
        return TRACEBACK, proc.crash()
    new = sorted(listing(files) - before) + sorted(listing(box.root) - before_root)
    if new:
        return WRONG, f"created {', '.join(new)}"
    if sha(good) != digest:
        return WRONG, "the database was changed"
    if proc.rc == 0:
        if "no results database yet" in proc.out + proc.err:
            return WRONG, "said 'no results database yet' about a database with runs"
        return CLEAN, "reported the stored runs"
    if proc.refused and any(word in proc.error_lines()[0].lower() for word in ("mode", "uri")):
        return CLEAN, proc.error_lines()[0]
    return WRONG, f"exit {proc.rc} without naming the URI option: {proc.last_lines()}"


# ------------------------------------------------------------------ 6. two writers on one SQLite file

# `python -m core ARGS` held just before it opens the results store, until the harness lets every writer go.
GATE = """
import sys, time
from pathlib import Path
from core.store import store
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
opened = store.Store.__init__

def gated(self, *args, **kwargs):
    ready.touch()
    while not go.exists():
        time.sleep(0.002)
    opened(self, *args, **kwargs)

store.Store.__init__ = gated
from core.cli.main import main
sys.exit(main(sys.argv[3:]))
"""


def together(box: Box, commands: Sequence[Sequence[str]], env: dict[str, str], timeout: float) -> list[Proc]:
    """Run the CLI once per argument list, letting all of them open the store at the same moment: the races are in
    their first milliseconds, which two processes' start-up jitter would hide (tests/test_two_writers_sqlite.py
    gates its writers the same way)."""
    go = box.path / "go"
    ready = [box.path / f"ready-{i}" for i in range(len(commands))]
    running = [box.start(["-c", GATE, str(flag), str(go), *args], env) for flag, args in zip(ready, commands)]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not all(flag.exists() or r.popen.poll() is not None
                                                  for flag, r in zip(ready, running)):
        time.sleep(0.01)
    go.touch()
    procs = [r.finish(timeout) for r in running]
    box.procs.extend(procs)
    return procs


def two_benches_case(lab: Lab, box: Box) -> Outcome:
    """Two benches on different subsets, started together on a SQLite file that does not exist yet."""
    subsets = ("G1_instruction", "G2_instruction")
    procs = together(box, [("bench", "main", "--subsets", s, "--runs", "1", "--no-progress") for s in subsets],
                     box.env(), 300)
    runs = main_runs(box.db)
    whole = {s: sum(r.whole for r in runs if r.subset == s) for s in subsets}
    short = [r for r in runs if r.status == "complete" and not r.whole]
    vanished = [s for s, p in zip(subsets, procs) if p.rc == 0 and whole[s] < 2]
    if short or vanished:
        return LOST, f"runs complete but short: {short}; exited 0 without its rows: {vanished}"
    crashed = [p for p in procs if p.crashed]
    if crashed:
        return TRACEBACK, crashed[0].crash()
    if any(r.rows != r.distinct for r in runs):
        return WRONG, "duplicate rows"
    missing = [s for s in subsets if whole[s] < 2]
    if missing:
        return WRONG, f"{', '.join(missing)} not written: " + "; ".join(p.last_lines(1) for p in procs if p.rc)
    return CLEAN, f"both subsets written ({len(runs)} runs, {sum(r.rows for r in runs)} rows)"


def two_resumes_case(lab: Lab, box: Box) -> Outcome:
    """A bench killed half-way, then two identical `--resume` runs at once: one continues, the other waits for it
    or refuses in one line; every row is there once."""
    args = ("bench", "main", "--subsets", "G1_instruction", "--runs", "2", "--limit", "40", "--no-progress")
    env = box.env("documented")
    first = box.start(core(*args), env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.popen.poll() is None and len(stored_rows(box.db)) < 30:
        time.sleep(0.3)
    first.kill()
    box.procs.append(first.finish(60))
    before = stored_rows(box.db)
    procs = together(box, [(*args, "--resume")] * 2, env, 600)
    runs, after = main_runs(box.db), stored_rows(box.db)
    whole = sum(r.whole for r in runs)
    setup = f"killed at {len(before)} rows; "
    if before - after or any(r.status == "complete" and not r.whole for r in runs) or \
            (any(p.rc == 0 for p in procs) and whole < 4):
        return LOST, setup + f"{len(before - after)} stored rows gone, {whole}/4 runs whole: {runs}"
    crashed = [p for p in procs if p.crashed]
    if crashed:
        return TRACEBACK, setup + crashed[0].crash()
    if any(r.rows != r.distinct for r in runs) or whole > 4:
        return WRONG, setup + f"duplicates: {runs}"
    if whole < 4 or not all(p.rc == 0 or p.refused for p in procs):
        return WRONG, setup + f"{whole}/4 runs whole; " + "; ".join(p.last_lines(1) for p in procs)
    return CLEAN, setup + f"4/4 runs whole, {len(after)} rows; exits {[p.rc for p in procs]}" + \
        "".join(f"; {p.error_lines()[0]}" for p in procs if p.refused)


# ------------------------------------------------------------------ 7. LLM replies

def nul_case(lab: Lab, box: Box) -> Outcome:
    with FakeLLM(openai_body(NUL_REPLY)) as server:
        proc = box.run(core("query", QUERY, "--arch", "all", "--json"), box.env(**server.env("openai")))
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if "\x00" in proc.out or "\\u0000" in proc.out:
        return WRONG, "query --json printed the reply's NUL characters" + \
            (" raw" if "\x00" in proc.out else " as \\u0000")
    return answers_or_refuses(proc)


def blocked_labels(texts: Sequence[str]) -> Outcome:
    if any("malformed_json" in text for text in texts):
        return WRONG, "a safety block labelled " + next(t for t in texts if "malformed_json" in t)[:160]
    return CLEAN, "labelled " + (next((t for t in texts if "block" in t), texts[0] if texts else "(nothing)")[:160])


def blocked_query_case(body: dict, lab: Lab, box: Box) -> Outcome:
    with FakeLLM(body) as server:
        proc = box.run(core("query", QUERY, "--arch", "all", "--json"), box.env(**server.env("gemini")))
    outcome = answers_or_refuses(proc)
    if outcome[0] != CLEAN or proc.rc != 0:
        return outcome
    blocks = [proc.json().get(arch) or {} for arch in ("rtp", "ptr")]
    return blocked_labels([str(text) for text in (blocks[1].get("stub_error"),
                                                  *((b.get("plan") or {}).get("parse_error") for b in blocks)) if text])


def blocked_bench_case(lab: Lab, box: Box) -> Outcome:
    """A bench whose every Gemini call is blocked: the stored rows' labels."""
    with FakeLLM(GEMINI_PROMPT_BLOCKED) as server:
        proc = box.run(core("bench", "main", "--subsets", "G1_instruction", "--runs", "1", "--no-progress"),
                       box.env(**server.env("gemini")))
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if not main_runs(box.db):
        return WRONG, f"nothing stored (exit {proc.rc}): {proc.last_lines()}"
    return blocked_labels(failure_labels(box.db))


# ------------------------------------------------------------------ the cases

@dataclass(frozen=True)
class Case:
    group: int
    name: str
    run: Callable[[Lab, Box], Outcome]
    timing: bool = False
    cache: bool = True
    model: bool = False


def cases() -> list[Case]:
    out: list[Case] = []
    for how in ("zero", "random", "truncate"):
        for command in ("query", "eval"):
            out.append(Case(1, f"ONNX graph {how} -> {command}", partial(artefact_case, "ONNX graph", how, command)))
    out += [Case(1, "decoded index zero -> query", partial(artefact_case, "decoded index", "zero", "query")),
            Case(1, "registry cache random -> query", partial(artefact_case, "registry cache", "random", "query")),
            Case(1, "HNSW index random -> query", partial(artefact_case, "HNSW index", "random", "query"))]
    out += [Case(2, f"hanging {backend} server, budget 5 s", partial(deadline_case, backend), timing=True)
            for backend in ("openai", "gemini")]
    all_arch = ("query", QUERY, "--arch", "all", "--json")
    bench = ("bench", "main", "--subsets", "G1_instruction", "--no-progress")
    out += [
        Case(3, "HNSW_EF_SEARCH=1e12", partial(setting_case, {"INDEX": "hnsw", "HNSW_EF_SEARCH": "1000000000000"},
                                               ("query", QUERY, "--json"), "documented", ("HNSW_EF_SEARCH",))),
        Case(3, "LOCAL_THREADS=1e9", partial(setting_case, {"LLM_BACKEND": "local", "LOCAL_THREADS": "1000000000"},
                                             all_arch, "tiny", ("LOCAL_THREADS",)), model=True),
        Case(3, "LOCAL_INSTANCES=100000", partial(setting_case, {"LLM_BACKEND": "local", "LOCAL_INSTANCES": "100000"},
                                                  all_arch, "tiny", ("LOCAL_INSTANCES",)), model=True),
        Case(3, "bench main --runs 1e20", partial(setting_case, {}, (*bench, "--runs", "9" * 20), "tiny", ("runs",))),
        Case(3, "bench main --concurrency 1e12",
             partial(setting_case, {}, (*bench, "--concurrency", "1" + "0" * 12), "tiny", ("concurrency",))),
        Case(3, "Inspector qid of 5,000 digits (parse_view)", inspector_qid_case)]
    for variant in ("read-only, empty", "read-only, a subfolder", "read-only, filled, offline",
                    "read-only, filled, openai backend", "/proc/self/nope"):
        out.append(Case(4, f"CACHE_DIR {variant}", partial(cache_case, variant), cache="filled" in variant))
    for command in ("report", "bench"):
        for how in ("truncated", "random"):
            out.append(Case(5, f"{command} with a {how} results.sqlite.gz", partial(archive_case, command, how)))
    for variant in ("db copy from malformed", "pack --db malformed", "pack --db foreign", "report --db malformed"):
        out.append(Case(5, variant, partial(store_case, variant), cache=False))
    out += [Case(5, "DATABASE_URL sqlite:///file:...?mode=ro&uri=true", partial(uri_case, "file:"), cache=False),
            Case(5, "DATABASE_URL sqlite:////path?mode=ro&uri=true", partial(uri_case, "path"), cache=False)]
    out += [Case(6, f"two benches on a new file, try {i}", two_benches_case) for i in (1, 2, 3)]
    out.append(Case(6, "two identical resumes", two_resumes_case))
    out += [Case(7, "query --json with NULs in the reply", nul_case),
            Case(7, "Gemini prompt blocked -> query", partial(blocked_query_case, GEMINI_PROMPT_BLOCKED)),
            Case(7, "Gemini reply blocked -> query", partial(blocked_query_case, GEMINI_REPLY_BLOCKED)),
            Case(7, "Gemini blocked -> bench rows", blocked_bench_case)]
    return out


def run_case(lab: Lab, case: Case) -> dict[str, Any]:
    started = time.monotonic()
    procs: list[Proc] = []
    try:
        with lab.box(case.name, cache=case.cache, model=case.model) as box:
            procs = box.procs
            verdict, why = case.run(lab, box)
    except Skip as exc:
        verdict, why = SKIPPED, str(exc)
    return {"group": GROUPS[case.group], "case": case.name, "verdict": verdict, "why": why,
            "seconds": round(time.monotonic() - started, 1), "load": os.getloadavg()[0],
            "procs": [p.detail() for p in procs]}


def table(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for group in [*dict.fromkeys(r["group"] for r in results), "total"]:
        mine = [r for r in results if group in ("total", r["group"]) and r["verdict"] != SKIPPED]
        rows.append({"group": group, "tried": len(mine), **{v: sum(r["verdict"] == v for r in mine) for v in VERDICTS}})
    return rows


def describe(root: Path) -> str:
    """The checkout's commit, and whether its working tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True).stdout.strip()
    dirty = git("status", "--porcelain", "--", "core", "ui")
    return (git("rev-parse", "--short", "HEAD") or "unknown") + (" + uncommitted changes" if dirty else "")


def run_all(root: Path, chosen: Sequence[Case], mem_bytes: int, gguf: Path | None, json_path: Path | None,
            name: str) -> int:
    """Set up one Lab against `root`, run the chosen cases in it and print (and write, with `json_path`) the table
    of verdicts per group; every mount a case left under the work folder is undone before it is removed."""
    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started, load = time.monotonic(), [os.getloadavg()]
    work = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    try:
        lab = Lab(root, work, sys.executable, mem_bytes, gguf)
        say(f"{name}: {len(chosen)} cases against {root} ({describe(root)}), work in {work}")
        lab.setup(say)
        results = []
        for case in chosen:
            results.append(run_case(lab, case))
            load.append(os.getloadavg())
            r = results[-1]
            say(f"[{r['group']}] {r['case']}: {r['verdict']} ({r['seconds']} s) {r['why']}")
    finally:
        subprocess.run(["umount", "-R", "-l", str(work)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    rows = table(results)
    summary = {"root": str(root), "commit": describe(root), "seconds": round(time.monotonic() - started, 1),
               "load_1min": {"min": min(x[0] for x in load), "max": max(x[0] for x in load),
                             "mean": round(sum(x[0] for x in load) / len(load), 2)},
               "table": rows}
    if json_path:
        json_path.write_text(json.dumps({**summary, "cases": results}, indent=1))
    print(f"{root} ({summary['commit']}): {summary['seconds']:.0f} s, 1-min load "
          f"{summary['load_1min']['min']:.1f}-{summary['load_1min']['max']:.1f}")
    print(f"{'group':<28}{'tried':>6}" + "".join(f"{v:>10}" for v in VERDICTS))
    for row in rows:
        print(f"{row['group']:<28}{row['tried']:>6}" + "".join(f"{row[v]:>10}" for v in VERDICTS))
    skipped = [r for r in results if r["verdict"] == SKIPPED]
    for r in skipped:
        print(f"skipped: {r['case']}: {r['why']}")
    for r in results:
        if r["verdict"] not in (CLEAN, SKIPPED):
            print(f"{r['verdict']:<9} [{r['group']}] {r['case']}: {r['why']}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout to test (default: this repository)")
    parser.add_argument("--skip-timing", action="store_true", help="leave out the deadline cases (item 2)")
    parser.add_argument("--cases", default="", help="only the cases whose group or name contains this text")
    parser.add_argument("--mem-gb", type=float, default=6.0, help="address-space cap of every process (default 6)")
    parser.add_argument("--gguf", type=Path, default=HERE / "data" / "cache" / "models" / GGUF_NAME,
                        help="the local model file the LOCAL_* cases copy (read only)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every case's detail there, as JSON")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    chosen = [c for c in cases() if not (c.timing and args.skip_timing)
              and args.cases.lower() in f"{GROUPS[c.group]} {c.name}".lower()]

    return run_all(root, chosen, int(args.mem_gb * 2**30), args.gguf if any(c.model for c in chosen) else None,
                   args.json, "hostile")


if __name__ == "__main__":
    sys.exit(main())
