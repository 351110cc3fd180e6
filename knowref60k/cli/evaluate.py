"""`knowref60k evaluate`: a language model's accuracy on a release or a known benchmark, zero- and
few-shot, overall and by annotation strength and overlap subset (the `eval` extra: torch, transformers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from knowref60k.cli.common import DEFAULT_BENCHMARKS, console, progress_bar, user_errors
from knowref60k.core.errors import UserError


def shot_counts(text: str) -> list[int]:
    counts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in counts):
        raise UserError(f"--shots {text!r}: give whole numbers separated by commas, e.g. 0,1,4")
    return [int(part) for part in counts]


def evaluate_models(
    target: Annotated[
        str,
        typer.Argument(
            metavar="RELEASE_OR_BENCHMARK", help="A release folder, or wsc273, winogrande-dev, dpr-test."
        ),
    ],
    model: Annotated[
        str, typer.Option("--model", help="Hugging Face causal or masked LM: a path or a name.")
    ],
    split: Annotated[str, typer.Option(help="The release's split to score.")] = "test",
    shots: Annotated[
        str, typer.Option(help="Demonstrations from the release's train split, e.g. 0,1,4.")
    ] = "0",
    seeds: Annotated[int, typer.Option(help="Few-shot draws of demonstrations, each its own run.")] = 3,
    device: Annotated[str, typer.Option(help="cpu, or cuda where a GPU is.")] = "cpu",
    dtype: Annotated[str, typer.Option(help="float32, float16 or bfloat16.")] = "float32",
    batch_size: Annotated[int, typer.Option(help="Problems scored per forward pass.")] = 8,
    benchmarks: Annotated[
        Path | None, typer.Option(help="Folder of the known benchmarks, e.g. ../shared/data/benchmarks.")
    ] = DEFAULT_BENCHMARKS,
    overlap_index: Annotated[
        Path | None, typer.Option(help="Overlap index (`overlap index`) for the BM25 > 0 / = 0 subsets.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for evaluation.json.")] = Path("output/evaluate"),
) -> None:
    """Score a model on a release or a benchmark: accuracy with 95% bootstrap intervals, by subset."""
    from knowref60k.evaluate.problems import load_problems, release_problems
    from knowref60k.evaluate.report import evaluate_model
    from knowref60k.evaluate.scoring import load_scorer

    with user_errors():
        counts = shot_counts(shots)
        if seeds < 1:
            raise UserError(f"--seeds {seeds}: at least 1")
        kind, problems = load_problems(target, split, benchmarks, overlap_index)
        pool = release_problems(Path(target), "train") if kind == "release" and any(counts) else []
        if kind == "benchmark" and any(counts):
            raise UserError("few-shot demonstrations come from a release's train split: use --shots 0")
        scorer = load_scorer(model, device, dtype, batch_size)
        runs = sum(1 if count == 0 else seeds for count in counts)
        with progress_bar(in_bytes=False) as progress:
            task = progress.add_task(f"{target}: {len(problems):,} items", total=runs * len(problems))
            results = evaluate_model(scorer, problems, counts, seeds, pool, lambda: progress.advance(task))
        payload = {
            "target": target,
            "split": split if kind == "release" else None,
            "model": model,
            "method": scorer.method,
            "items": len(problems),
            "results": results,
        }
        out.mkdir(parents=True, exist_ok=True)
        (out / "evaluation.json").write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    console.print(results_table(payload))
    console.print(f"Details in {(out / 'evaluation.json').resolve()}")


def results_table(payload: dict[str, Any]) -> Table:
    table = Table(title=f"{payload['model']} on {payload['target']} ({payload['method']})")
    for column in ("shots", "subset", "items", "accuracy", "95% interval", "seeds: mean (min-max)"):
        table.add_column(column)
    for shots, result in payload["results"].items():
        spread = result["spread"]
        over_seeds = f"{spread['mean']} ({spread['min']}-{spread['max']})" if len(result["runs"]) > 1 else ""
        for subset, score in result["runs"][0].items():
            if subset in ("seed", "items"):
                continue
            interval = "-".join(str(v) for v in score["ci95"]) if score["ci95"] else ""
            table.add_row(
                shots,
                subset,
                str(score["items"]),
                str(score["accuracy"]),
                interval,
                over_seeds if subset == "all" else "",
            )
    return table
