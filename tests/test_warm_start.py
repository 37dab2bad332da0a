"""The first answer's waits: app.py waits for the warm start's thread (ui.warm_start) to import what the pages import
only when `make run` started one, a thread that meets bad settings still lets every page run, its work imports nothing
once the pages run and what it loaded is left out of later collections, and a page waits for an index that loads but
not for one that embeds (ui.widgets.loading)."""
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
late = []

class Recorder:  # asked for every module not yet imported; records those the warm thread imports after releasing
    def find_spec(self, name, path=None, target=None):
        if warm._imported.is_set() and threading.current_thread().name == "warm-start":
            late.append(name)
        return None

sys.meta_path.insert(0, Recorder())
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
