"""The `knowref60k` command line: the app and its command groups, one module each."""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Annotated, Any

import typer

# typer carries its own copy of click: its command line errors are of these classes, not click's.
from typer._click.exceptions import ClickException, NoArgsIsHelpError
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
        except NoArgsIsHelpError as error:
            error.show()
            sys.exit(error.exit_code)
        except ClickException as error:
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
) -> None:
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
app.command(name="eval")(eval_command.evaluate_recall)
app.command(name="evaluate")(evaluate.evaluate_models)
app.command(name="setup-model")(setup_model.setup_model)
app.command()(config.config)
app.add_typer(overlap_app, name="overlap")


# The project's other parts add their commands through this entry-point group (pyproject.toml): the Label
# Studio side `annotate` and `labelstudio`, the Prefect flows `run`, `demo`, `serve` and `flow`. The
# library names none of them: they import it, never the reverse.
COMMAND_GROUP = "knowref60k.commands"


def add_plugged_in_commands(application: typer.Typer) -> None:
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name):
        entry.load()(application)


add_plugged_in_commands(app)
