"""What every command group of the `knowref60k` command line shares: the console, the options that
recur, and the one way a user error ends a command (one line, exit code 2)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from knowref60k.core.console import make_console
from knowref60k.core.errors import UserError, storage_error

console = make_console(stderr=True)


def config_option(*tables: str) -> Any:
    """The `--config` option of a command that reads `tables` of the TOML file (its help names them):
    `config: Annotated[Path | None, config_option("prepare", "labelling", "cost")] = None`."""
    named = [f"[{table}]" for table in tables]
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
    return typer.Option(
        "--config", help=f"TOML config file; this command reads its {listed} table{'s' * (len(named) > 1)}."
    )


ExtractConfigOption = Annotated[Path | None, config_option("extract")]
LabellingConfigOption = Annotated[Path | None, config_option("labelling")]
# The validity threshold and the labelling levels, settled together by the cost model.
LevelsConfigOption = Annotated[Path | None, config_option("prepare", "labelling", "cost")]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model", help="spaCy pipeline name or path (default: en_core_web_sm, else en_ud_open_sm)."
    ),
]
BenchmarksOption = Annotated[
    Path | None,
    typer.Option(
        "--benchmarks",
        help="Folder of the known benchmarks (WSC-273, DPR, WinoGrande), e.g. ../shared/data/benchmarks.",
    ),
]
# Nothing outside the package is read unless the user names it.
DEFAULT_BENCHMARKS = None


def named_benchmarks(benchmarks: Path | None, needed_for: str) -> Path:
    """The benchmarks folder a command was given, or a one-line error naming the option."""
    if benchmarks is None:
        raise UserError(f"{needed_for} needs --benchmarks: the folder of the known benchmarks")
    return benchmarks


def fail(error: Exception) -> typer.Exit:
    """The exit of a command that met a user error: the error printed as one line, exit code 2."""
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(code=2)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """The one way a command meets a user error, or an environment failure the library did not name
    (an OSError: permission denied, no space left): one line, exit code 2, never a traceback."""
    try:
        yield
    except UserError as error:
        raise fail(error) from None
    except OSError as error:
        raise fail(storage_error(error, doing=None)) from None


def advance(progress: Progress, task: TaskID) -> Callable[[int, int], None]:
    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return update


def progress_bar(in_bytes: bool = True) -> Progress:
    amount = DownloadColumn() if in_bytes else MofNCompleteColumn()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        amount,
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, or SIGTERM (what Prefect, systemd and Docker send): what the command started is stopped,
    unfinished outputs removed (a rerun redoes that file), one line printed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def terminated(signum: int, frame: object) -> None:
    """SIGTERM as an interruption: the `finally` blocks on the way out run, unlike the default's."""
    raise Interrupted(signum)


@contextlib.contextmanager
def stopping_what_it_starts() -> Iterator[None]:
    """Ctrl-C and SIGTERM as an `Interrupted` raised where the command is, with no line of the
    extraction's handler: a command that starts a server (Prefect's, Label Studio, the vote receiver)
    stops it in its `finally` on the way out, and ends with 128 + the signal's number. The handlers
    before are put back afterwards."""
    handlers = {stop: signal.getsignal(stop) for stop in (signal.SIGINT, signal.SIGTERM)}
    for stop in handlers:
        signal.signal(stop, terminated)
    try:
        yield
    finally:
        for stop, handler in handlers.items():
            signal.signal(stop, handler)
