"""The one progress bar: tqdm on stderr, for benchmark loops and (done, total) callbacks alike."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def progress_bar(total: int, desc: str, enabled: bool = True, unit: str = "query") -> Any:
    """A tqdm bar on stderr (a no-op bar when not enabled)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled, smoothing=0.1)


def progress_callback(desc: str, unit: str = "doc") -> Callable[[int, int], None]:
    """A (done, total) callback that drives one bar, created on the first report (when total is known)."""
    bar: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = progress_bar(total, desc, unit=unit)
        bar["bar"].update(done - bar["bar"].n)
        if done >= total:
            bar["bar"].close()

    return update
