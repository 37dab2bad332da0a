"""Where the crossover chart puts its legend: one entry per system and architecture, so a fifth stored model adds
rows that, above the plot, ran into the title (seen on the Overview with four systems)."""
from __future__ import annotations

import math

import pandas as pd

from ui.figures import crossover_backends


def board(systems: int) -> pd.DataFrame:
    return pd.DataFrame([{"system": f"local model-{i}", "arch": arch, "subset": subset, "recall": 0.1 + i / 100,
                          "n": 200}
                         for i in range(systems) for arch in ("rtp", "ptr", "hybrid")
                         for subset in ("G1_instruction", "G2_instruction", "G3_instruction")])


def test_the_crossover_legend_sits_below_the_plot_with_room_for_every_row() -> None:
    small, large = crossover_backends(board(2)), crossover_backends(board(5))
    for fig in (small, large):
        rows = math.ceil(len(fig.data) / 2)
        assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"
        assert fig.layout.margin.b >= 22 * rows
    assert len(large.data) == 15 and large.layout.height > small.layout.height
