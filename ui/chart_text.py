"""The texts a chart draws, fitted to a narrow chart: plotly wraps none of them, and a long subtitle, panel title or
axis title ran off the edge of a chart in a 1,000 px window. Without pandas, so the pages that draw no table (a
shared Inspector link) need not import it."""
from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from ui.safe import plot_text

if TYPE_CHECKING:
    import plotly.graph_objects as go

SUBTITLE_CHARS = 100  # what a line of the 11 px subtitle holds in a 540 px chart (the main column of a 1,000 px window)


def wrap(text: str, width: int) -> str:
    """`text` in lines of at most `width` characters joined by <br> (a longer word stays whole)."""
    return "<br>".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


def subtitled(fig: go.Figure, text: str) -> go.Figure:
    """`fig` with `text` (a chart's provenance line) as its subtitle, in lines a narrow chart holds."""
    return fig.update_layout(title_subtitle_text=wrap(plot_text(text, 300), SUBTITLE_CHARS),
                             title_subtitle_font={"size": 11, "color": "#666"})
