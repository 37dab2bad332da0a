"""`python -m ui.warm_start [streamlit options]`: `streamlit run app.py`, with a first answer's work begun at start.

Why: Streamlit runs app.py only when a browser asks, so a shared link's first request paid the pages' imports
(SQLAlchemy, the retrieval stack), the index's load, the benchmark queries' parse and (on a fresh clone) the
results' unpack and the router's first fit inside its own script runs:
3.5-5.7 s until it settled, against 2.0-2.7 s when a thread does that work beside Streamlit's own start and the
browser's page load (benchmarks/app_load.py; docs/benchmarks.md). `make run` starts the dashboard this way; plain
`streamlit run app.py` still works and warms nothing. app.py waits for the thread's imports before its own (wait),
so no module is ever imported by two threads at once: two threads entering SQLAlchemy at different modules met
half-initialised ones.
"""
from __future__ import annotations

import gc
import importlib
import logging
import sys
import threading
from collections.abc import Sequence

from ui import first_answer

WAIT_S = 60.0  # an import cannot hang, but a page must never wait on a thread forever
ANSWER_WAIT_S = 30.0  # how long the work put after the first answer waits for it: a server nobody opens does it too

# What the router's first fit imports: the reader, then what pandas and pyarrow import at their first calls (the fit's
# unstack, its first frame of the store's rows)
FIT_IMPORTS = ("core.analysis.reader", "pandas.core.reshape.reshape", "pyarrow.pandas_compat",
               "pyarrow.vendored.version")
_imported = threading.Event()  # what app.py waits for: every module the thread will need is imported
_started = False


def _import_for_pages(settings) -> None:
    """What the Inspector's page imports, and the store's dialect, which its first read would."""
    import core.analysis.store_summary  # what the page modules import
    import core.study.one_query  # noqa: F401
    import ui.gold_section
    import ui.inspector_view
    import ui.live_view
    import ui.retriever_choice  # noqa: F401
    from sqlalchemy.engine import make_url

    make_url(settings.results_url).get_dialect()


def _warm() -> None:
    """The shared link's path: the Inspector's imports, the default registry's index job and its queries; then, with
    the pages released and once the index is ready, the stored router fit its verdict reads (a fresh clone unpacks its
    results for it). Its modules are imported before the pages are released (FIT_IMPORTS, 0.4-0.8 s beside the index's
    load; a later server reads the kept fit without them), so that no page import meets one of them half done; the
    unpack and the fit wait for the index because on 2 cores they slowed the first answer they ran beside
    (docs/benchmarks.md). With the index loaded, what is in memory is frozen out of the collector's walks: Streamlit
    collects after every script run, which walked all of it (0.15 s after the first answer; 0.03 s frozen). Then it
    waits for the first answer to be sent (ui.first_answer) before the work that only later answers need: the held
    cache writes, the unpack and the fit."""
    try:
        from core.data.loaders import queries_for
        from core.store.packing import readable, still_packed
        from ui.index_job import index_job
        from ui.page_settings import base_settings
        from ui.resources import router_fit

        settings = base_settings()
        _import_for_pages(settings)
        job = index_job(settings)  # starts its own thread, found again by app.py's call (one cache per server)
        queries_for(settings)
        if still_packed(settings.results_url):
            for name in FIT_IMPORTS:
                importlib.import_module(name)
        _imported.set()
        job.wait(WAIT_S)
        gc.freeze()  # what is loaded by now lives as long as the server: no collection needs to walk it again
        first_answer.wait(ANSWER_WAIT_S)
        first_answer.release()
        if readable(settings.results_url):  # unpacks a fresh clone's results
            router_fit(settings, "api_list", 5, None)  # the default link's router verdict, kept for later servers
    except Exception:  # a bad setting or missing data: the page says it in one line when it meets it
        logging.getLogger(__name__).debug("warm start stopped", exc_info=True)
    finally:
        _imported.set()
        first_answer.release()


def started() -> bool:
    """Whether `make run`'s warm start runs in this server (it unpacks a fresh clone's results after the index)."""
    return _started


def wait() -> None:
    """Block until the warm thread has imported what the pages import (not for its work: a fresh clone's unpack and
    router fit go on beside the first answer, which does not wait for them); nothing to wait for under plain
    `streamlit run`. So no module is imported by two threads at once (tests/test_warm_start.py checks that the work
    imports nothing)."""
    if _started:
        _imported.wait(WAIT_S)


def main(argv: Sequence[str]) -> int:
    global _started
    from streamlit.web import cli

    _started = True
    first_answer.hold()
    threading.Thread(target=_warm, name="warm-start", daemon=True).start()
    sys.argv = ["streamlit", "run", "app.py", *argv]
    return cli.main()


if __name__ == "__main__":
    sys.modules.setdefault("ui.warm_start", sys.modules[__name__])  # one module (and state) for app.py's import
    raise SystemExit(main(sys.argv[1:]))
