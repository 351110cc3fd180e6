"""The `knowref60k` command line: the app and its command groups, one module each."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from knowref60k.cli import (
    config,
    cost,
    debias,
    evaluate,
    extract,
    funnel,
    prepare,
    release,
    setup_model,
    stats,
)
from knowref60k.cli import eval as eval_command
from knowref60k.cli.common import Interrupted, console
from knowref60k.cli.overlap import overlap_app
from knowref60k.core.paths import HOME_VARIABLE

# typer carries its own copy of click and exports only the base class of its command line errors
# (`typer.TyperException`); "no arguments, so the help" is one of them, told apart by its name, as typer's
# own rich_utils does, rather than imported from the private `typer._click`.
NO_ARGS_IS_HELP = "NoArgsIsHelpError"


class ExitCodeOfTheSignal(TyperGroup):
    """Ends a command a signal interrupted with 128 + the signal's number, the code a shell gives a
    process the signal stopped: 130 for Ctrl-C, 143 for SIGTERM (typer gives 130 to every interrupt, so
    a supervisor could not tell a stop it asked for from a user's Ctrl-C)."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context, which it does not export
        try:
            return super().invoke(ctx)
        except Interrupted as interrupt:
            raise typer.Exit(code=128 + interrupt.signum) from None

    def main(  # type: ignore[override]  # the same parameters, named: only standalone_mode is read
        self, args: Sequence[str] | None = None, standalone_mode: bool = True, **kwargs: Any
    ) -> Any:
        """A mistake on the command line (an unknown option, a value of the wrong type, a missing or
        unreadable argument) is one line naming the option and the problem, exit code 2, not click's
        usage block; `--help` and a group run without a command still print their help."""
        if not standalone_mode:
            return super().main(args, standalone_mode=False, **kwargs)
        try:
            code = super().main(args, standalone_mode=False, **kwargs)
        except typer.TyperException as error:
            if type(error).__name__ == NO_ARGS_IS_HELP:
                typer.echo(error.format_message(), err=True)
                sys.exit(error.exit_code)
            context = getattr(error, "ctx", None)
            where = f" (see '{context.command_path} --help')" if context is not None else ""
            typer.echo(f"error: {error.format_message()}{where}", err=True)
            sys.exit(error.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=ExitCodeOfTheSignal,
    help="Mine Winograd-style pronoun problems from Reddit dumps.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help texts are plain: "[extract]" is a TOML table, not rich markup.
    rich_markup_mode=None,
)


def _print_version(asked: bool) -> None:
    if asked:
        from knowref60k.core.versioning import __version__

        console.print(f"knowref60k {__version__}")
        raise typer.Exit


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version.")
    ] = False,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            metavar="DIR",
            help=f"Folder of your state: the Label Studio folders and logins (.env), the Prefect home, "
            f"the outputs of demo and serve (default: ${HOME_VARIABLE}, else the working folder). Set as "
            f"{HOME_VARIABLE} for the command and the processes it starts.",
        ),
    ] = None,
) -> None:
    if home is not None:
        os.environ[HOME_VARIABLE] = str(home.expanduser().absolute())
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, _interrupted)


def _interrupted(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    console.print(f"interrupted ({name}): stopping the workers; finished files are kept", style="yellow")
    raise Interrupted(signum)


app.command()(extract.extract)
app.command()(funnel.funnel)
app.command()(prepare.prepare)
app.command()(cost.cost)
app.command()(release.release)
app.command()(stats.stats)
app.command()(debias.debias)
app.command(name="measure-extraction")(eval_command.evaluate_recall)
app.command(name="evaluate-models")(evaluate.evaluate_models)
app.command(name="setup-model")(setup_model.setup_model)
app.command()(config.config)
app.add_typer(overlap_app, name="overlap")


def deprecated(command: Callable[..., None], old: str, new: str) -> Callable[..., None]:
    """`command` under its old name: the same options, and a one-line notice on stderr first."""

    @functools.wraps(command)
    def alias(*args: Any, **kwargs: Any) -> None:
        typer.echo(
            f"note: `knowref60k {old}` is deprecated and will be removed in the next release; "
            f"use `knowref60k {new}`",
            err=True,
        )
        command(*args, **kwargs)

    alias.__doc__ = f"Deprecated name of `{new}` (removed in the next release)."
    return alias


# The old names, hidden from the help, until the next release.
app.command(name="eval", hidden=True)(deprecated(eval_command.evaluate_recall, "eval", "measure-extraction"))
app.command(name="evaluate", hidden=True)(deprecated(evaluate.evaluate_models, "evaluate", "evaluate-models"))


# The project's other parts add their commands through this entry-point group (pyproject.toml): the Label
# Studio side `annotate` and `labelstudio`, the Prefect flows `run`, `demo`, `serve` and `flow`. The
# library names none of them: they import it, never the reverse.
COMMAND_GROUP = "knowref60k.commands"


def add_plugged_in_commands(application: typer.Typer) -> None:
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name):
        entry.load()(application)


add_plugged_in_commands(app)
