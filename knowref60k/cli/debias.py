"""`knowref60k debias`: AFLite over a release or a WinoGrande file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.progress import (
    TaskID,
)
from rich.table import Table

from knowref60k.cli.common import (
    console,
    progress_bar,
    user_errors,
)


def debias(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="RELEASE_OR_FILE", help="A release folder, or a WinoGrande train_*.tsv or *.jsonl."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for aflite.parquet, report.json, report.png.")],
    features: Annotated[
        Literal["ngrams", "encoder"],
        typer.Option(help="Hashed word n-grams, or all-MiniLM-L6-v2 embeddings (optional extra)."),
    ] = "ngrams",
    m: Annotated[
        int | None, typer.Option(help="Training instances per model (default: N/5, at most 10,000).")
    ] = None,
    n: Annotated[int, typer.Option(help="Models per round.")] = 64,
    k: Annotated[
        int | None, typer.Option(help="Most instances removed per round (default: N/100, at most 500).")
    ] = None,
    tau: Annotated[float, typer.Option(help="Least predictability score to be removed.")] = 0.75,
    seed: Annotated[int, typer.Option(help="Seed of the random partitions.")] = 0,
) -> None:
    """AFLite (WinoGrande's adversarial filtering): score every problem by how well linear models predict
    it, remove the most predictable, and show the evidence against random and PMI filtering."""
    from knowref60k.debias.report import debias as run_debias

    parameters = {"m": m, "n": n, "k": k, "tau": tau, "seed": seed}
    with progress_bar(in_bytes=False) as progress:
        tasks: dict[str, TaskID] = {}

        def report_progress(phase: str, done: int, total: int | None) -> None:
            if phase not in tasks:
                label = "encoding sentences" if phase == "encode" else "AFLite: models trained"
                tasks[phase] = progress.add_task(label, total=total)
            progress.advance(tasks[phase], done)

        with user_errors():
            report = run_debias(source, out, parameters, features, report_progress)
    table = Table(title=f"AFLite on {report['instances']:,} problems ({features}): {report['kept']:,} kept")
    for column in ("subset", "size", "KL along PC1", "probe accuracy"):
        table.add_column(column)
    for name, found in report["evidence"].items():
        table.add_row(name, f"{found['size']:,}", f"{found['kl_pc1']:.4f}", f"{found['probe_accuracy']:.1%}")
    console.print(table)
    console.print(f"parameters {report['parameters']}; {len(report['rounds'])} round(s); outputs in {out}")
