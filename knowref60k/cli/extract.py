"""`knowref60k extract`: candidates from dumps, with the funnel of what each stage dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from knowref60k.cli.common import (
    ExtractConfigOption,
    ModelOption,
    advance,
    console,
    progress_bar,
    user_errors,
)
from knowref60k.cli.funnel import funnel_title
from knowref60k.core.config import (
    InputFormat,
    PersonDetection,
    load_config,
)
from knowref60k.core.console import render_funnel


def extract(
    inputs: Annotated[
        list[Path],
        typer.Argument(metavar="DUMP", help="Dumps: .zst/.gz/.bz2/.xz or plain NDJSON or text."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for candidates, stats and quarantine files.")],
    config: ExtractConfigOption = None,
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
