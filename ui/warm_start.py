"""`python -m ui.warm_start [streamlit options]`: `streamlit run app.py`, with a first answer's work begun at start.

Why: Streamlit runs app.py only when a browser asks, so a shared link's first request paid the pages' imports
(SQLAlchemy, the retrieval stack), the index's load, the benchmark queries' parse and (on a fresh clone) the
results' unpack and the router's first fit inside its own script runs:
3.5-5.7 s until it settled, against 2.0-2.7 s when a thread does that work beside Streamlit's own start and the
browser's page load (benchmarks/app_load.py; docs/benchmarks.md). `make run` starts the dashboard this way; plain
`streamlit run app.py` still works and warms nothing. app.py waits for the thread before its own imports (wait), so
no module is ever imported by two threads at once: two threads entering SQLAlchemy at different modules met
half-initialised ones.
"""
from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Sequence

WAIT_S = 60.0  # an import cannot hang, but a page must never wait on a thread forever

_done = threading.Event()
_started = False


def _warm() -> None:
    """The shared link's path: the Inspector's imports, the default registry's index job and its queries, and the
    stored router fit its verdict reads (a fresh clone unpacks its results for it)."""
    try:
        import core.analysis.store_summary  # what the page modules import
        import core.study.one_query  # noqa: F401
        import ui.gold_section
        import ui.inspector_view
        import ui.live_view
        import ui.retriever_choice  # noqa: F401
        from core.data.loaders import queries_for
        from ui.index_job import index_job
        from ui.page_settings import base_settings

        settings = base_settings()
        index_job(settings)  # starts its own thread, found again by app.py's call (one cache per server)
        queries_for(settings)
        from core.store.packing import readable
        from ui.resources import router_fit

        if readable(settings.results_url):  # unpacks a fresh clone's results (zlib, beside the index's build)
            router_fit(settings, "api_list", 5, None)  # the default link's router verdict, kept for later servers
    except Exception:  # a bad setting or missing data: the page says it in one line when it meets it
        logging.getLogger(__name__).debug("warm start stopped", exc_info=True)
    finally:
        _done.set()


def wait() -> None:
    """Block until the warm thread has finished its imports; nothing to wait for under plain `streamlit run`."""
    if _started:
        _done.wait(WAIT_S)


def main(argv: Sequence[str]) -> int:
    global _started
    from streamlit.web import cli

    _started = True
    threading.Thread(target=_warm, name="warm-start", daemon=True).start()
    sys.argv = ["streamlit", "run", "app.py", *argv]
    return cli.main()


if __name__ == "__main__":
    sys.modules.setdefault("ui.warm_start", sys.modules[__name__])  # one module (and state) for app.py's import
    raise SystemExit(main(sys.argv[1:]))
