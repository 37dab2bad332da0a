"""The warm start (ui.warm_start): app.py waits for its thread only when `make run` started one, and a thread that
meets bad settings still lets every page run."""
from __future__ import annotations

import time

import pytest

import ui.warm_start as warm_start


def test_plain_streamlit_run_waits_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm_start, "_started", False)
    monkeypatch.setattr(warm_start, "_done", warm_start.threading.Event())  # never set
    started = time.monotonic()
    warm_start.wait()
    assert time.monotonic() - started < 1.0


def test_a_warm_thread_that_meets_a_bad_setting_still_releases_the_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """REGISTRY names no registry: base_settings raises; the thread ends, and wait() returns at once."""
    monkeypatch.setenv("REGISTRY", "no-such-registry")
    monkeypatch.setattr(warm_start, "_started", True)
    monkeypatch.setattr(warm_start, "_done", warm_start.threading.Event())
    thread = warm_start.threading.Thread(target=warm_start._warm)
    thread.start()
    thread.join(60)
    assert not thread.is_alive() and warm_start._done.is_set()
    started = time.monotonic()
    warm_start.wait()
    assert time.monotonic() - started < 1.0
