"""Matplotlib without a display, and PNGs whose bytes depend only on the data."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure: Any, path: Path) -> None:
    """PNG without the software/date metadata, so the same data gives the same bytes."""
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})
    pyplot().close(figure)
