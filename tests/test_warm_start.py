"""The first answer's waits: app.py waits for the warm start's thread (ui.warm_start) to import what the pages import
only when `make run` started one, a thread that meets bad settings still lets every page run, its work imports nothing
once the pages run and what it loaded is left out of later collections, a page waits for an index that loads but
not for one that embeds (ui.widgets.loading), and work held for after the first answer waits for it (ui.first_answer).
"""
from __future__ import annotations

import os
import time

import pytest

import ui.warm_start as warm_start


def test_plain_streamlit_run_waits_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm_start, "_started", False)
    monkeypatch.setattr(warm_start, "_imported", warm_start.threading.Event())  # never set
    started = time.monotonic()
    warm_start.wait()
    assert time.monotonic() - started < 1.0


def test_a_warm_thread_that_meets_a_bad_setting_still_releases_the_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """REGISTRY names no registry: base_settings raises; the thread ends, and wait() returns at once."""
    monkeypatch.setenv("REGISTRY", "no-such-registry")
    monkeypatch.setattr(warm_start, "_started", True)
    monkeypatch.setattr(warm_start, "_imported", warm_start.threading.Event())
    thread = warm_start.threading.Thread(target=warm_start._warm)
    thread.start()
    thread.join(60)
    assert not thread.is_alive() and warm_start._imported.is_set()
    started = time.monotonic()
    warm_start.wait()
    assert time.monotonic() - started < 1.0


def test_held_work_waits_for_release_and_a_failing_task_stops_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import first_answer

    monkeypatch.setattr(first_answer, "_held", None)
    done: list[str] = []
    first_answer.defer(lambda: done.append("not holding"))  # plain `streamlit run`: at once
    first_answer.hold()
    first_answer.defer(lambda: done.append("a"))
    first_answer.defer(lambda: 1 / 0)
    first_answer.defer(lambda: done.append("b"))
    assert done == ["not holding"]
    first_answer.release()
    assert done == ["not holding", "a", "b"]
    first_answer.defer(lambda: done.append("after"))  # released: at once again
    assert done[-1] == "after"


def test_a_loading_index_is_waited_for_and_an_embedding_one_is_not() -> None:
    """ui.widgets.loading: a job that loads (no embedding progress) is waited for until it finishes, within the
    wait; one that starts embedding ends the wait at once, so its progress bar shows."""
    from ui.index_job import IndexJob
    from ui.widgets import loading

    class Settings:  # IndexJob only keeps it
        pass

    loads = IndexJob("full", Settings())
    warm_start.threading.Timer(0.3, loads._finished.set).start()
    started = time.monotonic()
    loading(loads, wait_s=5.0)
    assert loads.finished and 0.25 < time.monotonic() - started < 2.0

    embeds = IndexJob("full", Settings())
    embeds.progress(10, 1000)
    started = time.monotonic()
    loading(embeds, wait_s=5.0)
    assert not embeds.finished and time.monotonic() - started < 0.5

    stalls = IndexJob("full", Settings())
    started = time.monotonic()
    loading(stalls, wait_s=0.4)
    assert not stalls.finished and 0.3 < time.monotonic() - started < 1.5


WORK_IMPORTS = """
import gc, sys, threading
import ui.warm_start as warm
from ui import first_answer
late = []

class Recorder:  # asked for every module not yet imported; records those the warm thread imports after releasing
    def find_spec(self, name, path=None, target=None):
        if warm._imported.is_set() and threading.current_thread().name == "warm-start":
            late.append(name)
        return None

sys.meta_path.insert(0, Recorder())
first_answer.answered()  # a page has answered: the thread goes on to its unpack and fit as soon as the index is in
thread = threading.Thread(target=warm._warm, name="warm-start")
thread.start()
thread.join(120)
print(repr((warm._imported.is_set(), not thread.is_alive(), late, gc.get_freeze_count())))
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_warm_threads_work_imports_nothing_after_it_releases_the_pages(tmp_path) -> None:
    """A fresh clone's path (results still packed: the thread unpacks them and fits the router with pandas) and a later
    server's (unpacked, the fit kept): every module the work needs was imported before wait() returned, so no page's
    import ever meets one of the thread's half-done (the failure two threads entering SQLAlchemy at once gave)."""
    import ast
    import shutil
    import subprocess
    import sys

    from core.settings import PROJECT_ROOT as ROOT

    shutil.copy(ROOT / "data" / "results.sqlite.gz", tmp_path / "results.sqlite.gz")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'results.sqlite'}", "CACHE_DIR": str(tmp_path / "c"),
           "REGISTRY": "documented"}
    for server in ("fresh clone", "later server"):
        out = subprocess.run([sys.executable, "-c", WORK_IMPORTS], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        imported, done, late, frozen = ast.literal_eval(out.stdout.strip().splitlines()[-1])
        assert imported and done, server
        assert late == [], f"{server}: the warm thread imported {late} after releasing the pages"
        assert frozen > 100_000, f"{server}: {frozen} objects kept out of collections"  # the modules and the index
    assert (tmp_path / "results.sqlite").exists()  # the first run did unpack (and so fit on pandas)


AFTER_THE_ANSWER = """
import os, sys, threading
from pathlib import Path
import ui.warm_start as warm
from ui import first_answer
from ui.index_job import index_job
from ui.page_settings import base_settings

first_answer.hold()  # as python -m ui.warm_start does
warm.ANSWER_WAIT_S = 120  # so that only answered() can end the wait
thread = threading.Thread(target=warm._warm, name="warm-start")
thread.start()
assert warm._imported.wait(120)
job = index_job(base_settings())
assert job.wait(120) and job.ready, job.error
cache, store = Path(os.environ["CACHE_DIR"]), Path(os.environ["RESULTS"])
thread.join(4)  # time for the write and the unpack (about 1 s here), were they not waiting
before = (sorted(p.name for p in cache.glob("emb-*-f16-*.npy")), store.exists(), thread.is_alive())
first_answer.answered()
thread.join(120)
after = (sorted(p.name for p in cache.glob("emb-*-f16-*.npy")), store.exists(), thread.is_alive())
print(repr((before, after)))
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_fresh_clones_cache_write_and_unpack_wait_for_the_first_answer(tmp_path) -> None:
    """Under the warm start, with the index in, the decoded vectors' cache is not written and the results are not
    unpacked until a script run has ended (app.py's ui.first_answer.answered()); then the thread does both and ends."""
    import ast
    import shutil
    import subprocess
    import sys

    from core.settings import PROJECT_ROOT as ROOT

    shutil.copy(ROOT / "data" / "results.sqlite.gz", tmp_path / "results.sqlite.gz")
    store = tmp_path / "results.sqlite"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{store}", "RESULTS": str(store), "CACHE_DIR": str(tmp_path / "c"),
           "REGISTRY": "documented"}
    out = subprocess.run([sys.executable, "-c", AFTER_THE_ANSWER], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert before == ([], False, True)  # the index is in; nothing written, nothing unpacked, the thread waiting
    names, unpacked, alive = after
    assert len(names) == 1 and unpacked and not alive
