"""`knowref60k extract` and `knowref60k funnel`: candidates from dumps, and the funnel of a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from knowref60k.cli.common import (
    ConfigOption,
    ModelOption,
    advance,
    console,
    fail,
    progress_bar,
    user_errors,
)
from knowref60k.core.config import (
    InputFormat,
    PersonDetection,
    load_config,
)
from knowref60k.core.console import render_funnel
from knowref60k.core.errors import UserError


def extract(
    inputs: Annotated[
        list[Path],
        typer.Argument(metavar="DUMP", help="Dumps: .zst/.gz/.bz2/.xz or plain NDJSON or text."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for candidates, stats and quarantine files.")],
    config: ConfigOption = None,
    model: ModelOption = None,
    workers: Annotated[
        int, typer.Option(help="Worker processes for the spaCy work (at most the CPU cores).")
    ] = 2,
    input_format: Annotated[InputFormat, typer.Option(help="text: one document per line.")] = "auto",
    max_connectives: Annotated[int | None, typer.Option(help="Connectives allowed after collapsing.")] = None,
    person_detection: Annotated[
        PersonDetection | None, typer.Option(help="Which signals say a name is a person.")
    ] = None,
) -> None:
    """Extract candidate sentences into one Parquet file per input, with stats and a quarantine file."""
    from knowref60k.core.io import output_folder
    from knowref60k.core.parallel import worker_count
    from knowref60k.core.stats import merge_stats
    from knowref60k.extract.extractor import Extractor, check_distinct_outputs
    from knowref60k.ingest.readers import check_input

    with user_errors():
        workers = worker_count(workers)
        check_distinct_outputs(inputs)
        for path in inputs:  # before any progress bar is drawn
            check_input(path)
        output_folder(out)
        settings = load_config(
            config, model=model, max_connectives=max_connectives, person_detection=person_detection
        )
        stats_files = []
        with Extractor(settings, workers=workers) as extractor, progress_bar() as progress:
            for path in inputs:
                task = progress.add_task(path.name, total=path.stat().st_size)
                report = extractor.extract_file(path, out, input_format, advance(progress, task))
                progress.update(task, completed=progress.tasks[task].total or 0)
                state = "skipped: already done" if report.skipped else f"{report.seconds:.1f} s"
                console.print(f"{path.name}: {report.rows:,} candidates, {state} -> {report.rows_path}")
                stats_files.append(report.report_path)
    console.print(render_funnel(merge_stats(stats_files), funnel_title(stats_files)))
    console.print(f"Outputs in {out.resolve()}")


def funnel_title(stats_files: list[Path]) -> str:
    from knowref60k.core.stats import person_detection_of

    return f"Funnel over {len(stats_files)} file(s), person detection: {person_detection_of(stats_files)}"


def funnel(out: Annotated[Path, typer.Argument(help="An extraction output folder.")]) -> None:
    """Print the merged funnel of every stats file in an output folder."""
    from knowref60k.core.stats import merge_stats

    stats_files = sorted(out.glob("*.stats.json"))
    if not stats_files:
        raise fail(UserError(f"no *.stats.json in {out}"))
    with user_errors():
        total, title = merge_stats(stats_files), funnel_title(stats_files)
    console.print(render_funnel(total, title))
