"""The Inspector's probing views in a real browser, warm (issue 33): every stored system side by side on a stored
query, and a shared link with edited stubs.

    nice -n 10 .venv/bin/python benchmarks/probe_views.py [--runs 5] [--json]

One `streamlit run app.py` over the committed data and results (the full registry's shipped index); each view's
link is opened once to warm the server (the index, the store's tables), then `--runs` times in a fresh browser
page, timed from `goto` to the page's last script run (benchmarks/app_load.settled): a new session, so the app's frame
(sidebar, store summary) is in it. The stored one-system view, the Inspector as it was, is the baseline in the same
server; and, in one open page, the click from that view to "Every system". Goal: the side-by-side view of a stored
query renders in <= 1.5 s on a warm server. Prints the load.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_load import CHROMIUM_ARGS, TIMEOUT_MS, settled, streamlit_server

QID = "G2_instruction:15067"  # stored for every system; the 1.5B finds both gold APIs, RtP neither
STUBS = [["scramble_word", "scramble the word PUZZLE"], ["puzzle_games", "good puzzle games to play"]]
VIEWS = {"one system (baseline: the stored Inspector view)": ({"qid": QID, "k": 5}, "PtR · Plan-then-Retrieve"),
         "every system": ({"qid": QID, "k": 5, "show": "Every system"}, "Gold APIs no system found"),
         "edited stubs": ({"qid": QID, "k": 5, "show": "Edit stubs", "stubs": json.dumps(STUBS)},
                          "edited stubs (no LLM)")}


def time_view(browser, url: str, params: dict, marker: str, runs: int) -> list[float]:
    seconds = []
    for _ in range(runs + 1):  # the first opening warms the server
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        start = time.perf_counter()
        page.goto(f"{url}/inspector?" + urllib.parse.urlencode(params))
        page.get_by_text(marker, exact=False).first.wait_for(timeout=TIMEOUT_MS)
        seconds.append(settled(page, "Query Inspector") - start)
        page.close()
    return seconds[1:]


def time_switch(browser, url: str, runs: int) -> list[float]:
    """In one open page: the one-system view, then a click on "Every system", timed to its last script run; back to
    "One system" between runs. What a researcher waits for when probing a query in an open session."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/inspector?" + urllib.parse.urlencode({"qid": QID, "k": 5}))
    page.get_by_text("PtR · Plan-then-Retrieve").first.wait_for(timeout=TIMEOUT_MS)
    settled(page, "Query Inspector")
    seconds = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        page.get_by_text("Every system", exact=True).click()
        page.get_by_text(VIEWS["every system"][1], exact=False).first.wait_for(timeout=TIMEOUT_MS)
        seconds.append(settled(page, "Query Inspector") - start)
        page.get_by_text("One system", exact=True).click()
        page.get_by_text("PtR · Plan-then-Retrieve").first.wait_for(timeout=TIMEOUT_MS)
        settled(page, "Query Inspector")
    page.close()
    return seconds[1:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()[0]
    with streamlit_server({"LLM_BACKEND": "offline"}) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        timings = {f"{name}, new session": time_view(browser, url, params, marker, args.runs)
                   for name, (params, marker) in VIEWS.items()}
        timings["every system, switched to in an open page"] = time_switch(browser, url, args.runs)
        browser.close()
    report = {"cores": os.cpu_count(), "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
              "runs": args.runs, "goal_s": {"every system, switched to in an open page": 1.5},
              "views": {name: {"median_s": round(statistics.median(s), 3), "max_s": round(max(s), 3)}
                        for name, s in timings.items()}}
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
