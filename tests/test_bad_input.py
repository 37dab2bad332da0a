"""Every bad input to `python -m core` gives one line that names the problem and a non-zero exit, never a
traceback, and never a wrong result (issue 15, item 5).

Each case runs the CLI as a real subprocess on tiny data (the real registry only where the input is refused
before anything loads). CASES failed before the fix (a traceback, a usage block, a bad input accepted, or
a wrong answer); ALREADY_CLEAN were clean then and are kept so. Bench's cases point TOOLBENCH_DATA at a
registry that cannot be read: their database message, not the data's, shows the URL is checked first.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import marshal
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import core.data.registry_cache as rc
from core.settings import PROJECT_ROOT
from tests.helpers import SMALL_APIS, build_app_env, write_tiny_data

pytestmark = pytest.mark.subprocess  # each case runs the CLI as a real subprocess

SECRET = "s3cret-pw"
SCRUB = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "REGISTRY", "EMBEDDING_MODEL",
         "LLM_MODEL", "ENCODER_RUNTIME", "LLM_TIMEOUT_S", "LOCAL_THREADS", "LOCAL_INSTANCES", "LLM_QUERY_BUDGET_S",
         "TOOLBENCH_DATA", "DATABASE_URL")


@dataclass(frozen=True)
class Case:
    """One bad input: CLI arguments and settings ({tmp} stands for the world's folder), the exit code and
    the words its one line must hold. `data=None` runs on the real registry (data/toolbench)."""

    id: str
    args: tuple[str, ...]
    says: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2
    data: str | None = "{tmp}/tiny"


def bench(*extra: str) -> tuple[str, ...]:
    return ("bench", "ksweep", "--subsets", "G1_instruction", "--limit", "1", "--no-progress", *extra)


DOCUMENTED = {"REGISTRY": "documented"}  # the broken folders hold registry.jsonl.gz only: "full" is refused there
UNREADABLE_REGISTRY = "{tmp}/not-gzip"  # bench's cases: the URL check must come before the registry is read
PG = f"postgresql://lab:{SECRET}@127.0.0.1:1/results"

CASES = [
    # the query text
    Case("query-invalid-utf8", ("query", os.fsdecode(b"\xff\xfe")), ("not valid UTF-8", "character 1")),
    Case("query-invalid-utf8-real-registry", ("query", os.fsdecode(b"\xff\xfe")), ("not valid UTF-8",), data=None),
    Case("query-invalid-byte-among-words", ("query", os.fsdecode(b"hotels in \xe9t\xe9")),
         ("not valid UTF-8", "character 11")),
    Case("query-emoji-only", ("query", "🎉🌦️"), ("no searchable text",)),
    Case("query-punctuation-only", ("query", "?!... ;"), ("no searchable text",)),
    Case("query-zero-width-only", ("query", "\u200b\u200d\u2060"), ("no searchable text",)),
    Case("query-control-chars-only", ("query", "\x01\x1b\x7f"), ("no searchable text",)),
    # k
    Case("query-k-100000", ("query", "hotels", "--k", "100000"), ("--k", "1 to 100", "100000")),
    Case("query-k-not-a-number", ("query", "hotels", "--k", "five"), ("--k", "'five'")),
    Case("eval-k-100000", ("eval", "--k", "5,100000"), ("--k", "1 to 100", "100000")),
    Case("eval-k-0", ("eval", "--k", "0"), ("--k", "positive")),
    Case("bench-k-100000", ("bench", "main", "--k", "100000", "--subsets", "G1_instruction", "--limit", "1"),
         ("--k", "1 to 100")),
    Case("bench-ks-100000", bench("--ks", "1,100000"), ("--ks", "1 to 100")),
    # numeric settings
    Case("LLM_TIMEOUT_S-abc", ("query", "hotels"),
         ("LLM_TIMEOUT_S must be a number of seconds from 0.1 to 3600, not 'abc'",), {"LLM_TIMEOUT_S": "abc"}),
    Case("LLM_TIMEOUT_S-0", ("query", "hotels"), ("LLM_TIMEOUT_S", "from 0.1", "'0'"), {"LLM_TIMEOUT_S": "0"}),
    Case("LLM_TIMEOUT_S-negative", ("query", "hotels"), ("LLM_TIMEOUT_S", "'-5'"), {"LLM_TIMEOUT_S": "-5"}),
    Case("LLM_TIMEOUT_S-nan", ("query", "hotels"), ("LLM_TIMEOUT_S", "'nan'"), {"LLM_TIMEOUT_S": "nan"}),
    Case("LOCAL_THREADS-abc", ("query", "hotels"), ("LOCAL_THREADS must be a whole number", "'abc'"),
         {"LOCAL_THREADS": "abc"}),
    Case("LOCAL_THREADS-0", ("query", "hotels"), ("LOCAL_THREADS", "'0'"), {"LOCAL_THREADS": "0"}),
    Case("LOCAL_INSTANCES-negative", ("query", "hotels"), ("LOCAL_INSTANCES", "'-1'"), {"LOCAL_INSTANCES": "-1"}),
    Case("LOCAL_INSTANCES-fraction", ("query", "hotels"), ("LOCAL_INSTANCES", "'1.5'"), {"LOCAL_INSTANCES": "1.5"}),
    Case("LLM_QUERY_BUDGET_S-abc", ("query", "hotels"), ("LLM_QUERY_BUDGET_S", "'abc'"),
         {"LLM_QUERY_BUDGET_S": "abc"}),
    # the embedding model and the cache folder
    Case("EMBEDDING_MODEL-missing-path", ("query", "hotels"), ("EMBEDDING_MODEL", "/nonexistent/model",
                                                               "does not exist"),
         {"EMBEDDING_MODEL": "/nonexistent/model"}),
    Case("EMBEDDING_MODEL-missing-relative-path", ("index",), ("EMBEDDING_MODEL", "./no/such/model"),
         {"EMBEDDING_MODEL": "./no/such/model"}),
    Case("CACHE_DIR-under-a-file", ("query", "hotels"), ("CACHE_DIR", "is a file"),
         {"CACHE_DIR": "{tmp}/a-file/cache"}),
    # the ToolBench data
    Case("TOOLBENCH_DATA-registry-not-gzip", ("query", "hotels"), ("registry.jsonl.gz", "cannot be read",
                                                                   "TOOLBENCH_DATA"), DOCUMENTED, code=1,
         data="{tmp}/not-gzip"),
    Case("TOOLBENCH_DATA-registry-truncated", ("query", "hotels"), ("registry.jsonl.gz", "cannot be read"),
         DOCUMENTED, code=1, data="{tmp}/truncated"),
    Case("TOOLBENCH_DATA-registry-rows-without-names", ("query", "hotels"), ("registry.jsonl.gz", "line 1",
                                                                             "tool_name"), DOCUMENTED, code=1,
         data="{tmp}/no-names"),
    Case("TOOLBENCH_DATA-registry-without-apis", ("query", "hotels"), ("registry.jsonl.gz", "holds no APIs"),
         DOCUMENTED, code=1, data="{tmp}/no-apis"),
    Case("TOOLBENCH_DATA-queries-not-gzip", ("eval",), ("queries.jsonl.gz", "cannot be read"), code=1,
         data="{tmp}/queries-not-gzip"),
    # the results database: report
    Case("report-DATABASE_URL-garbage", ("report",), ("DATABASE_URL", "does not parse"), {"DATABASE_URL": "garbage"},
         code=1),
    Case("report-DATABASE_URL-mysql", ("report",), ("DATABASE_URL", "mysql://lab:***@db/results", "not supported"),
         {"DATABASE_URL": f"mysql://lab:{SECRET}@db/results"}, code=1),
    Case("report-DATABASE_URL-http", ("report",), ("DATABASE_URL", "http://lab:***@db/results", "not supported"),
         {"DATABASE_URL": f"http://lab:{SECRET}@db/results"}, code=1),
    Case("report-DATABASE_URL-postgresql-no-server", ("report",), ("postgresql://lab:***@127.0.0.1:1/results",
                                                                   "cannot open"), {"DATABASE_URL": PG}, code=1),
    Case("report-DATABASE_URL-damaged-in-the-middle", ("report",), ("corrupt.sqlite", "is damaged", "move it aside"),
         {"DATABASE_URL": "sqlite:///{tmp}/corrupt.sqlite"}, code=1),
    # the results database: bench, checked before the (unreadable) registry is read
    Case("bench-DATABASE_URL-garbage", bench(), ("DATABASE_URL", "does not parse"), {"DATABASE_URL": "garbage"},
         code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-mysql", bench(), ("DATABASE_URL", "mysql://lab:***@db/results", "not supported"),
         {"DATABASE_URL": f"mysql://lab:{SECRET}@db/results"}, code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-http", bench(), ("DATABASE_URL", "http://lab:***@db/results", "not supported"),
         {"DATABASE_URL": f"http://lab:{SECRET}@db/results"}, code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-postgresql-no-server", bench(), ("postgresql://lab:***@127.0.0.1:1/results",
                                                              "cannot open"), {"DATABASE_URL": PG}, code=1,
         data=UNREADABLE_REGISTRY),
    Case("bench-db-flag-mysql", bench("--db", f"mysql://lab:{SECRET}@db/results"), ("mysql://lab:***@db/results",),
         code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-under-a-file", bench(), ("a-file", "is a file", "DATABASE_URL"),
         {"DATABASE_URL": "sqlite:///{tmp}/a-file/results.sqlite"}, code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-a-folder", bench(), ("is a folder", "DATABASE_URL"), {"DATABASE_URL": "sqlite:///{tmp}"},
         code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-in-memory", bench(), ("in memory", "keeps nothing"), {"DATABASE_URL": "sqlite://"},
         code=1, data=UNREADABLE_REGISTRY),
    Case("bench-DATABASE_URL-damaged-in-the-middle", bench(), ("corrupt-bench.sqlite", "is damaged"),
         {"DATABASE_URL": "sqlite:///{tmp}/corrupt-bench.sqlite"}, code=1, data=UNREADABLE_REGISTRY),
    # arguments argparse refused in a usage block, or not at all
    Case("bench-subsets-empty", ("bench", "ksweep", "--subsets", ""), ("--subsets", "(none given)")),
    Case("bench-subsets-unknown", ("bench", "ksweep", "--subsets", "G9_nothing"), ("--subsets", "G9_nothing")),
    Case("bench-limit-0", ("bench", "ksweep", "--limit", "0"), ("--limit", "from 1 to")),
    Case("bench-limit-negative", ("bench", "ksweep", "--limit", "-2"), ("--limit", "from 1 to")),
    Case("bench-runs-0", ("bench", "main", "--runs", "0"), ("--runs", "from 1 to 100")),
    Case("cache-dir-in-proc", ("query", "hotels"), ("CACHE_DIR /proc/self/nope cannot be created",),
         {"CACHE_DIR": "/proc/self/nope"}),
    Case("bench-runs-huge", ("bench", "main", "--runs", "99999999999999999999"), ("--runs", "from 1 to 100")),
    Case("bench-concurrency-huge", ("bench", "main", "--concurrency", "100000"), ("--concurrency", "from 1 to 256")),
    Case("perf-queries-0", ("perf", "--queries", "0"), ("--queries", "positive")),
    Case("perf-docs-0", ("perf", "--docs", "0"), ("--docs", "positive")),
    Case("registry-flag-bogus", ("query", "hotels", "--registry", "bogus"), ("--registry", "'bogus'")),
    Case("no-command", (), ("COMMAND",)),
    Case("unknown-command", ("frobnicate",), ("'frobnicate'",)),
    Case("eval-unknown-subset-before-the-registry", ("eval", "--subset", "G9_nothing"), ("Unknown subset",
                                                                                          "G9_nothing"),
         data=UNREADABLE_REGISTRY),
    Case("bench-foreign-database", bench(), ("foreign.sqlite", "not a Tool Discovery Lab"),
         {"DATABASE_URL": "sqlite:///{tmp}/foreign.sqlite"}, code=1),
]

ALREADY_CLEAN = [
    Case("query-empty", ("query", "   "), ("empty",)),
    Case("query-120k-characters", ("query", "x" * 120_000), ("120,000 characters", "100,000")),  # argv holds 128 KiB
    Case("query-k-0", ("query", "hotels", "--k", "0"), ("k",)),
    Case("REGISTRY-bogus", ("query", "hotels"), ("REGISTRY", "'bogus'"), {"REGISTRY": "bogus"}),
    Case("LLM_BACKEND-bogus", ("query", "hotels"), ("LLM_BACKEND", "'bogus'"), {"LLM_BACKEND": "bogus"}),
    Case("ENCODER_RUNTIME-bogus", ("query", "hotels"), ("ENCODER_RUNTIME", "'bogus'"), {"ENCODER_RUNTIME": "bogus"}),
    Case("TOOLBENCH_DATA-empty-folder", ("query", "hotels"), ("No ToolBench data", "TOOLBENCH_DATA"), code=1,
         data="{tmp}/empty"),
    Case("TOOLBENCH_DATA-missing", ("index",), ("No ToolBench data", "TOOLBENCH_DATA"), code=1, data="{tmp}/nowhere"),
    Case("pack-missing-database", ("pack", "--db", "sqlite:///{tmp}/nowhere.sqlite"), ("existing SQLite",)),
]


def _gz(path: Path, text: bytes) -> None:
    with gzip.open(path, "wb") as fh:
        fh.write(text)


def _corrupt_middle(source: Path, target: Path) -> None:
    """A copy of a SQLite file with 8 KiB in its middle overwritten: the header still says SQLite."""
    blob = bytearray(source.read_bytes())
    middle = len(blob) // 2
    blob[middle:middle + 8192] = b"\xab" * 8192
    target.write_bytes(bytes(blob))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny data, broken copies of it, a file where folders are expected, a foreign and a damaged database."""
    tmp = tmp_path_factory.mktemp("bad-input")
    tiny = write_tiny_data(tmp / "tiny")
    registry, queries = (tiny / "registry.jsonl.gz").read_bytes(), (tiny / "queries.jsonl.gz").read_bytes()
    broken = {"not-gzip": b"not gzip at all", "truncated": registry[: len(registry) // 2]}
    for name, blob in broken.items():
        (tmp / name).mkdir()
        (tmp / name / "registry.jsonl.gz").write_bytes(blob)
        (tmp / name / "queries.jsonl.gz").write_bytes(queries)
    for name, rows in {"no-names": b'{"api_name": "a", "description": "b"}\n', "no-apis": b"\n"}.items():
        (tmp / name).mkdir()
        _gz(tmp / name / "registry.jsonl.gz", rows)
        (tmp / name / "queries.jsonl.gz").write_bytes(queries)
    (tmp / "queries-not-gzip").mkdir()
    (tmp / "queries-not-gzip" / "registry.jsonl.gz").write_bytes(registry)
    (tmp / "queries-not-gzip" / "queries.jsonl.gz").write_bytes(b"not gzip either")
    (tmp / "empty").mkdir()
    (tmp / "a-file").write_text("a file, not a folder")
    with sqlite3.connect(tmp / "foreign.sqlite") as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('not ours')")
    conn.close()
    app = build_app_env(tmp / "app")  # a results database with runs: pages to damage
    stored = Path(app["DATABASE_URL"].removeprefix("sqlite:///"))
    _corrupt_middle(stored, tmp / "corrupt.sqlite")
    _corrupt_middle(stored, tmp / "corrupt-bench.sqlite")
    return tmp


def environment(world: Path, case: Case) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env.update({"CACHE_DIR": str(world / "cache"), "INDEX_DIR": str(world / "index"), "LLM_BACKEND": "offline",
                "DATABASE_URL": f"sqlite:///{world / 'results.sqlite'}"})
    if case.data is not None:
        env["TOOLBENCH_DATA"] = case.data.format(tmp=world)
    else:
        env.pop("INDEX_DIR")  # the shipped index, untouched: the case is refused before it is read
        env["CACHE_DIR"] = str(world / "real-cache")
    env.update({key: value.format(tmp=world) for key, value in case.env.items()})
    return env


def run_cli(world: Path, case: Case) -> subprocess.CompletedProcess:
    args = [arg.format(tmp=world) if "{tmp}" in arg else arg for arg in case.args]
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=PROJECT_ROOT, capture_output=True,
                          env=environment(world, case), timeout=120)


def assert_one_clean_line(out: subprocess.CompletedProcess, case: Case) -> None:
    err = out.stderr.decode("utf-8", "backslashreplace")
    assert "Traceback" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert out.returncode == case.code, (out.returncode, err[-600:])
    assert len(lines) == 1, err[-1500:]
    for words in case.says:
        assert words in lines[0], (words, lines[0])
    assert SECRET not in err and SECRET.encode() not in out.stdout
    assert out.stdout == b""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_line_and_a_non_zero_exit(world: Path, case: Case) -> None:
    assert_one_clean_line(run_cli(world, case), case)


@pytest.mark.parametrize("case", ALREADY_CLEAN, ids=[c.id for c in ALREADY_CLEAN])
def test_input_that_was_already_refused_cleanly_still_is(world: Path, case: Case) -> None:
    assert_one_clean_line(run_cli(world, case), case)


def test_bench_refuses_a_foreign_database_without_touching_it(world: Path) -> None:
    """The store probes a database before its writer switches it to WAL: a foreign file keeps every byte."""
    target = world / "foreign-untouched.sqlite"
    shutil.copy(world / "foreign.sqlite", target)
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    case = Case("foreign", bench(), ("not a Tool Discovery Lab",), {"DATABASE_URL": f"sqlite:///{target}"}, code=1,
                data=UNREADABLE_REGISTRY)
    assert_one_clean_line(run_cli(world, case), case)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before
    assert not target.with_name(target.name + "-wal").exists() and not target.with_name(target.name + "-shm").exists()
    with sqlite3.connect(f"file:{target}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


# ---------------------------------------------------------------- a registry cache that unmarshals but lies

@pytest.fixture(scope="module")
def indexed(world: Path) -> Iterator[Path]:
    """The tiny registry's embeddings cached once (the numpy encoder, no torch), for commands that load the index."""
    from core.data.registry import Registry
    from core.data.toolbench import load_registry
    from core.retrieval.assemble import load_encoder
    from core.retrieval.embedding import corpus_embeddings

    encoder = load_encoder("all-MiniLM-L6-v2", "numpy")
    corpus_embeddings(encoder, Registry("full", tuple(load_registry(world / "tiny"))), world / "cache")
    yield world / "cache"


def _old_format(apis) -> bytes:
    """The cache as it was: bare columns, trusted on the source's path, size and time alone."""
    return marshal.dumps({f: [getattr(a, f) for a in apis] for f in rc.FIELDS})


@pytest.mark.parametrize("apis", [(), SMALL_APIS[:2]], ids=["valid-but-empty", "cut-to-2-APIs"])
def test_a_registry_cache_that_disagrees_with_the_data_is_rebuilt(world: Path, indexed: Path, tmp_path: Path,
                                                                 apis) -> None:
    """Before: the empty cache gave a traceback and the cut one was served as "full (2 APIs)"."""
    cache = tmp_path / "cache"
    shutil.copytree(indexed, cache)
    path = rc.cache_file(world / "tiny" / "registry_full.jsonl.gz", cache)
    path.write_bytes(_old_format(apis))
    case = Case("cache", ("index", "--json"), (), {"CACHE_DIR": str(cache)}, code=0)
    out = run_cli(world, case)
    assert "Traceback" not in out.stderr.decode(), out.stderr.decode()[-2000:]
    assert out.returncode == 0 and json.loads(out.stdout)["size"] == len(SMALL_APIS)


@pytest.mark.parametrize("damage", ["truncated", "random"])
@pytest.mark.parametrize("command", [("report",), ("bench", "ksweep", "--subsets", "G1_instruction")])
def test_damaged_packed_results_get_one_line_and_leave_nothing_behind(world: Path, tmp_path: Path, damage: str,
                                                                      command: tuple[str, ...]) -> None:
    """Issue 23: with results.sqlite.gz cut short or replaced by random bytes, `report` and `bench` raised EOFError or
    BadGzipFile and left a 30 MB .tmp each time. Now: one line, the archive byte-identical, no partial file."""
    stored = Path(build_app_env(tmp_path / "app")["DATABASE_URL"].removeprefix("sqlite:///"))
    packed = tmp_path / "results.sqlite.gz"
    with open(stored, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw = packed.read_bytes()
    packed.write_bytes(raw[:len(raw) // 2] if damage == "truncated" else os.urandom(len(raw)))
    before = packed.read_bytes()
    case = Case(f"packed-{damage}", command, ("results.sqlite.gz are damaged",),
                {"DATABASE_URL": f"sqlite:///{tmp_path / 'results.sqlite'}"}, code=1)
    assert_one_clean_line(run_cli(world, case), case)
    assert packed.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "app") == ["results.sqlite.gz"]


@pytest.mark.parametrize("which, says", [("foreign.sqlite", "is not the lab's results database"),
                                         ("corrupt.sqlite", "nothing was packed")])
def test_pack_leaves_a_foreign_or_damaged_database_byte_identical(world: Path, tmp_path: Path, which: str,
                                                                  says: str) -> None:
    """Issue 23: `pack --db` VACUUMed and packed a foreign database, and raised a traceback on a malformed one."""
    target = tmp_path / which
    shutil.copy(world / which, target)
    before = target.read_bytes()
    case = Case(f"pack-{which}", ("pack", "--db", f"sqlite:///{target}"), (says,))
    assert_one_clean_line(run_cli(world, case), case)
    assert target.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [which]


@pytest.mark.parametrize("url", ["sqlite:///file:{db}?mode=ro&uri=true", "sqlite:///{db}?mode=ro&uri=true"])
def test_sqlite_uri_options_are_refused_by_name_and_create_nothing(world: Path, tmp_path: Path, url: str) -> None:
    """Issue 23: the first said "no results database yet" about a database with 480 runs; the second created an empty
    file named `good.sqlite?mode=ro` and reported it empty."""
    good = tmp_path / "good.sqlite"
    shutil.copy(Path(build_app_env(tmp_path / "app")["DATABASE_URL"].removeprefix("sqlite:///")), good)
    case = Case("sqlite-uri", ("report",), ("SQLite URL options are not supported", "mode"),
                {"DATABASE_URL": url.format(db=good)}, code=1)
    assert_one_clean_line(run_cli(world, case), case)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app", "good.sqlite"]


def test_db_copy_from_a_malformed_database_leaves_no_destination(world: Path, tmp_path: Path) -> None:
    """Issue 23: a DatabaseError traceback, and a 33 MB destination file left behind."""
    source = tmp_path / "corrupt.sqlite"
    shutil.copy(world / "corrupt.sqlite", source)
    before = source.read_bytes()
    case = Case("db-copy-malformed", ("db", "copy", f"sqlite:///{source}", f"sqlite:///{tmp_path / 'new.sqlite'}"),
                ("the copy stopped", "malformed"), code=1)
    assert_one_clean_line(run_cli(world, case), case)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.sqlite"] and source.read_bytes() == before
