"""`knowref60k overlap ...`: the overlap audit (index a corpus, query it, score items and benchmarks)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from knowref60k.cli.common import (
    DEFAULT_BENCHMARKS,
    BenchmarksOption,
    ModelOption,
    advance,
    console,
    named_benchmarks,
    progress_bar,
    user_errors,
)
from knowref60k.core.config import (
    InputFormat,
    load_config,
)
from knowref60k.core.errors import UserError

overlap_app = typer.Typer(
    help="Overlap of items with a pretraining corpus (BM25, the paper's method).", rich_markup_mode=None
)
IndexOption = Annotated[Path, typer.Option("--index", help="Folder of the overlap index.")]


def overlap_audit(index: Path, benchmarks: Path | None, model: str | None) -> Any:
    from knowref60k.overlap.audit import OverlapAudit

    folder = named_benchmarks(benchmarks, "the 13-gram check against known benchmarks")
    return OverlapAudit.load(index, folder, load_config(None, model=model).model)


@overlap_app.command("index")
def overlap_index(
    corpus: Annotated[
        list[Path],
        typer.Argument(metavar="CORPUS", help="Text (one document per line), JSONL or Reddit dumps."),
    ],
    index: IndexOption,
    model: ModelOption = None,
    workers: Annotated[
        int, typer.Option(help="Worker processes for cleaning and splitting (at most the CPU cores).")
    ] = 2,
    input_format: Annotated[InputFormat, typer.Option(help="text: one document per line.")] = "auto",
) -> None:
    """Index every sentence of the corpus files; an interrupted run resumes, finished files are skipped."""
    from knowref60k.core.io import output_folder
    from knowref60k.core.parallel import worker_count
    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.ingest.readers import check_input
    from knowref60k.overlap.corpus import CorpusIndexer

    table = Table(title="Overlap index")
    for column in ("file", "lines", "sentences", "indexed", "dropped / quarantined", "state"):
        table.add_column(column, justify="left" if column in ("file", "state") else "right")
    with user_errors():
        workers = worker_count(workers)
        output_folder(index, "--index")
        for path in corpus:
            check_input(path)  # every file, before hours of indexing the first ones
        model_name = resolve_model_name(load_config(None, model=model).model)
        with CorpusIndexer(index, model_name, workers) as indexer, progress_bar() as progress:
            for path in corpus:
                task = progress.add_task(path.name, total=path.stat().st_size)
                started = time.perf_counter()
                report = indexer.add_file(path, input_format, advance(progress, task))
                progress.update(task, completed=progress.tasks[task].total or 0)
                seconds = time.perf_counter() - started
                dropped = sum(sum(stage.dropped.values()) for stage in report.stats.stages.values())
                state = "already indexed" if report.skipped else f"{seconds:.1f} s"
                table.add_row(
                    path.name,
                    f"{report.lines:,}",
                    f"{report.sentences:,}",
                    f"{report.indexed:,}",
                    f"{dropped:,} / {report.stats.quarantined:,}",
                    state,
                )
    console.print(table)
    console.print(f"Index in {index.resolve()} (progress and counts: indexed.json; bad lines: quarantine/)")


@overlap_app.command("query")
def overlap_query(
    sentence: Annotated[str, typer.Argument(help="One item sentence.")],
    index: IndexOption,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines: text, score.")] = False,
    limit: Annotated[int, typer.Option(help="Hits to show.")] = 10,
    model: ModelOption = None,
) -> None:
    """Parse one sentence the way items are parsed, print the query and the best hits."""
    from knowref60k.extract.nlp import Pipeline, resolve_model_name
    from knowref60k.overlap.index import ItemParser, OverlapIndex

    with user_errors():
        overlap_index = OverlapIndex(index)
        pipeline = Pipeline(resolve_model_name(load_config(None, model=model).model))
        item = ItemParser(pipeline).parse([sentence])[0]
        if item is None:
            raise UserError("no connective followed by he/she/him/her/his/hers in that sentence")
        hits = overlap_index.search(item, limit)
    if as_json:
        for score, text in hits:
            sys.stdout.write(orjson.dumps({"text": text, "score": round(score, 4)}).decode() + "\n")
        return
    console.print(
        f"E1={item.e1!r} PredC={item.pred_c!r} connective={item.connective!r} E2={item.e2!r} "
        f"pronoun={item.pronoun!r} PredQ={item.pred_q!r}"
    )
    console.print(f"query: Phrase({' '.join(item.phrase())}, slop 10) AND any of {item.content_words()}")
    for score, text in hits:
        console.print(f"{score:7.2f}  {text}")


@overlap_app.command("score")
def overlap_score(
    items: Annotated[Path, typer.Argument(help="An *.items.parquet file.")],
    index: IndexOption,
    out: Annotated[Path, typer.Option(help="Items with overlap_bm25, overlap_hit, benchmark_overlap.")],
    benchmarks: BenchmarksOption = DEFAULT_BENCHMARKS,
    model: ModelOption = None,
) -> None:
    """Score every item's renamed sentence and flag 13-gram overlap with known benchmarks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from knowref60k.core.io import ITEM_SCHEMA, atomic_path, read_rows
    from knowref60k.overlap.audit import marked_items_row
    from knowref60k.overlap.fields import OVERLAP_FIELDS
    from knowref60k.overlap.index import overlap_report

    with user_errors():
        rows = list(read_rows(items, ITEM_SCHEMA.names, "items"))
        audit = overlap_audit(index, benchmarks, model)
        with console.status(f"scoring {len(rows):,} items"):
            columns = audit.columns([marked_items_row(row) for row in rows])
    for row, row_columns in zip(rows, columns, strict=True):
        row.update(row_columns)
    schema = pa.schema([*ITEM_SCHEMA, *(f for f, _ in OVERLAP_FIELDS)])
    with user_errors(), atomic_path(out) as temporary:  # a full disk or a folder at `out`: one line
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), temporary, compression="zstd")
    report = overlap_report([row["overlap_bm25"] for row in rows])
    flagged = sum(row["benchmark_overlap"] is not None for row in rows)
    console.print(f"{len(rows):,} items: {report}; sharing a 13-gram with a benchmark: {flagged}")
    console.print(f"Scored items in {out.resolve()}")


