"""The overlap figure: the share of items above each BM25 cut-off, one curve per set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from knowref60k.core.figures import pyplot, save_figure
from knowref60k.overlap.index import CURVE_CUTOFFS


def render_overlap_png(curves: Mapping[str, Sequence[float]], path: Path, title: str) -> None:
    """The share of items whose overlap score exceeds each cut-off, one curve per set (the paper's
    overlap figure); `curves` holds the shares at the cut-offs 0, 1, ..., 50."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 4.5), dpi=100)
    for name, shares in curves.items():
        axis.plot(list(CURVE_CUTOFFS), [100 * share for share in shares], label=name, linewidth=2)
    axis.set_xlabel("BM25 cut-off")
    axis.set_ylabel("items with overlap above the cut-off (%)")
    axis.set_xlim(CURVE_CUTOFFS[0], CURVE_CUTOFFS[-1])
    highest = max((100 * max(shares) for shares in curves.values() if shares), default=0)
    axis.set_ylim(0, min(100, 10 * (int(highest) // 10 + 1)))
    axis.grid(alpha=0.3)
    axis.legend()
    axis.set_title(title)
    save_figure(figure, path)
