"""Screenshots of every dashboard page into docs/screenshots/, from a fresh server over the real data.

    .venv/bin/python docs/take_screenshots.py

Needs the cached full-registry index (`python -m core index`) and Debian's chromium. Each shot is
taken once the page has settled (no script running for a while), as benchmarks/app_load.py waits.
"""
from __future__ import annotations

import shutil
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from app_load import CHROMIUM_ARGS, settled, streamlit_server  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
FREE_TEXT = "I'm planning a trip to London: find hotels, check the currency rate and look up my IP"
SHOTS = [  # file, url path and query, page title
    ("overview.png", "", "Tool Discovery Lab"),
    ("inspector_free_text.png", "inspector?" + urllib.parse.urlencode({"q": FREE_TEXT, "k": 5}), "Query Inspector"),
    ("inspector_benchmark.png", "inspector?qid=G2_instruction:1643&k=5", "Query Inspector"),
    ("results.png", "results", "Results"),
    *((f"results_{tab.lower().replace(' ', '_')}.png", "results?" + urllib.parse.urlencode({"tab": tab}), "Results")
      for tab in ("k sweep", "Per query", "Beyond the paper", "Leaderboard", "Token cost", "Planner", "Retrievers")),
    # The scaling and distractor studies reuse the offline heuristic's stubs, not the default study's.
    ("results_scaling.png", "results?" + urllib.parse.urlencode({"tab": "Scaling", "runs_of": "offline"}), "Results"),
    ("examples.png", "examples?" + urllib.parse.urlencode({"gold": "relevant", "ex_outcome": "ptr_wins"}), "Examples"),
    ("stubs.png", "stubs", "Stubs"),
    ("registry.png", "registry?" + urllib.parse.urlencode({"q": FREE_TEXT}), "Registry"),
]


def main() -> int:
    from playwright.sync_api import sync_playwright

    with streamlit_server() as url:
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 2600})  # Streamlit scrolls inside the page
            for name, path, title in SHOTS:
                page.goto(f"{url}/{path}")
                settled(page, title)
                page.wait_for_timeout(500)  # plotly draws after the script run ends
                page.screenshot(path=str(OUT / name), full_page=True)
                print(f"saved {OUT / name}")
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