@overlap_app.command("benchmarks")
def overlap_benchmarks(
    index: IndexOption,
    out: Annotated[Path, typer.Option(help="Folder for <set>.parquet, report.json and overlap.png.")],
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="wsc273, dpr-test, winogrande-dev or dpr-train (repeat)."),
    ] = None,
    benchmarks: BenchmarksOption = DEFAULT_BENCHMARKS,
    model: ModelOption = None,
) -> None:
    """Score the known benchmarks' items against the index: the paper's report and overlap figure."""
    from knowref60k.overlap.audit import write_benchmark_scores
    from knowref60k.overlap.benchmarks import TEST_SETS

    with user_errors():
        audit = overlap_audit(index, benchmarks, model)
        with console.status("scoring benchmark items"):
            results = audit.score_benchmarks(sets or TEST_SETS)
    report = write_benchmark_scores(results, audit, out)
    table = Table(title=f"Overlap with {report['against']['sentences_indexed']:,} indexed sentences")
    for column in ("set", "items", "parsed", "items/s", "> 0", "> 25", "> 35"):
        table.add_column(column, justify="left" if column == "set" else "right")
    for name, entry in report["sets"].items():
        table.add_row(
            name,
            f"{entry['items']:,}",
            f"{entry['parsed']:,}",
            f"{entry['items_per_second']:,}",
            *(f"{entry[f'share_above_{c}']:.1%}" for c in (0, 25, 35)),
        )
    console.print(table)
    console.print(f"Scores, report.json and overlap.png in {out.resolve()}")
