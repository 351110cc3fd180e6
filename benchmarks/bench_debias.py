"""AFLite benchmark on WinoGrande's train_l.tsv (10,234 problems, 20,468 filled sentences): the time to
featurise and to run AFLite with each kind of features, and the evidence each gives.

    .venv/bin/python benchmarks/bench_debias.py [--input FILE] [--features ngrams encoder]

Baseline measured in the same run: reading the file and building the hashed n-grams, which every
AFLite run needs (the PMI baseline uses them). Results go to output/bench-debias/<features>/
(aflite.parquet, report.json, report.png); the figures are copied to docs/aflite-<features>.png, which
the README shows.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from rich.table import Table

from knowref60k.core.console import make_console
from knowref60k.debias.features import ngram_features
from knowref60k.debias.problems import read_problems
from knowref60k.debias.report import debias

REPO = Path(__file__).resolve().parent.parent
DEFAULT_INPUT = REPO.parent / "shared" / "data" / "benchmarks" / "winogrande" / "train_l.tsv"
OUT = REPO / "output" / "bench-debias"
console = make_console()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--features", nargs="+", default=["ngrams", "encoder"], choices=["ngrams", "encoder"])
    args = parser.parse_args(argv)
    if not args.input.is_file():
        console.print(f"error: {args.input} not found (../shared/data/benchmarks/winogrande)")
        return 2
    started = time.perf_counter()
    problems = read_problems(args.input)
    ngram_features(problems)
    baseline = time.perf_counter() - started
    console.print(f"baseline: reading {len(problems):,} problems and their n-grams: {baseline:.1f} s")
    table = Table(title=f"AFLite on {args.input.name}")
    for column in (
        "features",
        "featurise s",
        "AFLite s",
        "x baseline",
        "kept",
        "rounds",
        "probe: full / aflite / random / pmi",
        "KL PC1: full / aflite / random / pmi",
    ):
        table.add_column(column)
    for name in args.features:
        started = time.perf_counter()
        report = debias(args.input, OUT / name, {}, name)
        total = time.perf_counter() - started
        shutil.copyfile(OUT / name / "report.png", REPO / "docs" / f"aflite-{name}.png")
        found = report["evidence"]
        subsets = ("full", "aflite", "random", "pmi")
        table.add_row(
            name,
            f"{report['seconds']['features']:.1f}",
            f"{report['seconds']['aflite']:.1f}",
            f"{total / baseline:.0f}",
            f"{report['kept']:,} of {report['instances']:,}",
            str(len(report["rounds"])),
            " / ".join(f"{found[s]['probe_accuracy']:.1%}" for s in subsets),
            " / ".join(f"{found[s]['kl_pc1']:.4f}" for s in subsets),
        )
    console.print(table)
    console.print(f"outputs in {OUT}; figures in docs/aflite-<features>.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
