"""The ToolBench data committed in data/toolbench/: intact, found first, and enough for a clone with nothing beside
it."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import PROJECT_ROOT, Settings

DATA = PROJECT_ROOT / "data" / "toolbench"
SHARED = PROJECT_ROOT.parent / "shared" / "toolbench"


def sums() -> dict[str, str]:
    lines = (DATA / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split(maxsplit=1) for line in lines if line.strip())}


def test_committed_files_match_their_checksums() -> None:
    listed = sums()
    assert {"registry_full.jsonl.gz", "registry.jsonl.gz", "queries.jsonl.gz", "SOURCES.md"} <= set(listed)
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/toolbench beside this clone to compare with")
def test_committed_files_are_byte_identical_to_shared() -> None:
    for name in sums():
        if (SHARED / name).is_file():
            assert (SHARED / name).read_bytes() == (DATA / name).read_bytes(), name
    assert {p.name for p in SHARED.iterdir() if p.is_file()} <= set(sums())


def test_the_committed_data_is_found_first() -> None:
    assert Settings.from_env(env={}).data_dir() == DATA


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_clone_with_nothing_beside_it_answers_without_embedding(tmp_path: Path) -> None:
    """The code in a folder with no ../shared: data and the shipped index are found, nothing is embedded."""
    clone = tmp_path / "clone"
    shutil.copytree(PROJECT_ROOT / "core", clone / "core", ignore=shutil.ignore_patterns("__pycache__"))
    (clone / "data").mkdir()
    for name in ("toolbench", "index"):
        (clone / "data" / name).symlink_to(PROJECT_ROOT / "data" / name)
    assert not (tmp_path / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLBENCH_DATA", "INDEX_DIR", "REGISTRY")}
    env.update(CACHE_DIR=str(tmp_path / "cache"), LLM_BACKEND="offline", PYTHONPATH=str(clone))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "core", *args], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=300)

    index = run("index", "--json")
    assert index.returncode == 0, index.stderr
    info = json.loads(index.stdout)
    assert (info["source"], info["size"]) == ("artifact", 47038)
    query = run("query", "weather in Paris", "--json")
    assert query.returncode == 0, query.stderr
    hits = json.loads(query.stdout)["rtp"]["hits"]
    assert len(hits) == 5 and any("weather" in (h["tool_name"] + h["api_name"]).lower() for h in hits)
    assert "embedding registry" not in index.stderr + query.stderr
