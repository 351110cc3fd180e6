"""What the flows' command lines share."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.console import Console


def missing_inputs(console: Console, paths: Iterable[str], what: str = "input file(s)") -> bool:
    """Print one clear line and return True when any of the files does not exist."""
    missing = [path for path in paths if not Path(path).is_file()]
    if missing:
        console.print(f"[bold red]error:[/] {what} not found: {', '.join(missing)}")
    return bool(missing)
