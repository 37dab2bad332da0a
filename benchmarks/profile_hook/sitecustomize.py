"""Profile every Streamlit script run of a server started with this folder on PYTHONPATH and APP_PROFILE_DIR set.

Streamlit runs a page's script in its own thread, which `python -m cProfile` never sees; this wraps
ScriptRunner._run_script in a cProfile.Profile instead. Each run writes `<n>-<page>-<seconds>s.prof`, so
benchmarks/app_load.py --profile can say where a first deep link's seconds go inside the server.
"""
from __future__ import annotations

import cProfile
import itertools
import os
import threading
import time
from pathlib import Path

_DIR = os.environ.get("APP_PROFILE_DIR")


def _install(out: Path) -> None:
    from streamlit.runtime.scriptrunner import script_runner

    counter, lock, original = itertools.count(), threading.Lock(), script_runner.ScriptRunner._run_script

    def profiled(self, rerun_data):  # Streamlit's private signature
        profile, started = cProfile.Profile(), time.perf_counter()
        profile.enable()
        try:
            return original(self, rerun_data)
        finally:
            profile.disable()
            with lock:
                n = next(counter)
            page = (getattr(rerun_data, "page_name", "") or "app").replace("/", "_") or "app"
            profile.dump_stats(out / f"{n:03d}-{page}-{time.perf_counter() - started:.2f}s.prof")

    script_runner.ScriptRunner._run_script = profiled


if _DIR:
    Path(_DIR).mkdir(parents=True, exist_ok=True)
    _install(Path(_DIR))
