"""One corpus build at a time, shown with real processes: a second one waits and builds nothing, and a
build killed with SIGKILL is taken over and finishes once."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.retrieval.build_lock import exclusive_build, read_state
from core.settings import PROJECT_ROOT

pytestmark = pytest.mark.subprocess

# A process that embeds 40 documents slowly (0.1 s per document), reporting progress, into CACHE.
WORKER = r"""
import json, sys, time
import numpy as np
from core.retrieval.embedding import TwoSided, corpus_embeddings
from core.data.registry import Registry
from core.data.toolbench import Api

class SlowEncoder(TwoSided):
    model_id, dim, runtime = "slow-fake", 8, "fake"
    def __init__(self): self.encoded = 0
    def encode(self, texts, *, batch_size=64, progress=None):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            time.sleep(float(sys.argv[2]))
            out[i, len(text) % self.dim] = 1.0
            self.encoded += 1
            if progress: progress(i + 1, len(texts))
        return out

registry = Registry("slow", tuple(Api("T", f"api {i}", "", "x" * i) for i in range(40)))
encoder, messages = SlowEncoder(), []
vectors, source = corpus_embeddings(encoder, registry, __import__("pathlib").Path(sys.argv[1]),
                                    notify=messages.append)
print(json.dumps({"source": source, "encoded": encoder.encoded, "messages": messages, "rows": len(vectors)}))
"""


def start(cache: Path, delay_s: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.Popen([sys.executable, "-c", WORKER, str(cache), str(delay_s)], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(proc: subprocess.Popen, timeout_s: float = 60) -> dict:
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def wait_for_progress(cache: Path, minimum: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any((s := read_state(cache, p.name[4:-11])) and s.done >= minimum for p in cache.glob("emb-*.build.json")):
            return
        time.sleep(0.05)
    raise AssertionError("the first build never reported progress")


def test_a_second_process_waits_and_builds_nothing(tmp_path: Path) -> None:
    first = start(tmp_path, 0.05)  # about 2 s of building
    wait_for_progress(tmp_path, 1)
    second = start(tmp_path, 0.05)
    a, b = result(first), result(second)
    assert (a["source"], a["encoded"]) == ("built", 40)
    assert (b["source"], b["encoded"], b["rows"]) == ("cache", 0, 40)
    assert any("already running" in m and str(first.pid) in m for m in b["messages"]), (first.pid, b)
    assert not list(tmp_path.glob("*.build.json"))  # a finished build leaves no progress file


def test_a_killed_build_is_taken_over_and_finishes_once(tmp_path: Path) -> None:
    first = start(tmp_path, 1.0)  # 40 s: it will be killed long before
    wait_for_progress(tmp_path, 1)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    second = start(tmp_path, 0.01)
    b = result(second)
    assert (b["source"], b["encoded"]) == ("built", 40)
    assert any(f"PID {first.pid} stopped" in m and "taking it over" in m for m in b["messages"])
    third = result(start(tmp_path, 0.01))
    assert (third["source"], third["encoded"], third["messages"]) == ("cache", 0, [])


def test_waiters_see_the_builders_progress(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    first = start(tmp_path, 0.05)
    wait_for_progress(tmp_path, 1)
    key = next(tmp_path.glob("emb-*.build.json")).name[4:-11]
    with exclusive_build(tmp_path, key, progress=lambda d, t: seen.append((d, t)), poll_s=0.2):
        pass
    result(first)
    assert seen and all(t == 40 for _, t in seen) and seen[-1][0] >= seen[0][0]
