"""`knowref60k funnel`: the merged funnel of an extraction output folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from knowref60k.cli.common import console, fail, user_errors
from knowref60k.core.console import render_funnel
from knowref60k.core.errors import UserError


def funnel_title(stats_files: list[Path]) -> str:
    from knowref60k.core.stats import person_detection_of

    return f"Funnel over {len(stats_files)} file(s), person detection: {person_detection_of(stats_files)}"


def funnel(out: Annotated[Path, typer.Argument(help="An extraction output folder.")]) -> None:
    """Print the merged funnel of every stats file in an output folder."""
    from knowref60k.core.stats import merge_stats

    stats_files = sorted(out.glob("*.stats.json"))
    if not stats_files:
        raise fail(UserError(f"no *.stats.json in {out}"))
    with user_errors():
        total, title = merge_stats(stats_files), funnel_title(stats_files)
    console.print(render_funnel(total, title))
