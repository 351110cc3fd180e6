"""The flows' commands in `knowref60k` (the `knowref60k.commands` entry point): `run`, `demo`, `serve` and
`flow ...`, each running a Prefect flow. Prefect is imported only when one of them runs: each command
imports its flow's module in its body, after Prefect's defaults are set, so that every other command of
`knowref60k` starts without it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

import typer

from knowref60k.cli.common import (
    DEFAULT_BENCHMARKS,
    BenchmarksOption,
    ExtractConfigOption,
    LabellingConfigOption,
    config_option,
    stopping_what_it_starts,
    user_errors,
)
from knowref60k.core.config import InputFormat
from knowref60k.core.paths import home

RunConfigOption = Annotated[
    Path | None, config_option("extract", "prepare", "labelling", "cost", "labelstudio")
]
ReleaseConfigOption = Annotated[Path | None, config_option("labelling", "cost")]
WorkersOption = Annotated[int, typer.Option(help="Worker processes (at most the CPU cores).")]
DumpsArgument = Annotated[list[Path], typer.Argument(metavar="DUMP", help="Dump files.")]


def prefect_defaults() -> dict[str, str]:
    """What the flows run Prefect with unless told otherwise (`make run` sets the same): its home in the
    user's home folder (`knowref60k --home`, else the working folder), not `~/.prefect`, and no usage data
    sent, by the server or the client."""
    prefect_home = home() / ".prefect"
    prefect_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }


@contextlib.contextmanager
def flow_command() -> Iterator[None]:
    """The frame of every flow command: Prefect's defaults set before its first import (what the user set
    wins), Ctrl-C and SIGTERM stop what the flow started (Prefect's temporary server, a Label Studio) on
    the way out, and a user error is one line, exit code 2."""
    with stopping_what_it_starts(), user_errors():
        for variable, value in prefect_defaults().items():
            os.environ.setdefault(variable, value)
        yield


def workers_checked(workers: int) -> int:
    """`--workers` as the extraction takes it: at least 1, capped at the CPU cores (a one-line error)."""
    from knowref60k.core.parallel import worker_count

    return worker_count(workers)


def run(
    inputs: DumpsArgument,
    out: Annotated[Path, typer.Option("--out", help="Output folder: candidates/, items/, the index.")],
    config: RunConfigOption = None,
    workers: WorkersOption = 2,
    input_format: Annotated[InputFormat, typer.Option(help="text: one document per line.")] = "auto",
    label_studio: Annotated[
        bool, typer.Option("--label-studio", help="Then push the items into a local Label Studio it starts.")
    ] = False,
    screeners: Annotated[int, typer.Option(help="Screener accounts to have (--label-studio).")] = 3,
    resolvers: Annotated[int, typer.Option(help="Resolver accounts to have (--label-studio).")] = 5,
) -> None:
    """Extract, de-duplicate and perturb dumps (--label-studio: and push them) under Prefect."""
    with flow_command():
        workers = workers_checked(workers)
        from knowref60k_flows.pipeline import main

        code = main(
            [str(path) for path in inputs],
            str(out),
            config,
            workers,
            input_format,
            (screeners, resolvers) if label_studio else None,
        )
    raise typer.Exit(code)


def demo(
    dumps: Annotated[
        list[Path],
        typer.Argument(
            metavar="DUMP",
            help="Dumps to run on (`make demo` gives ../shared/data/reddit/RC_sample_1M.zst and "
            "RC_sample_B.zst, the ones the gold set judged).",
        ),
    ],
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default: output/demo in the home folder).")
    ] = None,
    screener_accuracy: Annotated[float, typer.Option(help="Chance a simulated screener is right.")] = 0.9,
    resolver_accuracy: Annotated[float, typer.Option(help="Simulated resolvers' mean accuracy.")] = 0.9,
    config: RunConfigOption = None,
    seed: Annotated[int, typer.Option(help="Seed of the simulated annotators' answers.")] = 0,
) -> None:
    """The whole loop with simulated annotators, ending in a release."""
    with flow_command():
        from knowref60k_flows.demo import main

        code = main(
            [str(dump) for dump in dumps],
            str(out or home() / "output" / "demo"),
            screener_accuracy,
            resolver_accuracy,
            config,
            seed,
        )
    raise typer.Exit(code)


def serve(
    dumps: Annotated[
        Path | None, typer.Option(help="Folder watched for new dumps (default: dumps/ in the home folder).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default: output/run in the home folder).")
    ] = None,
) -> None:
    """A local Prefect server (127.0.0.1:4200) with scheduled deployments watching a folder of dumps."""
    with flow_command():
        from knowref60k_flows.serve import main

        code = main(dumps or home() / "dumps", out or home() / "output" / "run")
    raise typer.Exit(code)


annotate_app = typer.Typer(
    help="push | sync | collect: the labelling loop under Prefect.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
VotesOutOption = Annotated[Path, typer.Option("--out", help="Folder of the collected votes.")]


@annotate_app.command("push")
def annotate_push(
    items: Annotated[list[Path], typer.Argument(metavar="ITEMS", help="*.items.parquet files.")],
    config: LabellingConfigOption = None,
) -> None:
    """New items into the first stage."""
    with flow_command():
        from knowref60k_flows.annotate import push_main

        code = push_main([str(path) for path in items], config)
    raise typer.Exit(code)


@annotate_app.command("sync")
def annotate_sync(
    items: Annotated[Path, typer.Option("--items", help="Folder of *.items.parquet.")] = Path(
        "output/run/items"
    ),
    out: VotesOutOption = Path("output/annotation"),
    config: LabellingConfigOption = None,
) -> None:
    """Collect both stages, close decided tasks, push what screening accepted to resolution."""
    with flow_command():
        from knowref60k_flows.annotate import sync_main

        code = sync_main(items, out, config)
    raise typer.Exit(code)


@annotate_app.command("collect")
def annotate_collect(
    out: VotesOutOption = Path("output/annotation"), config: LabellingConfigOption = None
) -> None:
    """Collect both stages' votes, decided tasks closed."""
    with flow_command():
        from knowref60k_flows.annotate import collect_main

        code = collect_main(out, config)
    raise typer.Exit(code)


def release(
    version: Annotated[str, typer.Option("--version", help="Release version, a plain name like 2026.11.")],
    run_dir: Annotated[
        Path, typer.Option("--run", help="Pipeline folder with candidates/ and items/.")
    ] = Path("output/run"),
    votes_dir: Annotated[Path, typer.Option(help="Folder the votes are collected into.")] = Path(
        "output/annotation"
    ),
    out: Annotated[Path, typer.Option(help="Folder of releases.")] = Path("data/releases"),
    config: ReleaseConfigOption = None,
    overlap_index: Annotated[Path | None, typer.Option(help="Folder of an overlap index (optional).")] = None,
    benchmarks: BenchmarksOption = DEFAULT_BENCHMARKS,
    debias: Annotated[
        Literal["ngrams", "encoder"] | None, typer.Option(help="Add AFLite's debiased config.")
    ] = None,
) -> None:
    """Collect the votes and cut a release under Prefect."""
    with flow_command():
        from knowref60k_flows.release import main

        code = main(version, run_dir, votes_dir, out, config, overlap_index, benchmarks, debias)
    raise typer.Exit(code)


def overlap(
    corpus: Annotated[list[Path], typer.Argument(metavar="CORPUS", help="Corpus files to index.")],
    index: Annotated[Path, typer.Option(help="Folder of the overlap index.")] = Path("output/overlap"),
    benchmarks_out: Annotated[
        Path | None, typer.Option(help="Also score WSC, DPR and WinoGrande here (needs --benchmarks).")
    ] = None,
    benchmarks: BenchmarksOption = DEFAULT_BENCHMARKS,
) -> None:
    """Index corpora for the overlap audit under Prefect."""
    with flow_command():
        from knowref60k_flows.overlap import main

        code = main([str(path) for path in corpus], index, benchmarks_out, benchmarks)
    raise typer.Exit(code)


def scale(
    dump: Annotated[Path, typer.Argument(metavar="DUMP", help="The dump to shard.")],
    shards: Annotated[int, typer.Option(help="Shards to cut the dump into.")] = 4,
    out: Annotated[Path, typer.Option(help="Output folder: shards/ and candidates/.")] = Path("output/scale"),
    workers: WorkersOption = 2,
    address: Annotated[
        str | None, typer.Option(help="An existing Dask scheduler, e.g. tcp://10.0.0.5:8786.")
    ] = None,
    config: ExtractConfigOption = None,
) -> None:
    """Shard a dump and extract it on Dask."""
    with flow_command():
        workers = workers_checked(workers)
        from knowref60k_flows.scale import main

        code = main(dump, shards, out, workers, address, config)
    raise typer.Exit(code)


def add_commands(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("demo")(demo)
    app.command("serve")(serve)
    steps = typer.Typer(
        help="One step of the pipeline as a Prefect flow.", no_args_is_help=True, rich_markup_mode=None
    )
    steps.add_typer(annotate_app, name="annotate")
    steps.command("release")(release)
    steps.command("overlap")(overlap)
    steps.command("scale")(scale)
    app.add_typer(steps, name="flow")
