"""The problems a model is scored on, in WinoGrande's form: a sentence with a blank `_` where the pronoun
stood, two options, and the index of the right one. From a release (the renamed sentence and its two
names) or from a known benchmark of `../shared/data/benchmarks` (WSC-273, WinoGrande dev, DPR test)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.overlap.audit import marked_release_row
from knowref60k.overlap.benchmarks import BenchmarkItem, read_set
from knowref60k.overlap.index import MarkedItem
from knowref60k.release.load import load_release, read_manifest
from knowref60k.release.winogrande_form import (
    BLANK,
    partial_contexts,
    rest_after_blank,
    scorable,
    to_winogrande,
)

BENCHMARKS = ("wsc273", "winogrande-dev", "dpr-test")


@dataclass(frozen=True)
class Problem:
    item_id: str
    sentence: str  # with one BLANK where the pronoun stood
    options: tuple[str, str]
    answer: int  # 0 or 1
    strength: int | None = None  # annotators agreeing (a release's 4 or 5)
    overlap: str | None = None  # "bm25 > 0" or "bm25 = 0" (a release with overlap scores)

    def partial(self, option: int) -> str:
        """The sentence up to the blank, filled with an option (as the release's lm-eval task does)."""
        return partial_contexts(self.sentence, self.options)[option]

    def rest(self) -> str:
        return rest_after_blank(self.sentence)

    def filled(self, option: int) -> str:
        return self.sentence.replace(BLANK, self.options[option], 1)


def release_problem(row: dict[str, Any]) -> Problem:
    """A release row as a problem, blanked as the release's lm-eval task blanks it."""
    item = to_winogrande(row)
    overlap = None
    if row.get("overlap_bm25") is not None:
        overlap = "bm25 > 0" if row["overlap_bm25"] > 0 else "bm25 = 0"
    options = (item["option1"], item["option2"])
    return Problem(
        item["id"], item["sentence"], options, int(item["answer"]) - 1, item["annotation_strength"], overlap
    )


def release_rows(path: Path, split: str) -> list[dict[str, Any]]:
    read_manifest(path)  # a clear error for a folder that is not a release
    return [row for row in load_release(path, split).to_pylist() if scorable(row)]


def release_problems(path: Path, split: str) -> list[Problem]:
    return [release_problem(row) for row in release_rows(path, split)]


def benchmark_problem(item: BenchmarkItem) -> Problem:
    if item.answer is None:
        raise UserError(f"{item.benchmark}: item {item.item_id} has no answer")
    return Problem(item.item_id, item.sentence, (item.option1, item.option2), item.answer)


def load_problems(
    target: str, split: str, benchmarks_root: Path | None, overlap_index: Path | None = None
) -> tuple[str, list[Problem]]:
    """What to score: a release folder's split, or a benchmark by name. Returns its kind and problems;
    with an overlap index, each problem's overlap subset is its score against that index (else a
    release's own audit columns give it). The benchmarks folder is read only for a benchmark or an index."""
    if target in BENCHMARKS:
        items = read_set(_named(benchmarks_root, target), target)
        problems, marked = [benchmark_problem(item) for item in items], [item.marked() for item in items]
    else:
        path = Path(target)
        if not path.exists():
            raise UserError(f"{target}: neither a release folder nor a benchmark ({', '.join(BENCHMARKS)})")
        rows = release_rows(path, split)
        if not rows:
            raise UserError(f"{target}: the release has no items in its {split} split")
        problems, marked = [release_problem(row) for row in rows], [marked_release_row(row) for row in rows]
    if overlap_index is not None:
        problems = with_overlap(
            problems, marked, overlap_index, _named(benchmarks_root, "the overlap subsets")
        )
    return ("benchmark" if target in BENCHMARKS else "release"), problems


def _named(benchmarks_root: Path | None, needed_for: str) -> Path:
    if benchmarks_root is None:
        raise UserError(f"{needed_for} needs the folder of the known benchmarks (--benchmarks)")
    return benchmarks_root


def with_overlap(
    problems: Sequence[Problem], marked: Sequence[MarkedItem], index: Path, benchmarks_root: Path
) -> list[Problem]:
    """Each problem's overlap subset by its BM25 score against an overlap index (`overlap index`)."""
    from knowref60k.overlap.audit import OverlapAudit

    columns = OverlapAudit.load(index, benchmarks_root).columns(marked)
    return [
        replace(problem, overlap="bm25 > 0" if column["overlap_bm25"] > 0 else "bm25 = 0")
        for problem, column in zip(problems, columns, strict=True)
    ]


def demonstrations(pool: Sequence[Problem], problem: Problem, shots: int, seed: int) -> list[Problem]:
    """`shots` solved problems from the pool (the release's train split), drawn at random per seed and
    problem, never the problem itself."""
    import random

    candidates = [p for p in pool if p.item_id != problem.item_id]
    if shots > len(candidates):
        raise UserError(f"{shots} demonstrations asked, the train split has {len(candidates)}")
    return random.Random(f"{seed}:{problem.item_id}").sample(candidates, shots)
