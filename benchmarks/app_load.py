"""Dashboard load times in a real browser, over the real data and the cached full-registry index.

    .venv/bin/python benchmarks/app_load.py [--runs 3] [--json]

Each run starts a fresh server as `make run` does (`python -m ui.warm_start`; `--plain`: `streamlit run app.py`; a new
process: nothing in memory, index on disk),
opens a shared Inspector link with a free-text query as the server's very first request, and
times: server start -> health, link opened -> RtP and PtR columns rendered ("first load"; and, on a second
fresh server, the same for a ?qid= link to a stored benchmark query), then
every page by sidebar click twice (first visit: empty caches; then warm), then a full browser load
of each page's URL, then every Results tab by click twice (first visit, then warm), then a new query typed
into the Inspector (an "RtP answer").
A page counts as loaded at the last moment Streamlit's running indicator shows (after its title
appears), confirmed by 0.75 s without it; "first_columns_s" is when both columns' headers show.
`--profile DIR` also profiles every script run inside each server (benchmarks/profile_hook) into DIR and adds, per
server, its runs' seconds and where its first request's time went.
`--fresh-clone N` instead clones HEAD N times into a temporary folder and times each clone's first ?q= link on its
first server (empty caches) and on a second one, with where each answer's seconds went in the browser ("_marks").
`--local N` instead times N typed queries with LLM_BACKEND=local (after `make llm`; a fresh call cache, one
warm-up query first): until PtR's column has its plan, and until both columns have theirs.
Needs Debian's chromium.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
FIRST_QUERY = "I'm planning a trip to London: find hotels, check the currency rate and look up my IP"
FIRST_QID = "G2_instruction:1643"  # a stored benchmark query: the ?qid= deep link
SECOND_QUERY = "Get the current weather forecast for Tokyo"
# url path ("" is the default page, served at the root) -> (sidebar label, page title)
PAGES = {"": ("Overview", "Tool Discovery Lab"), "results": ("Results", "Results"),
         "examples": ("Examples", "Examples"), "stubs": ("Stubs", "Stubs"), "registry": ("Registry", "Registry"),
         "inspector": ("Query Inspector", "Query Inspector")}
RESULTS_TABS = ("k sweep", "Scaling", "Per query", "Beyond the paper", "Leaderboard", "Token cost", "Planner", "Runs",
                "Main table")  # the open tab (Main table) last, so that every click switches
TIMEOUT_MS = 120_000
PROFILE_HOOK = ROOT / "benchmarks" / "profile_hook"
profile_root: Path | None = None  # set by --profile: each server profiles its script runs into a folder of its own
plain = False  # set by --plain: servers started by `streamlit run app.py`, with no warm start


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


RUNNING = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"
QUIET_S = 0.75  # Streamlit shows its running indicator a moment after a run starts, and reruns follow runs


def settled(page, title: str, poll_s: float = 0.025) -> float:
    """Wait until the title is visible and no script has run for QUIET_S; return when it last ran.

    The returned perf_counter time excludes the quiet wait itself, so it marks when the page
    finished (the last moment Streamlit's running indicator was seen, or the title's appearance).
    """
    page.get_by_role("heading", name=title).first.wait_for(timeout=TIMEOUT_MS)
    done = time.perf_counter()
    deadline = done + TIMEOUT_MS / 1000
    while time.perf_counter() - done < QUIET_S:
        if page.evaluate(RUNNING):
            done = time.perf_counter()
        if done > deadline:
            raise TimeoutError(f"{title}: still running after {TIMEOUT_MS / 1000:.0f} s")
        time.sleep(poll_s)
    return done


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_after(pid: int, timeout_s: float = 60.0, window_s: float = 0.5, busy_s: float = 0.05) -> float:
    """Seconds until the process used less than busy_s of CPU in a window_s window: the server's own work after
    its first answer (a fresh clone's cache writes, results unpack and router fit: ui.first_answer) is done."""
    started = time.perf_counter()
    before = cpu_seconds(pid)
    while time.perf_counter() - started < timeout_s:
        time.sleep(window_s)
        now = cpu_seconds(pid)
        if now - before < busy_s:
            return time.perf_counter() - started - window_s
        before = now
    raise TimeoutError(f"the server was still busy after {timeout_s:.0f} s")


@contextmanager
def streamlit_server(env: dict[str, str] | None = None, root: Path = ROOT, finish: dict | None = None
                     ) -> Iterator[str]:
    """A fresh server in `root` on a free port, started as `make run` starts it (`python -m ui.warm_start`; with
    `--plain`, `streamlit run app.py`); yields its URL once /_stcore/health answers. With `finish`, the server is
    stopped only once it is idle, so that what it writes for later servers is written, and finish["s"] gets how
    long that took after the block."""
    url = f"http://127.0.0.1:{free_port()}"
    env = {**os.environ, **(env or {})}
    if profile_root is not None:
        env["APP_PROFILE_DIR"] = str(profile_root / f"server-{len(list(profile_root.glob('server-*'))):02d}")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROFILE_HOOK), env.get("PYTHONPATH")]))
    launcher = ["-m", "streamlit", "run", "app.py"] if plain else ["-m", "ui.warm_start"]
    proc = subprocess.Popen([sys.executable, *launcher, "--server.headless", "true",
                             "--server.port", url.rsplit(":", 1)[1], "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("streamlit exited before it answered") from None
                time.sleep(0.05)
        yield url
        if finish is not None:
            finish["s"] = idle_after(proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)


def first_answer_s(url: str, params: dict, marks: dict[str, float] | None = None) -> float:
    """Seconds from opening an Inspector link (the server's first request) until both columns are rendered and
    the page has settled, in a fresh browser. `marks`, when given, gets where those seconds went: the page's
    DOMContentLoaded, its websocket's opening and first message (the script run's start), both columns' headers."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})

        def on_websocket(ws) -> None:
            seen.setdefault("websocket_open", time.perf_counter())
            ws.on("framereceived", lambda _: seen.setdefault("first_message", time.perf_counter()))

        page.on("websocket", on_websocket)
        page.on("domcontentloaded", lambda _: seen.setdefault("dom_content_loaded", time.perf_counter()))
        t0 = time.perf_counter()
        page.goto(f"{url}/inspector?" + urllib.parse.urlencode(params))
        page.get_by_text("RtP · Retrieve-then-Plan").wait_for(timeout=TIMEOUT_MS)
        seen["rtp_column"] = time.perf_counter()
        page.get_by_text("PtR · Plan-then-Retrieve").wait_for(timeout=TIMEOUT_MS)
        seen["ptr_column"] = time.perf_counter()
        seconds = settled(page, "Query Inspector") - t0
        browser.close()
    if marks is not None:
        marks.update({name: round(at - t0, 3) for name, at in sorted(seen.items(), key=lambda item: item[1])})
    return seconds


def first_qid_load() -> float:
    """A fresh server whose first request is a shared ?qid= link: seconds until both columns are rendered."""
    with streamlit_server() as url:
        return first_answer_s(url, {"qid": FIRST_QID, "k": 5})


def fresh_clone_load() -> dict:
    """A fresh clone of this repository's HEAD (no data/cache, the results store still packed, no ONNX graph: what
    `git clone` gives, with this .venv's packages): server start, then its first request, a shared ?q= link, until
    both columns are rendered; and the same on a second fresh server over the caches the first one wrote (it is
    stopped once idle: its cache writes, unpack and fit come after its answer)."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="tdl-clone-") as folder:
        clone = Path(folder) / "clone"
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        for label in ("fresh_clone", "clone_second_server"):
            started = time.perf_counter()
            marks: dict[str, float] = {}
            finish: dict = {}
            with streamlit_server(root=clone, finish=finish) as url:
                out[f"{label}_server_start_s"] = time.perf_counter() - started
                out[f"{label}_first_load_s"] = first_answer_s(url, {"q": FIRST_QUERY, "k": 5}, marks)
            out[f"{label}_marks"] = marks
            out[f"{label}_busy_after_answer_s"] = round(finish["s"], 2)
    return out


def one_run() -> dict:
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    with streamlit_server() as url:
        out: dict = {"server_start_s": time.perf_counter() - started}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            link = f"{url}/inspector?" + urllib.parse.urlencode({"q": FIRST_QUERY, "k": 5})
            t0 = time.perf_counter()
            page.goto(link)
            page.get_by_text("RtP · Retrieve-then-Plan").wait_for(timeout=TIMEOUT_MS)
            page.get_by_text("PtR · Plan-then-Retrieve").wait_for(timeout=TIMEOUT_MS)
            out["first_columns_s"] = time.perf_counter() - t0
            out["first_load_s"] = settled(page, "Query Inspector") - t0
            out["server_start_plus_first_load_s"] = out["server_start_s"] + out["first_load_s"]
            first, clicked, reloaded = {}, {}, {}
            for visits in (first, clicked):  # in-app navigation by sidebar click: first visit, then warm
                for name, (label, title) in PAGES.items():
                    t0 = time.perf_counter()
                    page.locator("[data-testid='stSidebarNavLink']", has_text=label).first.click()
                    visits[name or "overview"] = settled(page, title) - t0
            for name, (_, title) in PAGES.items():  # a full browser load of the page's URL (new session)
                t0 = time.perf_counter()
                page.goto(f"{url}/{name}")
                reloaded[name or "overview"] = settled(page, title) - t0
            out["first_visit_s"], out["warm_page_s"], out["warm_reload_s"] = first, clicked, reloaded
            box = page.get_by_role("textbox", name="Query")
            box.fill(SECOND_QUERY)
            t0 = time.perf_counter()
            box.press("Control+Enter")
            page.wait_for_function("() => decodeURIComponent(location.search).includes('Tokyo')", timeout=TIMEOUT_MS)
            out["inspector_answer_s"] = settled(page, "Query Inspector") - t0
            out["first_tab_s"], out["warm_tab_s"] = results_tabs(page)
            browser.close()
    out["first_qid_load_s"] = first_qid_load()
    return out


def results_tabs(page) -> tuple[dict[str, float], dict[str, float]]:
    """Each Results tab by click, twice: its first visit (its tables read and charts built), then warm."""
    page.locator("[data-testid='stSidebarNavLink']", has_text="Results").first.click()
    settled(page, "Results")
    first, warm = {}, {}
    for visits in (first, warm):
        for tab in RESULTS_TABS:
            t0 = time.perf_counter()
            page.get_by_role("tab", name=tab, exact=True).click()
            visits[tab] = settled(page, "Results") - t0
    return first, warm


LOCAL_QUERIES = (  # not benchmark queries, and asked of a fresh call cache: every answer is generated
    "Find the top tracks of an artist on Spotify and then search YouTube for the official video",
    "Get the weather forecast for Madrid and convert 50 euros to pounds",
    "Show me trending GIFs about cats and translate a caption into Spanish",
    "Look up the stock price of Apple and the latest news about Tesla",
    "Find a pasta recipe and the nutrition facts of its main ingredient",
    "Check if my email address is valid and send me an SMS reminder",
)


def local_inspector(n: int) -> dict:
    """LLM_BACKEND=local, typed queries after one warm-up: seconds until PtR's column has its plan (the
    planner line shows in it first) and until both columns have theirs."""
    import tempfile

    from playwright.sync_api import sync_playwright

    label = "Planner (local gemma-3-270m-q4_k_m)"
    ptr_s, both_s = [], []
    with tempfile.TemporaryDirectory() as cache, \
            streamlit_server({"LLM_BACKEND": "local", "CACHE_DIR": cache}) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        for i, query in enumerate(LOCAL_QUERIES[: n + 1]):
            page.goto(f"{url}/inspector")
            box = page.get_by_role("textbox", name="Query")
            box.wait_for(timeout=TIMEOUT_MS)
            box.fill(query)
            t0 = time.perf_counter()
            box.press("Control+Enter")
            page.get_by_text(label).first.wait_for(timeout=TIMEOUT_MS)
            ptr = time.perf_counter() - t0
            page.get_by_text(label).nth(1).wait_for(timeout=TIMEOUT_MS)
            if i:  # the first query warms the model up (load, first prompts)
                ptr_s.append(ptr)
                both_s.append(time.perf_counter() - t0)
        browser.close()
    return {"queries": len(ptr_s), "ptr_column_s": [round(v, 2) for v in ptr_s],
            "both_columns_s": [round(v, 2) for v in both_s], "ptr_column_median_s": round(statistics.median(ptr_s), 2),
            "both_columns_median_s": round(statistics.median(both_s), 2)}


def _in_project(file: str) -> str | None:
    """`file` relative to this repository or to a --fresh-clone clone of it (removed by now), else None."""
    match = re.search(r"/tdl-clone-[^/]+/clone/(.+)", file)
    if match:
        return match.group(1)
    return str(Path(file).relative_to(ROOT)) if file.startswith(f"{ROOT}/") and "/.venv/" not in file else None


def profile_summary(root: Path, top: int = 20) -> dict:
    """Per server: each script run's page and seconds, in order, and its first run's costliest calls (by
    cumulative time) in this repository's code and in the packages it imports."""
    import pstats

    out = {}
    for server in sorted(root.glob("server-*")):
        runs = sorted(server.glob("*.prof"))
        if not runs:
            continue
        stats = pstats.Stats(str(runs[0]))
        rows = [(cum, f"{ours or Path(file).parent.name}:{line}({func})")
                for (file, line, func), (_, _, _, cum, _) in stats.stats.items()
                if (ours := _in_project(file)) or file.endswith("/__init__.py")]
        out[server.name] = {"runs": [r.stem for r in runs],
                            "first_run_top": [f"{cum:.2f} s {where}"
                                              for cum, where in sorted(rows, reverse=True)[:top]]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--local", type=int, default=0, metavar="N",
                        help="instead: N typed queries with the local LLM (make llm), timing PtR's column")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="profile every script run inside the servers")
    parser.add_argument("--plain", action="store_true",
                        help="start servers with `streamlit run app.py` instead of `make run`'s warm start")
    parser.add_argument("--fresh-clone", type=int, default=0, metavar="N",
                        help="instead: N fresh clones of HEAD, each's first ?q= link on its first and second server")
    args = parser.parse_args()
    global profile_root, plain
    profile_root, plain = args.profile, args.plain
    if args.fresh_clone:
        clones = [fresh_clone_load() for _ in range(args.fresh_clone)]
        summary = {key: {"median": statistics.median(c[key] for c in clones), "max": max(c[key] for c in clones)}
                   for key in clones[0] if key.endswith("_s")}
        summary["profile"] = profile_summary(args.profile) if args.profile else None
        print(json.dumps({**summary, "clones": clones, "load_average": os.getloadavg()},
                         indent=None if args.json else 2))
        return 0
    if args.local:
        print(json.dumps(local_inspector(min(args.local, len(LOCAL_QUERIES) - 1)), indent=None if args.json else 2))
        return 0
    runs = [one_run() for _ in range(args.runs)]
    keys = ["server_start_s", "first_columns_s", "first_load_s", "first_qid_load_s", "server_start_plus_first_load_s",
            "inspector_answer_s"]
    summary = {k: {"median": statistics.median(r[k] for r in runs), "max": max(r[k] for r in runs)} for k in keys}
    for key in ("first_visit_s", "warm_page_s", "warm_reload_s", "first_tab_s", "warm_tab_s"):
        summary[key] = {page: statistics.median(r[key][page] for r in runs) for page in runs[0][key]}
    summary["runs"] = runs
    if args.profile:
        summary["profile"] = profile_summary(args.profile)
    print(json.dumps(summary, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
