"""`knowref60k annotate ...`: push items, create annotators, collect votes, simulate annotators."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from annotation.settings import STATE_DIR, load_settings
from annotation.tasks import ORDER_SEED, simulated_truth
from knowref60k.core.errors import UserError

annotate_app = typer.Typer(
    help="Five-way labelling in Label Studio.", no_args_is_help=True, rich_markup_mode=None
)
SeedOption = Annotated[int, typer.Option(help="Seed of the answer order shown per item.")]


def _fail(error: UserError) -> typer.Exit:
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(code=2)


@annotate_app.command()
def push(
    items: Annotated[
        list[Path], typer.Argument(metavar="ITEMS", help="*.items.parquet files from `prepare`.")
    ],
    seed: SeedOption = ORDER_SEED,
    batch_size: Annotated[int, typer.Option(help="Tasks per import request.")] = 1000,
) -> None:
    """Import items as tasks; items already in the project are never imported twice."""
    from annotation.client import LabelStudioClient, read_items

    try:
        with LabelStudioClient(load_settings()) as client:
            report = client.push(read_items(items), seed, batch_size)
    except UserError as error:
        raise _fail(error) from None
    typer.echo(
        f"{report.items:,} items: {report.pushed:,} imported, {report.already_there:,} already there; "
        f"{report.tasks_in_project:,} tasks in the project"
    )


@annotate_app.command()
def users(
    count: Annotated[int, typer.Option("--count", help="How many annotator accounts to create.")] = 5,
) -> None:
    """Create annotator accounts that can log in and label; prints their logins."""
    from annotation.client import LabelStudioClient, save_accounts

    try:
        settings = load_settings()
        with LabelStudioClient(settings) as client:
            accounts = client.create_annotators(count)
    except UserError as error:
        raise _fail(error) from None
    save_accounts(STATE_DIR / "annotators.json", accounts)
    typer.echo(f"Log in at {settings.url}/user/login/ with:")
    for account in accounts:
        typer.echo(f"  {account.email}  {account.password}")
    typer.echo(f"(also saved to {STATE_DIR / 'annotators.json'}, readable only by you)")


@annotate_app.command()
def collect(
    out: Annotated[Path, typer.Option(help="Folder for votes.parquet and collect.json.")] = Path(
        "output/annotation"
    ),
) -> None:
    """Export every annotation and write the votes table (one vote per item and annotator)."""
    from annotation.client import LabelStudioClient

    try:
        with LabelStudioClient(load_settings()) as client:
            votes_path, report = client.collect(out)
    except UserError as error:
        raise _fail(error) from None
    typer.echo(
        f"{report['votes']:,} votes ({report['new_votes']:,} new, {report['updated_votes']:,} updated) from "
        f"{report['annotations']:,} annotations; {report['duplicate_annotations']:,} repeated by the same "
        f"person, {report['skipped']:,} skipped, {report['without_choice']:,} without a choice"
    )
    if report["simulated_votes"]:
        typer.echo(f"NOTE: {report['simulated_votes']:,} of these votes are simulated")
    typer.echo(f"Votes in {votes_path.resolve()}")


@annotate_app.command()
def simulate(
    annotators: Annotated[int, typer.Option(help="Simulated annotators (distinct users).")] = 5,
    accuracy: Annotated[float, typer.Option(help="Chance each answer is the simulated truth.")] = 0.9,
    seed: Annotated[int, typer.Option(help="Seed of truths and errors.")] = 0,
) -> None:
    """FOR DEMOS AND TESTS ONLY: post annotations through the real API as simulated users."""
    from annotation.client import LabelStudioClient

    try:
        with LabelStudioClient(load_settings()) as client:
            posted = client.simulate(annotators, accuracy, seed, simulated_truth(seed))
    except UserError as error:
        raise _fail(error) from None
    typer.echo(f"posted {posted:,} simulated annotations ({annotators} annotators, accuracy {accuracy})")
