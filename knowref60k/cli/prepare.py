"""`knowref60k prepare`: items from candidates (de-duplication, the validity threshold, perturbation)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from knowref60k.cli.common import (
    LevelsConfigOption,
    console,
    progress_bar,
    user_errors,
)
from knowref60k.core.console import render_funnel


def prepare(
    candidates: Annotated[
        list[Path], typer.Argument(metavar="CANDIDATES", help="*.candidates.parquet files from `extract`.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for the items and their reports.")],
    index: Annotated[
        Path | None,
        typer.Option(
            help="De-duplication index (SQLite) shared by every run; default: for held-back candidates the "
            "index they were held back against (their prepare report names it), else OUT/dedup-index.sqlite."
        ),
    ] = None,
    config: LevelsConfigOption = None,
    seed: Annotated[int | None, typer.Option(help="Global perturbation seed.")] = None,
    validity_threshold: Annotated[
        float | None,
        typer.Option(
            min=0,
            max=1,
            help="Set aside candidates scoring below this (default: [prepare] validity_threshold, else the "
            "level chosen by cost; 0 sends every candidate, e.g. of a *.below-threshold.parquet file).",
        ),
    ] = None,
) -> None:
    """De-duplicate candidates against every dump seen so far, then give both antecedents new names."""
    from knowref60k.core.io import output_folder
    from knowref60k.prepare.preparer import Preparer, candidate_files, prepare_stats
    from knowref60k.settings.effective import RunConfig

    with user_errors():
        files = candidate_files(candidates)
        if len(files) < len(candidates):
            console.print(
                f"{len(candidates) - len(files)} repeated candidates file(s) left out: each is prepared once"
            )
        # Every level resolved here, at the command's entry: prepare gets a concrete threshold.
        settings = RunConfig.load(config).prepare_given(seed=seed, validity_threshold=validity_threshold)
        index_path = index or held_back_against(files) or out / "dedup-index.sqlite"
        output_folder(out)
        total = prepare_stats()
        with Preparer(settings, index_path) as preparer, progress_bar(in_bytes=False) as progress:
            task = progress.add_task("prepare", total=len(files))
            for path in files:
                report = preparer.prepare_file(path, out)
                total.merge(report.stats)
                progress.advance(task)
                state = "skipped: already done" if report.skipped else f"{report.seconds:.1f} s"
                console.print(f"{path.name}: {report.rows:,} items, {state} -> {report.rows_path}")
    console.print(render_funnel(total, f"De-duplication and perturbation over {len(files)} file(s)"))
    console.print(f"Items in {out.resolve()}, index {index_path.resolve()}")
    console.print(held_back_text(total, settings.validity_threshold, out))


def held_back_text(stats: Any, threshold: float, out: Path) -> str:
    """How many candidates the threshold held back, where they are and how to send them after all."""
    from knowref60k.prepare.stages.threshold import HELD_BACK_SUFFIX, SEND_HELD_BACK, held_back

    return (
        f"{held_back(stats):,} candidates scored below the validity threshold {threshold:g}: kept in "
        f"{out.resolve()}/*{HELD_BACK_SUFFIX}; to label them too: `{SEND_HELD_BACK}`, then push its items"
    )


def held_back_against(files: list[Path]) -> Path | None:
    """The index that files of held-back candidates were held back against, as the prepare report beside
    each names it: sending them later must de-duplicate them against the run's items, not a new index.
    None unless every file is one and their reports name the same index."""
    from knowref60k.prepare.stages.threshold import HELD_BACK_SUFFIX

    named = set()
    for path in files:
        report = path.with_name(path.name.removesuffix(HELD_BACK_SUFFIX) + ".prepare.json")
        if not path.name.endswith(HELD_BACK_SUFFIX) or not report.is_file():
            return None
        named.add(orjson.loads(report.read_bytes()).get("index"))
    found = named.pop() if len(named) == 1 else None
    return Path(found) if isinstance(found, str) else None
