"""What every command group of the `knowref60k` command line shares: the console, the options that
recur, and the one way a user error ends a command (one line, exit code 2)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, NoReturn

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
from knowref60k.core.paths import BENCHMARKS_DIR

console = make_console(stderr=True)

ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML file with an [extract] table.")]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model", help="spaCy pipeline name or path (default: en_core_web_sm, else en_ud_open_sm)."
    ),
]
BenchmarksOption = Annotated[
    Path,
    typer.Option(
        "--benchmarks",
        help="Known benchmarks (WSC-273, DPR, WinoGrande) for the 13-gram check.",
        show_default="../shared/data/benchmarks",
    ),
]
DEFAULT_BENCHMARKS = BENCHMARKS_DIR


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


def add_forwarded(
    app: typer.Typer,
    name: str,
    target: str,
    summary: str,
    environment: Callable[[], Mapping[str, str]] = dict,
) -> None:
    """Add `name` to `app` as a command whose arguments go, as given, to the command line at `target`
    ("module:function", taking the argument list and returning an exit code), imported only when the
    command runs: the flows import Prefect, which every other command would otherwise wait for.
    `environment()`: variables it runs with unless already set (before the import).
    `knowref60k NAME --help` is that command line's own help."""

    def command(context: typer.Context) -> None:
        for variable, value in environment().items():
            os.environ.setdefault(variable, value)
        module, function = target.split(":")
        main = getattr(importlib.import_module(module), function)
        with as_its_own_program(context.command_path), user_errors():
            code = main(list(context.args))
        raise typer.Exit(code=code)

    command.__doc__ = summary
    app.command(
        name,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )(command)


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
def as_its_own_program(command_path: str) -> Iterator[None]:
    """Run a forwarded command line as it runs on its own (`python -m ...`): Python's own Ctrl-C, and
    SIGTERM as a Ctrl-C, so that what it started (a Prefect server, a Label Studio) is stopped on the way
    out, not through the extraction's handler; its usage named `knowref60k COMMAND`, and a mistake in its
    arguments one line, exit code 2, as every other command's."""

    def one_line(parser: argparse.ArgumentParser, message: str) -> NoReturn:
        typer.echo(f"error: {message} (see '{command_path} --help')", err=True)
        raise SystemExit(2)

    handlers = {stop: signal.getsignal(stop) for stop in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, terminated)
    program, error = sys.argv[0], argparse.ArgumentParser.error
    sys.argv[0] = command_path
    argparse.ArgumentParser.error = one_line  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        argparse.ArgumentParser.error = error  # type: ignore[method-assign]
        sys.argv[0] = program
        for stop, handler in handlers.items():
            signal.signal(stop, handler)
