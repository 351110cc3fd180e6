"""`knowref60k annotate ...`: the labelling loop in Label Studio, from the command line.

push ITEMS        new items (and control items) into screening
promote ITEMS     items screening accepted into resolution
users             annotator accounts, per role
collect           both stages' votes; decided tasks closed
status            where the labelling stands
forget-project    drop the record of a stage's vanished project, so that a push makes a new one
pause / resume    take an account off labelling, or give it back (accounts are paused for their controls)
examples ITEMS    decided screening tasks as judged examples for the validity score
simulate          simulated annotators (demos and tests only)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from knowref60k.cli.common import LabellingConfigOption, config_option, stopping_what_it_starts
from knowref60k.core.errors import UserError, storage_error
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import STAGES
from knowref60k.settings.effective import labelling_settings

from .labelstudio_app.labelstudio_contract import LOGIN_PATH
from .settings import Settings, demo_settings, load_settings
from .status import VOTE_COLUMNS

annotate_app = typer.Typer(
    help="Screening and resolution in Label Studio.", no_args_is_help=True, rich_markup_mode=None
)
ItemsArgument = Annotated[
    list[Path], typer.Argument(metavar="ITEMS", help="*.items.parquet files from `prepare`.")
]
ConfigOption = LabellingConfigOption
OutOption = Annotated[Path, typer.Option("--out", help="Folder of the collected votes.")]
DEFAULT_OUT = Path("output/annotation")


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """A user's mistake, an unreachable server or a file system that refuses (an OSError) ends the
    command with one line, never a traceback."""
    try:
        yield
    except UserError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    except OSError as error:
        typer.echo(f"error: {storage_error(error, doing=None)}", err=True)
        raise typer.Exit(code=2) from None


def _config(path: Path | None) -> LabellingConfig:
    return labelling_settings(path)


@annotate_app.command()
def push(items: ItemsArgument, config: ConfigOption = None) -> None:
    """New items into screening (or resolution, when screening is off), with their share of control
    items; items already in the project are never imported twice."""
    from knowref60k.core.io import distinct_files

    from .client import LabelStudioClient
    from .operations import first_stage, push_new

    repeated = len(items) - len(distinct_files(items))
    if repeated:
        typer.echo(f"{repeated} repeated items file(s) left out: each is pushed once")
    with one_line_errors():
        settings = load_settings()
        labelling = _config(config)
        with LabelStudioClient(settings) as client:
            reports = push_new(client, items, labelling)
    for stage, report in reports.items():
        unscreened = (
            " (validity score high enough to skip screening)" if stage != first_stage(labelling) else ""
        )
        typer.echo(
            f"{stage}{unscreened}: {report.items:,} tasks offered, {report.pushed:,} imported, "
            f"{report.already_there:,} already there; {report.tasks_in_project:,} tasks in the project"
        )


@annotate_app.command()
def promote(items: ItemsArgument, out: OutOption = DEFAULT_OUT, config: ConfigOption = None) -> None:
    """Push to resolution the items that screening accepted, by the votes last collected into OUT."""
    from .client import LabelStudioClient
    from .operations import promote as promote_items

    with one_line_errors(), LabelStudioClient(load_settings()) as client:
        report = promote_items(client, items, out / "votes.parquet", _config(config))
    typer.echo(
        f"{report['screened_valid']:,} items screened valid, {report['pushed']:,} newly pushed to "
        "resolution; "
        f"{report['tasks']:,} tasks in the resolution project"
    )


@annotate_app.command()
def users(
    role: Annotated[str, typer.Option("--role", help="screener or resolver: an account is never both.")],
    count: Annotated[int, typer.Option("--count", help="How many new accounts to create.")] = 0,
    email: Annotated[
        list[str] | None, typer.Option("--email", help="Give this account (made if missing) the role.")
    ] = None,
) -> None:
    """Create annotator accounts of a role, or give existing ones a role; prints their logins."""
    from .accounts import check_count, create_accounts, enrol
    from .client import LabelStudioClient
    from .roster import accounts_file

    with one_line_errors():
        if not count and not email:
            raise UserError("say how many accounts to create (--count N) or which to enrol (--email ...)")
        check_count(count)
        settings = load_settings()
        with LabelStudioClient(settings) as client:
            accounts = create_accounts(client, role, count) if count else []
            accounts += [enrol(client, address, role) for address in email or []]
    typer.echo(f"Log in at {settings.url}{LOGIN_PATH} with ({role}s):")
    for account in accounts:
        typer.echo(f"  {account.email}  {account.password or '(their own password)'}")
    typer.echo(f"(also saved to {accounts_file(settings)}, readable only by you)")


@annotate_app.command()
def collect(out: OutOption = DEFAULT_OUT, config: ConfigOption = None) -> None:
    """Export both stages' votes into OUT, refuse the votes the roles forbid, and close every task whose
    outcome is decided."""
    from knowref60k.core.io import refuse_file_as_folder

    from .client import LabelStudioClient
    from .collect import collect as collect_votes

    with one_line_errors():
        refuse_file_as_folder(out)  # before the settings and the export, which can take minutes
        with LabelStudioClient(load_settings()) as client:
            report = collect_votes(client, out, _config(config))  # OUT is made once votes come
    _print_collect(report)
    typer.echo(f"Votes in {(out / 'votes.parquet').resolve()}")


def _print_collect(report: dict[str, Any]) -> None:
    typer.echo(
        f"{report['votes']:,} votes {report['votes_by_stage']} ({report['new_votes']:,} new, "
        f"{report['updated_votes']:,} updated) from {report['annotations']:,} annotations; "
        f"{report['duplicate_annotations']:,} repeated by the same person, {report['skipped']:,} skipped, "
        f"{report['without_choice']:,} without a choice"
    )
    closed = {stage: changes for stage, changes in report["closed_tasks"].items() if any(changes.values())}
    if closed:
        typer.echo(f"tasks closed / reopened: {closed}")
    for line in [*report["webhook_changes"], *report["refused_lines"]]:
        typer.echo(line, err=True)
    if report["refused_votes"]:
        typer.echo(f"refused votes (also in refused-votes.jsonl): {report['refused_votes']}", err=True)
    for email, paused in report["paused_accounts"].items():
        typer.echo(
            f"PAUSED {email} since {paused['since']}: {paused['why']}; its votes are set aside "
            f"(knowref60k annotate resume {email})",
            err=True,
        )
    if report["simulated_votes"]:
        typer.echo(f"NOTE: {report['simulated_votes']:,} of these votes are simulated")
    for stage, projects in report["projects_gone"].items():
        typer.echo(
            f"WARNING: {stage} projects {projects} are gone; the votes seen in them still count", err=True
        )
    for stage, projects in report["lookalike_projects"].items():
        typer.echo(
            f"WARNING: projects {projects} look like the {stage} project but are not the pipeline's", err=True
        )
    if report["differences"]:
        typer.echo(f"Label Studio differs from the pipeline's records: {report['differences']}", err=True)


@annotate_app.command()
def pause(email: Annotated[str, typer.Argument(help="The account's email.")]) -> None:
    """Pause an account by hand: its votes are set aside and it is served nothing until it is resumed."""
    from .client import LabelStudioClient
    from .pauses import Pauses

    with one_line_errors(), LabelStudioClient(load_settings()) as client:
        user_id = client.user_id(email)
        paused = Pauses(client.settings).pause(email, user_id, "paused by the lead")
        client.set_paused([user_id], True)
    typer.echo(f"{email} {'paused' if paused else 'was already paused'}; its votes are set aside")


@annotate_app.command()
def resume(email: Annotated[str, typer.Argument(help="The account's email.")]) -> None:
    """Resume a paused account: its votes count again, it is served tasks again, and only the control
    votes it casts from now on count towards pausing it again."""
    from .client import LabelStudioClient
    from .pauses import Pauses

    with one_line_errors(), LabelStudioClient(load_settings()) as client:
        found = Pauses(client.settings).resume(email)
        if found is None:
            raise UserError(f"{email} is not paused")
        client.set_paused([found["user_id"]], False)
    typer.echo(f"{email} resumed: its votes count again at the next collect")


@annotate_app.command("forget-project")
def forget_project(stage: Annotated[str, typer.Argument(help="screening or resolution.")]) -> None:
    """Drop the record of the stage's project once it is gone from Label Studio, so that the next push
    makes a new one (the votes seen in it stay in the records and still count)."""
    from .client import LabelStudioClient

    with one_line_errors():
        if stage not in STAGES:
            raise UserError(f"no stage {stage!r}; the stages are {', '.join(STAGES)}")
        with LabelStudioClient(load_settings()) as client:
            if client.find_project(stage) is not None:
                raise UserError(
                    f"the {stage} project {client.title(stage)!r} is still there; nothing to forget"
                )
            dropped = client.records.forget_project(client.title(stage))
    typer.echo(f"forgot the {stage} project (id {dropped}); the next push makes a new one")


@annotate_app.command()
def status(
    out: OutOption = DEFAULT_OUT,
    config: Annotated[Path | None, config_option("labelling", "cost")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Where the labelling stands, by the last collect into OUT: items waiting, in progress and decided
    per stage, votes and person-time spent (beside the cost model's expectation) and still needed, and
    every annotator's votes, time, quality on controls and pause state."""
    from knowref60k.labelling.cost_model import load_cost_config

    from .status import read_status, render_status

    with one_line_errors():
        found = read_status(out, _config(config), load_cost_config(config))
    if as_json:
        typer.echo(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(render_status(found))


@annotate_app.command()
def examples(
    items: ItemsArgument,
    out: OutOption = DEFAULT_OUT,
    to: Annotated[
        Path | None, typer.Option("--to", help="Where to write (default: OUT/screening-examples.jsonl).")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Every decided screening task, by the votes last collected into OUT, as a judged example for the
    validity score (valid, or invalid with the screeners' reason), marked screening-derived: give the
    file to `tools/scorer/build.py --screening-examples`."""
    from knowref60k.core.io import read_rows, refuse_output_over_inputs
    from knowref60k.quality.screening_examples import ITEM_FIELDS, screening_examples, write_examples

    target = to or out / "screening-examples.jsonl"
    with one_line_errors():
        refuse_output_over_inputs(target, [*items, out / "votes.parquet"], "--to")
        rows = {
            row["candidate_id"]: row for path in items for row in read_rows(path, list(ITEM_FIELDS), "items")
        }
        votes = read_rows(out / "votes.parquet", VOTE_COLUMNS, "votes", optional=["simulated"])
        found, counts = screening_examples(votes, rows, _config(config))
        write_examples(found, target)
    typer.echo(f"{len(found):,} screening-derived examples {counts.to_dict()['examples']} -> {target}")
    if counts.left_out:
        typer.echo(f"left out: {counts.to_dict()['left_out']}")


@annotate_app.command()
def simulate(
    stage: Annotated[str, typer.Option(help=f"One of {', '.join(STAGES)}.")],
    annotators: Annotated[int, typer.Option(help="Simulated annotators (distinct accounts).")] = 5,
    accuracy: Annotated[float, typer.Option(help="Chance each answer is the right one.")] = 0.9,
    seed: Annotated[int, typer.Option(help="Seed of truths and errors.")] = 0,
    clickers: Annotated[int, typer.Option(help="Of the annotators, how many answer at random.")] = 0,
    config: ConfigOption = None,
) -> None:
    """FOR DEMOS AND TESTS ONLY: simulated accounts take tasks from the stage's labelling stream and vote
    through the API (screeners call every item valid unless they err, resolvers name a seeded coin's
    person unless they err; the demo gives both the gold set's answers)."""
    from .client import LabelStudioClient
    from .operations import simulate as run

    with one_line_errors():
        if stage not in STAGES:
            raise UserError(f"--stage must be one of {', '.join(STAGES)}, not {stage!r}")
        with LabelStudioClient(load_settings()) as client:
            work = run(client, stage, annotators, accuracy, _config(config), seed=seed, clickers=clickers)
    typer.echo(f"{stage}: {work.total:,} simulated votes ({annotators} annotators, accuracy {accuracy})")


labelstudio_app = typer.Typer(
    help="The local Label Studio server and its vote receiver.", no_args_is_help=True, rich_markup_mode=None
)


@labelstudio_app.command("setup")
def setup_environment(
    environment: Annotated[
        Path | None,
        typer.Option(help="Folder of the environment (default: .venv-labelstudio in the home folder)."),
    ] = None,
    compile_modules: Annotated[
        bool, typer.Option("--compile/--no-compile", help="Byte-compile it now rather than on first start.")
    ] = True,
    migrate: Annotated[
        bool,
        typer.Option(
            "--migrate/--no-migrate",
            help="Apply the migrations new SQLite data folders start from now rather than on first start.",
        ),
    ] = True,
) -> None:
    """Make Label Studio's own Python environment from the hashed lock shipped with the package (uv when
    it is installed, else pip), and its migrated database that new SQLite data folders start from; a second
    run with the same lock installs nothing."""
    from .environment import default_environment, make_environment
    from .migrated import FAILURES, migrated_database
    from .server import START_TIMEOUT

    folder = environment or default_environment()
    with one_line_errors():
        made = make_environment(folder, compile_modules)
        try:
            migrated = migrated_database(folder / "bin" / "label-studio", START_TIMEOUT) if migrate else None
        except FAILURES as error:
            raise UserError(f"{folder}: Label Studio's migrations failed: {error}") from None
    typer.echo(f"Label Studio's environment {'made' if made else 'already made'} in {folder}")
    if migrated:
        typer.echo(f"the database new SQLite data folders start from: {migrated}")


@contextlib.contextmanager
def server_errors() -> Iterator[None]:
    """A server command's frame: Ctrl-C and SIGTERM stop what it started on the way out; a server that
    cannot start (a RuntimeError naming why), like a user's mistake, ends it with one line."""
    with stopping_what_it_starts(), one_line_errors():
        try:
            yield
        except RuntimeError as error:
            raise UserError(str(error)) from None


DemoOption = Annotated[bool, typer.Option("--demo", help="The demo's own Label Studio (`make demo`).")]


def _local_settings(demo: bool, create: bool = False) -> Settings:
    """The local Label Studio's settings, or (`demo`) the demo's own."""
    settings = load_settings(create=create)
    return demo_settings(settings) if demo else settings


server_app = typer.Typer(
    help="start | stop | status [--demo]: the local Label Studio (data in .labelstudio/, logins in .env, "
    "both in the home folder).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@server_app.command("start")
def server_start(demo: DemoOption = False) -> None:
    """Start the local Label Studio unless it runs (its logins written to .env when missing)."""
    from .server import Server

    with server_errors():
        server = Server(_local_settings(demo, create=True))
        typer.echo(server.start())
    typer.echo(f"Open {server.settings.url} and log in as {server.settings.username} (password in .env)")


@server_app.command("stop")
def server_stop(demo: DemoOption = False) -> None:
    """Stop the local Label Studio, and its vote receiver."""
    from .server import Server

    with server_errors():
        typer.echo(Server(_local_settings(demo)).stop())


@server_app.command("status")
def server_status(demo: DemoOption = False) -> None:
    """Whether the local Label Studio answers."""
    from .server import Server

    with server_errors():
        server = Server(_local_settings(demo))
        typer.echo(f"{server.settings.url}: {'up' if server.healthy() else 'down'}")


@labelstudio_app.command("check")
def check() -> None:
    """Whether what the pipeline assumes of Label Studio's internals holds for the installed one (seconds)."""
    from .server import check_contract

    with server_errors():
        code = check_contract()
    raise typer.Exit(code)


receiver_app = typer.Typer(
    help="start [--items DIR] | stop | status [--demo]: the vote receiver that settles each vote as it "
    "arrives.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@receiver_app.command("start")
def receiver_start(
    items: Annotated[
        Path, typer.Option("--items", help="Folder of the *.items.parquet whose items it may promote.")
    ] = Path("output/run/items"),
    config: ConfigOption = None,
) -> None:
    """Start the vote receiver of the local Label Studio, or restart it with another config or folder."""
    from .receiver import ReceiverProcess

    with server_errors():
        process = ReceiverProcess(load_settings(create=True))
        typer.echo(process.start(_config(config), [items]))


@receiver_app.command("stop")
def receiver_stop(demo: DemoOption = False) -> None:
    """Stop the vote receiver."""
    from .receiver import ReceiverProcess

    with server_errors():
        typer.echo(ReceiverProcess(_local_settings(demo)).stop())


@receiver_app.command("status")
def receiver_status(demo: DemoOption = False) -> None:
    """Whether the vote receiver answers, and what it has settled."""
    from .receiver import ReceiverProcess
    from .settings import receiver_url

    with server_errors():
        process = ReceiverProcess(_local_settings(demo))
        health = process.health()
    typer.echo(f"{receiver_url(process.settings)}: {'up ' + str(health) if health else 'down'}")


@receiver_app.command("serve", hidden=True)
def receiver_serve(
    config_file: Annotated[Path, typer.Argument(help="The JSON its start wrote: config and item folders.")],
) -> None:
    """The receiver in the foreground, until SIGTERM: the process `receiver start` spawns."""
    from .receiver import serve

    with stopping_what_it_starts():
        serve(config_file)


labelstudio_app.add_typer(server_app, name="server")
labelstudio_app.add_typer(receiver_app, name="receiver")


def add_commands(app: typer.Typer) -> None:
    """The Label Studio side's commands in `knowref60k` (the `knowref60k.commands` entry point)."""
    app.add_typer(annotate_app, name="annotate")
    app.add_typer(labelstudio_app, name="labelstudio")
