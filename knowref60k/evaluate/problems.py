"""The problems a model is scored on, in WinoGrande's form: a sentence with a blank `_` where the pronoun
stood, two options, and the index of the right one. From a release (the renamed sentence and its two
names) or from a known benchmark of `../shared/data/benchmarks` (WSC-273, WinoGrande dev, DPR test)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.overlap.benchmarks import read_answered
from knowref60k.release.load import load_release, read_manifest
from knowref60k.release.winogrande_form import BLANK, scorable, to_winogrande

BENCHMARKS = ("wsc273", "winogrande-dev", "dpr-test")


@dataclass(frozen=True)
class Problem:
    item_id: str
    sentence: str  # with one BLANK where the pronoun stood
    options: tuple[str, str]
    answer: int  # 0 or 1
    strength: int | None = None  # annotators agreeing (a release's 4 or 5)
    overlap: str | None = None  # "bm25 > 0" or "bm25 = 0" (a release with overlap scores)

    @property
    def blank(self) -> int:
        return self.sentence.index(BLANK)

    def partial(self, option: int) -> str:
        """The sentence up to the blank, filled with an option (WinoGrande's partial scoring context)."""
        return self.sentence[: self.blank] + self.options[option]

    def rest(self) -> str:
        """What follows the blank, the part whose likelihood is compared."""
        return self.sentence[self.blank + 1 :].strip()

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


def release_problems(path: Path, split: str) -> list[Problem]:
    read_manifest(path)  # a clear error for a folder that is not a release
    rows = load_release(path, split).to_pylist()
    return [release_problem(row) for row in rows if scorable(row)]


def benchmark_problems(name: str, root: Path) -> list[Problem]:
    """A known benchmark's items with their answers."""
    if name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    return [
        Problem(item.item_id, item.sentence, (item.option1, item.option2), answer)
        for item, answer in read_answered(root, name)
    ]


def load_problems(target: str, split: str, benchmarks_root: Path) -> tuple[str, list[Problem]]:
    """What to score: a release folder's split, or a benchmark by name. Returns its kind and problems."""
    if target in BENCHMARKS:
        return "benchmark", benchmark_problems(target, benchmarks_root)
    path = Path(target)
    if not path.exists():
        raise UserError(f"{target}: neither a release folder nor a benchmark ({', '.join(BENCHMARKS)})")
    problems = release_problems(path, split)
    if not problems:
        raise UserError(f"{target}: the release has no items in its {split} split")
    return "release", problems


def demonstrations(pool: Sequence[Problem], problem: Problem, shots: int, seed: int) -> list[Problem]:
    """`shots` solved problems from the pool (the release's train split), drawn at random per seed and
    problem, never the problem itself."""
    import random

    candidates = [p for p in pool if p.item_id != problem.item_id]
    if shots > len(candidates):
        raise UserError(f"{shots} demonstrations asked, the train split has {len(candidates)}")
    return random.Random(f"{seed}:{problem.item_id}").sample(candidates, shots)
