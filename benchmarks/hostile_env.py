"""Hostile environments, round three (issue 37): the environment around the lab, not its inputs.

    nice -n 15 .venv/bin/python benchmarks/hostile_env.py [--root PATH] [--cases TEXT] [--json PATH]

The same harness as round two (benchmarks/hostile.py: each case in its own folder with a copy of the checkout's
core/ and ui/, its own CACHE_DIR and results file, a memory cap and a timeout), with the five classes the issue
tried: read-only folders (a read-only bind mount for the case's process alone), a full disk (small tmpfs mounts,
filled), wrong-shaped data (valid JSON of the wrong shape, a missing registry file, undecodable test files),
archives that are not ours (a valid gzip of something else as data/results.sqlite.gz) and invisible characters in
a query. Needs root (mounts). Verdicts as in round two: lost, traceback, wrong (a wrong number, a success where a
refusal is due, a file left behind, a raw library error), clean (the right answer, or one `error:` line).
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostile as h  # round two's harness: Lab, Box, Proc and the verdicts
from hostile import CLEAN, LOST, QUERY, TRACEBACK, WRONG, Box, Case, Lab, Outcome, core

GROUPS = {8: "8 read-only folders", 9: "9 a full disk", 10: "10 wrong-shaped data", 11: "11 foreign archives",
          12: "12 invisible characters"}
LEFTOVER = (".tmp", "-journal")


# ------------------------------------------------------------------ mounts and checks

@contextlib.contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """`folder` as a tmpfs of `size`; unmounted afterwards (before the box is removed)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if done.returncode:
        raise h.Skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path, leave: int = 0) -> None:
    """Fills the disk holding `folder`, leaving about `leave` bytes free."""
    stat = os.statvfs(folder)
    free = stat.f_bavail * stat.f_frsize - leave
    with contextlib.suppress(OSError), open(folder / ".filler", "wb", buffering=0) as fh:
        while free > 0:
            free -= fh.write(b"\0" * min(65_536, free))
    if leave == 0:
        with contextlib.suppress(OSError), open(folder / ".filler", "ab", buffering=0) as fh:
            while True:
                fh.write(b"\0" * 4096)


def leftovers(folder: Path, before: set[str]) -> list[str]:
    return sorted(n for n in h.listing(folder) - before if any(m in n for m in LEFTOVER))


def one_line(proc: h.Proc, *words: str) -> Outcome:
    """A refusal in one line that says one of `words` (a raw library error or URL is wrong)."""
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if not proc.refused:
        return WRONG, f"exit {proc.rc} without one error line: {proc.last_lines()}"
    line = proc.error_lines()[0]
    if "sqlalche.me" in line or "Errno" in line or "OperationalError" in line or "disk I/O error" in line:
        return WRONG, f"a raw library error: {line}"
    if words and not any(w.lower() in line.lower() for w in words):
        return WRONG, f"the line does not say {words[0]!r}: {line}"
    return CLEAN, line


def answered(proc: h.Proc, base: h.Proc | None = None) -> Outcome:
    """RtP answered (exit 0 with hits), with the undamaged run's hits when `base` is given."""
    if proc.crashed:
        return TRACEBACK, proc.crash()
    data = proc.json()
    if proc.rc != 0 or not isinstance(data, dict) or not (data.get("rtp") or {}).get("hits"):
        return WRONG, f"RtP did not answer (exit {proc.rc}): {proc.last_lines()}"
    if base is not None and h.numbers(proc, "query") != h.numbers(base, "query"):
        return WRONG, "RtP's hits differ from the undamaged run's"
    said = h.notice(proc) or next((line for line in proc.err.splitlines() if line.strip()), "")
    return CLEAN, "answered" + (f"; said: {said[:200]}" if said else " (nothing said)")


# ------------------------------------------------------------------ 8. read-only folders

def damaged_model_ro(lab: Lab, box: Box) -> Outcome:
    """The declared local model's file damaged (random bytes) in a read-only models/: RtP still answers."""
    models = box.cache / "models"
    models.mkdir(exist_ok=True)
    (models / h.GGUF_NAME).write_bytes(os.urandom(1 << 20))
    proc = box.run(core("query", QUERY, "--arch", "all", "--json"), box.env(LLM_BACKEND="local"), readonly=[models])
    return answered(proc)


