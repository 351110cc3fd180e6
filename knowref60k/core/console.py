"""Rich output shared by the command line, the flows and the benchmarks."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from knowref60k.core.stats import PipelineStats


def make_console(stderr: bool = False) -> Console:
    """A console that keeps tables readable when the output goes to a file or CI log. Markup is off:
    paths and messages are printed as they are ("[extract]", a folder named "[bold]"); styles are
    given with `style=` or `Text`."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 140, markup=False)


def print_error(console: Console, message: object) -> None:
    """One line, however narrow the terminal: a wrapped error reads as two."""
    console.print(Text.assemble(("error: ", "bold red"), str(message)), soft_wrap=True)


def render_funnel(stats: PipelineStats, title: str = "Funnel") -> Table:
    table = Table(title=title)
    for column in ("stage", "unit", "in", "out", "dropped (reason: count)"):
        table.add_column(column, justify="right" if column in ("in", "out") else "left")
    for name, stage in stats.to_dict()["stages"].items():
        drops = ", ".join(f"{reason}: {count:,}" for reason, count in stage["dropped"].items())
        table.add_row(name, stage["unit"], f"{stage['in']:,}", f"{stage['out']:,}", drops)
    if "read" in stats.stages:
        table.caption = f"quarantined lines: {stats.quarantined:,}"
    return table
