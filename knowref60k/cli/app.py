"""The `knowref60k` command line: the app and its command groups, one module each."""

from __future__ import annotations

import logging
import signal
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from annotation.cli import annotate_app
from knowref60k.cli import debias, evaluate, extract, models, prepare, release, setup
from knowref60k.cli.common import console
from knowref60k.cli.overlap import overlap_app


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, or SIGTERM (what Prefect, systemd and Docker send): the worker processes are stopped,
    unfinished outputs removed (a rerun redoes that file), one line printed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class ExitCodeOfTheSignal(TyperGroup):
    """Ends a command a signal interrupted with 128 + the signal's number, the code a shell gives a
    process the signal stopped: 130 for Ctrl-C, 143 for SIGTERM (typer gives 130 to every interrupt, so
    a supervisor could not tell a stop it asked for from a user's Ctrl-C)."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context, which it does not export
        try:
            return super().invoke(ctx)
        except Interrupted as interrupt:
            raise typer.Exit(code=128 + interrupt.signum) from None


app = typer.Typer(
    cls=ExitCodeOfTheSignal,
    help="Mine Winograd-style pronoun problems from Reddit dumps.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help texts are plain: "[extract]" is a TOML table, not rich markup.
    rich_markup_mode=None,
)


app.add_typer(annotate_app, name="annotate")


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
app.command()(extract.funnel)
app.command()(prepare.prepare)
app.command()(release.release)
app.command()(release.stats)
app.command()(debias.debias)
app.command(name="eval")(evaluate.evaluate_recall)
app.command(name="evaluate")(models.evaluate_models)
app.command(name="setup-model")(setup.setup_model)
app.add_typer(overlap_app, name="overlap")