def packed_report_ro(lab: Lab, box: Box) -> Outcome:
    """`report` with the results still packed and data/ read-only: a report, or one line saying where to write."""
    data = box.root / "data"
    (data / "results.sqlite.gz").write_bytes(gzip.compress(lab.good.read_bytes(), mtime=0))
    before = h.listing(data)
    proc = box.run(core("report"), box.env(DATABASE_URL=None), readonly=[data])
    if leftovers(data, before):
        return WRONG, f"left behind: {leftovers(data, before)}"
    if proc.rc == 0 and not proc.crashed:
        return CLEAN, "reported"
    return one_line(proc, "read-only")


def damaged_graph_ro(lab: Lab, box: Box) -> Outcome:
    """The ONNX graph damaged in a read-only CACHE_DIR/onnx: RtP answers with the undamaged run's hits."""
    argv = core("query", QUERY, "--k", "5", "--json")
    base = lab.baseline("query", argv, "documented")
    graphs = sorted((box.cache / "onnx").glob("*.onnx"))
    if not graphs:
        raise h.Skip("no ONNX graph in the warmed cache")
    h.damage(graphs[0], "zero")
    return answered(box.run(argv, box.env("documented"), readonly=[box.cache / "onnx"]), base)


def empty_cache_ro_llm(lab: Lab, box: Box) -> Outcome:
    """An empty, read-only CACHE_DIR with an LLM backend: no graph, no call cache can be written; RtP answers."""
    with h.FakeLLM(h.openai_body(h.REPLY)) as server:
        proc = box.run(core("query", QUERY, "--arch", "all", "--json"), box.env(**server.env("openai")),
                       readonly=[box.cache])
    return answered(proc)


# ------------------------------------------------------------------ 9. a full disk

def unpack_full(lab: Lab, box: Box) -> Outcome:
    """data/ on a disk with room for the archive but not its unpacked database: one line saying the disk is full."""
    packed = gzip.compress(lab.good.read_bytes(), mtime=0)
    data = box.root / "data"
    saved = {p.name: p.read_bytes() for p in data.iterdir() if p.is_file()}
    with tmpfs(data, str(len(packed) + sum(map(len, saved.values())) + 256 * 1024)):
        for name, content in saved.items():
            (data / name).write_bytes(content)
        (data / "results.sqlite.gz").write_bytes(packed)
        fill(data)
        before, digest = h.listing(data), h.sha(data / "results.sqlite.gz")
        proc = box.run(core("report"), box.env(DATABASE_URL=None))
        left = leftovers(data, before) + [n for n in h.listing(data) - before if n == "results.sqlite"]
        if left:
            return WRONG, f"left behind: {left}"
        if h.sha(data / "results.sqlite.gz") != digest:
            return WRONG, "the archive was changed"
        outcome = one_line(proc, "no space", "full")
        if outcome[0] == CLEAN and "damaged" in outcome[1]:
            return WRONG, f"called the intact archive damaged: {outcome[1]}"
        return outcome


def cache_on_small_disk(variant: str, lab: Lab, box: Box) -> Outcome:
    """CACHE_DIR on a small disk: empty on 20 MB (the ONNX graph does not fit), or warmed without the decoded
    index and full, or warmed and full with an LLM backend (the call cache cannot grow)."""
    warmed = {p.relative_to(box.cache): p.read_bytes() for p in box.cache.rglob("*") if p.is_file()}
    with tmpfs(box.cache, "20m" if variant == "empty, 20 MB" else "400m"):
        if variant != "empty, 20 MB":
            for rel, content in warmed.items():
                if variant == "no room for the decoded index" and rel.name.startswith("emb-"):
                    continue
                (box.cache / rel).parent.mkdir(parents=True, exist_ok=True)
                (box.cache / rel).write_bytes(content)
            fill(box.cache)
        before = h.listing(box.cache)
        if variant == "full, openai backend":
            with h.FakeLLM(h.openai_body(h.REPLY)) as server:
                proc = box.run(core("query", "Book a flight to Rome and a hotel", "--arch", "all", "--json"),
                               box.env(**server.env("openai")))
        else:
            proc = box.run(core("query", QUERY, "--json"), box.env("documented"))
        left = leftovers(box.cache, before)
        outcome = answered(proc)
        if outcome[0] == CLEAN and left:
            return WRONG, f"answered, but left behind: {left}"
        return outcome


