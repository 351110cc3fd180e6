"""The overlap audit of a set of items: BM25 overlap with an indexed corpus (the paper's method) and
13-gram contamination with the known benchmarks, as columns, a report and a figure's curves."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from knowref60k.core.errors import UserError
from knowref60k.core.records import Span
from knowref60k.extract.nlp import Pipeline, resolve_model_name
from knowref60k.overlap.benchmarks import BenchmarkItem, read_benchmarks
from knowref60k.overlap.contamination import ContaminationIndex, benchmark_sentences
from knowref60k.overlap.corpus import indexed_corpus
from knowref60k.overlap.index import (
    SLOP,
    ItemParser,
    MarkedItem,
    Overlap,
    OverlapIndex,
    overlap_curve,
    overlap_report,
    score_items,
)


def marked_release_row(row: Mapping[str, Any]) -> MarkedItem:
    """A released item (renamed sentence, names' and pronoun's offsets) as a marked item."""
    return MarkedItem(
        row["sentence"],
        Span(row["pronoun_start"], row["pronoun_end"]),
        (Span(row["name1_start"], row["name1_end"]), Span(row["name2_start"], row["name2_end"])),
    )


def marked_items_row(row: Mapping[str, Any]) -> MarkedItem:
    """A row of an *.items.parquet file (before labelling) as a marked item of its renamed sentence."""
    return MarkedItem(
        row["perturbed_sentence"],
        Span(row["perturbed_pronoun_start"], row["perturbed_pronoun_end"]),
        (Span(row["name1_start"], row["name1_end"]), Span(row["name2_start"], row["name2_end"])),
    )


@dataclass
class BenchmarkScores:
    name: str
    items: list[BenchmarkItem]
    overlaps: list[Overlap]
    seconds: float

    @property
    def scores(self) -> list[float]:
        return [overlap.score for overlap in self.overlaps]


class OverlapAudit:
    """The index, the parser, the known benchmarks and their 13-grams, loaded once for many items."""

    def __init__(self, index_dir: Path, benchmarks_dir: Path, pipeline: Pipeline) -> None:
        self.index_dir = index_dir
        self.index = OverlapIndex(index_dir)
        self.benchmarks = read_benchmarks(benchmarks_dir)
        self.contamination = ContaminationIndex(benchmark_sentences(self.benchmarks))
        self.parser = ItemParser(pipeline)

    @classmethod
    def load(cls, index_dir: Path, benchmarks_dir: Path, model: str | None = None) -> OverlapAudit:
        """With the spaCy pipeline `model` (default: the first installed default pipeline)."""
        return cls(index_dir, benchmarks_dir, Pipeline(resolve_model_name(model)))

    def columns(self, items: Sequence[MarkedItem]) -> list[dict[str, Any]]:
        """The overlap columns of every item, in order."""
        return [
            {
                "overlap_bm25": overlap.score,
                "overlap_hit": overlap.hit,
                "benchmark_overlap": self.contamination.match(item.sentence),
            }
            for item, overlap in zip(items, score_items(items, self.index, self.parser), strict=True)
        ]

    def score_benchmarks(self, names: Sequence[str]) -> list[BenchmarkScores]:
        unknown = [name for name in names if name not in self.benchmarks]
        if unknown:
            raise UserError(
                f"unknown benchmark set(s) {', '.join(unknown)}; known: {', '.join(self.benchmarks)}"
            )
        results = []
        for name in names:
            items = self.benchmarks[name]
            started = time.perf_counter()
            overlaps = list(score_items([item.marked() for item in items], self.index, self.parser))
            results.append(BenchmarkScores(name, items, overlaps, time.perf_counter() - started))
        return results

    def describe(self) -> dict[str, Any]:
        """What the scores were measured against, for cards and manifests."""
        return {
            "corpus": indexed_corpus(self.index_dir),
            "sentences_indexed": len(self.index),
            "query": f"Phrase(PredC PredQ, slop {SLOP}, in order) AND any content word",
            "scoring": "BM25, k1 = 1.2, b = 0.75 (tantivy)",
        }


def _shares(scores: Sequence[float]) -> dict[str, Any]:
    """Items, the paper's shares above 0 / 25 / 35, and the curve over the cut-offs 0-50."""
    return {"items": len(scores), **overlap_report(scores), "curve": overlap_curve(scores)}


def overlap_summary(groups: Mapping[str, Sequence[Mapping[str, Any]]], audit: OverlapAudit) -> dict[str, Any]:
    """Per group of rows with overlap columns: the paper's shares, the curve, contamination counts."""
    summary: dict[str, Any] = {"against": audit.describe(), "groups": {}}
    for name, rows in groups.items():
        scores = [row["overlap_bm25"] for row in rows]
        flagged = Counter(row["benchmark_overlap"] for row in rows if row["benchmark_overlap"])
        summary["groups"][name] = {
            **_shares(scores),
            "benchmark_overlap": dict(sorted(flagged.items())),
        }
    return summary


def write_benchmark_scores(
    results: Sequence[BenchmarkScores], audit: OverlapAudit, out: Path
) -> dict[str, Any]:
    """<set>.parquet with every item's parse, score and hit; report.json; overlap.png (one curve per set)."""
    import pyarrow.parquet as pq

    from knowref60k.core.io import atomic_path, write_json_atomic
    from knowref60k.overlap.figures import render_overlap_png

    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"against": audit.describe(), "sets": {}}
    for result in results:
        rows = [
            _benchmark_row(item, overlap) for item, overlap in zip(result.items, result.overlaps, strict=True)
        ]
        with atomic_path(out / f"{result.name}.parquet") as temporary:
            pq.write_table(pa.Table.from_pylist(rows), temporary, compression="zstd")
        report["sets"][result.name] = {
            "parsed": sum(overlap.query is not None for overlap in result.overlaps),
            "seconds": round(result.seconds, 3),
            "items_per_second": round(len(rows) / result.seconds, 1) if result.seconds else None,
            **_shares(result.scores),
        }
    write_json_atomic(out / "report.json", report)
    curves = {name: entry["curve"] for name, entry in report["sets"].items()}
    render_overlap_png(curves, out / "overlap.png", "Overlap of benchmark items with the indexed corpus")
    return report


def _benchmark_row(item: BenchmarkItem, overlap: Overlap) -> dict[str, Any]:
    query = overlap.query
    return {
        "id": item.item_id,
        "sentence": item.sentence,
        "option1": item.option1,
        "option2": item.option2,
        "e1": query.e1 if query else None,
        "pred_c": query.pred_c if query else None,
        "connective": query.connective if query else None,
        "e2": query.e2 if query else None,
        "pred_q": query.pred_q if query else None,
        "overlap_bm25": overlap.score,
        "overlap_hit": overlap.hit,
    }