def results_on_full_disk(lab: Lab, box: Box) -> Outcome:
    """The results database on a disk that fills during a bench: one line naming the disk, the runs resumable
    (not failed with a library's URL), no stored row lost."""
    disk = box.path / "disk"
    with tmpfs(disk, "3m"):
        db = disk / "results.sqlite"
        shutil.copy2(lab.good, db)
        with contextlib.closing(sqlite3.connect(db)) as conn:
            rows_before = conn.execute("SELECT count(*) FROM query_results").fetchone()[0]
        fill(disk, leave=300 * 1024)  # room to open it and start: the disk fills while the runs are written
        proc = box.run(core("bench", "main", "--subsets", "G1_instruction,G2_instruction", "--runs", "3",
                            "--resume", "--no-progress"), box.env("documented", DATABASE_URL=f"sqlite:///{db}"))
        (disk / ".filler").unlink()  # room for SQLite to read what was stored
        with contextlib.closing(sqlite3.connect(db)) as conn:
            rows_after = conn.execute("SELECT count(*) FROM query_results").fetchone()[0]
            notes = [str(n) for (n,) in conn.execute("SELECT note FROM runs WHERE note IS NOT NULL")]
        if rows_after < rows_before:
            return LOST, f"{rows_before - rows_after} stored rows gone"
        if any("sqlalche.me" in n for n in notes):
            return WRONG, "runs noted with SQLAlchemy's help URL: " + next(n for n in notes if "sqlalche.me" in n)[:160]
        if proc.rc == 0 and not proc.crashed:
            return WRONG, "exit 0 on a full disk"
        return one_line(proc, "no space", "full")


# ------------------------------------------------------------------ 10. wrong-shaped data

def official(folder: Path, tools: dict[str, object] | None = None, tests: dict[str, object] | None = None) -> Path:
    """An official-layout ToolBench folder: toolenv/tools/<Category>/<name>.json and test_instruction/<file>;
    a value of bytes is written as it is, anything else as JSON."""
    good_tool = {"tool_name": "Hotels", "api_list": [{"name": "search hotels", "description": "Find hotels"}]}
    good_test = [{"query_id": 1, "query": QUERY, "api_list": [{"tool_name": "Hotels", "api_name": "search hotels"}],
                  "relevant APIs": [["Hotels", "search hotels"]]}]
    tools = {"Travel/hotels.json": good_tool} if tools is None else tools
    tests = {"G1_instruction.json": good_test} if tests is None else tests
    (folder / "toolenv" / "tools").mkdir(parents=True)
    for rel, value in tools.items():
        path = folder / "toolenv" / "tools" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())
    (folder / "test_instruction").mkdir()
    for rel, value in tests.items():
        (folder / "test_instruction" / rel).write_bytes(value if isinstance(value, bytes)
                                                        else json.dumps(value).encode())
    return folder


QUERY_ARGS = ("query", QUERY, "--json")
EVAL_ARGS = ("eval", "--arch", "rtp", "--subset", "G1_instruction", "--json")
LATIN_1 = json.dumps([{"query_id": 1, "query": "caf\u00e9 hotels", "api_list": []}],
                     ensure_ascii=False).encode("latin-1")
SHAPES: dict[str, tuple[dict | None, dict | None, tuple[str, ...], str]] = {
    # name: (tool files, test files (None keeps the good ones), the command, the name the line must say)
    "a tool file that is [1, 2]": ({"Travel/L.json": [1, 2]}, None, QUERY_ARGS, "L.json"),
    "an api_list of strings": ({"Travel/L.json": {"tool_name": "L", "api_list": ["a", "b"]}}, None, QUERY_ARGS,
                               "L.json"),
    "a test file that is {\"a\": 1}": (None, {"G1_instruction.json": {"a": 1}}, EVAL_ARGS, "G1_instruction.json"),
    "a query without query_id": (None, {"G1_instruction.json": [{"query": QUERY, "api_list": []}]}, EVAL_ARGS,
                                 "G1_instruction.json"),
    "an empty toolenv/": ({}, None, QUERY_ARGS, "toolenv"),
    "a test file that is not JSON": (None, {"G1_instruction.json": b'[{"query_id": 1, "query": }]'}, EVAL_ARGS,
                                     "G1_instruction.json"),
    "a Latin-1 test file": (None, {"G1_instruction.json": LATIN_1}, EVAL_ARGS, "G1_instruction.json"),
}


def shape_case(name: str, lab: Lab, box: Box) -> Outcome:
    tools, tests, argv, named = SHAPES[name]
    folder = official(box.path / "official", tools, tests)
    proc = box.run(core(*argv), box.env(TOOLBENCH_DATA=str(folder), REGISTRY="documented"))
    return one_line(proc, named)


def full_missing(lab: Lab, box: Box) -> Outcome:
    """The real data without registry_full.jsonl.gz and REGISTRY=full: refused naming the file, or answered and
    labelled as the documented registry it is."""
    data = box.path / "toolbench"
    shutil.copytree(lab.real, data)
    (data / "registry_full.jsonl.gz").unlink()
    proc = box.run(core("index", "--json"), box.env(TOOLBENCH_DATA=str(data), REGISTRY="full"))
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if proc.rc == 0:
        info = proc.json() or {}
        if info.get("registry") == "full" or info.get("size") == 4940 and "documented" not in json.dumps(info):
            return WRONG, f"answered as 'full' from the {info.get('size')}-API documented registry"
        return CLEAN, f"answered as {info.get('registry')} ({info.get('size')} APIs)"
    return one_line(proc, "registry_full")


# ------------------------------------------------------------------ 11. archives that are not ours

def foreign_archive(kind: str, lab: Lab, box: Box) -> Outcome:
    """A valid gzip of something else as data/results.sqlite.gz: one line naming the archive, nothing left."""
    data = box.root / "data"
    if kind == "text":
        content = b"not a database\n" * 100
    elif kind == "a foreign SQLite database":
        h.foreign_db(box.path / "foreign.sqlite")
        content = (box.path / "foreign.sqlite").read_bytes()
    elif kind == "another of the repository's gzips":
        content = gzip.decompress((lab.real / "queries.jsonl.gz").read_bytes())
    else:
        content = b""
    (data / "results.sqlite.gz").write_bytes(gzip.compress(content, mtime=0))
    before, digest = h.listing(data), h.sha(data / "results.sqlite.gz")
    proc = box.run(core("report"), box.env(DATABASE_URL=None))
    left = sorted(h.listing(data) - before)
    if proc.crashed:
        return TRACEBACK, proc.crash()
    if left:
        return WRONG, f"left behind: {left}"
    if h.sha(data / "results.sqlite.gz") != digest:
        return WRONG, "the archive was changed"
    return one_line(proc, "results.sqlite.gz")


# ------------------------------------------------------------------ 12. invisible characters

def invisible_case(lab: Lab, box: Box) -> Outcome:
    """A query laced with zero-width characters has its plain twin's top-5."""
    laced = "Find\u200bhotels\u200c in\u200d Paris\u2060 with \ufeffprices"
    plain = box.run(core("query", QUERY, "--k", "5", "--json"), box.env("documented"))
    twin = box.run(core("query", laced, "--k", "5", "--json"), box.env("documented"))
    if plain.crashed or twin.crashed:
        return TRACEBACK, (plain if plain.crashed else twin).crash()
    a, b = h.numbers(plain, "query"), h.numbers(twin, "query")
    if not a or not b:
        return WRONG, f"no answer: {twin.last_lines()}"
    if [x[:2] for x in a[0]] != [x[:2] for x in b[0]]:
        return WRONG, f"another top-5: {[x[1] for x in b[0]]} instead of {[x[1] for x in a[0]]}"
    return CLEAN, "the same top-5"


def cases() -> list[Case]:
    out = [Case(8, "damaged declared model in a read-only models/", damaged_model_ro),
           Case(8, "report with a read-only data/ while the results are packed", packed_report_ro),
           Case(8, "damaged ONNX graph in a read-only CACHE_DIR/onnx", damaged_graph_ro),
           Case(8, "empty read-only CACHE_DIR, openai backend", empty_cache_ro_llm, cache=False),
           Case(9, "disk full while unpacking the results", unpack_full)]
    out += [Case(9, f"CACHE_DIR {variant}", partial(cache_on_small_disk, variant))
            for variant in ("empty, 20 MB", "no room for the decoded index", "full, openai backend")]
    out += [Case(9, "results database on a full disk during a bench", results_on_full_disk),
            Case(10, "registry_full.jsonl.gz missing, REGISTRY=full", full_missing)]
    out += [Case(10, f"official layout: {name}", partial(shape_case, name)) for name in SHAPES]
    out += [Case(11, f"results.sqlite.gz holding {kind}", partial(foreign_archive, kind))
            for kind in ("text", "a foreign SQLite database", "another of the repository's gzips", "nothing")]
    out.append(Case(12, "zero-width characters inside a query", invisible_case))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=h.HERE, help="the checkout to test (default: this repository)")
    parser.add_argument("--cases", default="", help="only the cases whose group or name contains this text")
    parser.add_argument("--mem-gb", type=float, default=6.0, help="address-space cap of every process (default 6)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every case's detail there, as JSON")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    h.GROUPS.update(GROUPS)
    chosen = [c for c in cases() if args.cases.lower() in f"{GROUPS[c.group]} {c.name}".lower()]
    return h.run_all(root, chosen, int(args.mem_gb * 2**30), None, args.json, "hostile_env")


if __name__ == "__main__":
    sys.exit(main())
