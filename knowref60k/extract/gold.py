"""The Reddit gold set: the pool of sentences it judges, and how extraction is scored against it."""

from __future__ import annotations

import collections
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
from spacy.tokens import Doc

from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.core.paths import DATA_DIR
from knowref60k.extract.evaluation import extract_sentences
from knowref60k.extract.extractor import Extractor
from knowref60k.extract.persons import is_sentence_initial
from knowref60k.extract.pipeline import STAGES, StageClass
from knowref60k.extract.records import NounPhrase, Target
from knowref60k.extract.stages.antecedents import AntecedentFilter, looks_like_name

POOL_FIELDS = (
    "candidate_id",
    "source_file",
    "line_number",
    "comment_id",
    "subreddit",
    "sentence",
    "connective",
    "connective_start",
    "connective_end",
    "pronoun",
    "pronoun_start",
    "pronoun_end",
)


class AnyTwoNames(AntecedentFilter):
    """The pool's antecedent rule: at least two runs of capitalised words before the connective, whatever
    they name. A word capitalised by its position counts only if it may be a name (tagged a proper noun,
    a first name, or no common word). Person rules choose among such runs, so what they emit is in the pool.
    """

    def noun_phrases(self, doc: Doc, target: Target) -> list[NounPhrase] | str:
        runs: list[NounPhrase] = []
        in_run = False
        for i in range(target.connective.start):
            if not looks_like_name(doc[i].text):
                in_run = False
            elif not in_run and self._may_be_name(doc, i):
                runs.append(NounPhrase(i, i + 1, i))
                in_run = True
        return runs if len(runs) >= 2 else "fewer_than_two_capitalised_runs"

    def _may_be_name(self, doc: Doc, i: int) -> bool:
        text = doc[i].text
        return (
            not is_sentence_initial(doc, i)
            or doc[i].tag_ in ("NNP", "NNPS")
            or self.lexicon.is_first_name(text)
            or not self.lexicon.is_common_word(text)
        )

    def needs_entities(self, doc: Doc, phrases: Sequence[NounPhrase]) -> bool:
        return False

    def choose(
        self, doc: Doc, target: Target, phrases: Sequence[NounPhrase]
    ) -> tuple[NounPhrase, NounPhrase] | str:
        return phrases[0], phrases[1]


POOL_STAGES: tuple[StageClass, ...] = tuple(
    AnyTwoNames if stage is AntecedentFilter else stage for stage in STAGES
)


def build_pool(inputs: Sequence[Path], workers: int = 2, model: str | None = None) -> list[dict[str, Any]]:
    """Every pool sentence of the inputs, in input order."""
    rows: list[dict[str, Any]] = []
    config = ExtractConfig(model=model)
    with (
        tempfile.TemporaryDirectory() as scratch,
        Extractor(config, workers, stages=POOL_STAGES) as extractor,
    ):
        for path in inputs:
            report = extractor.extract_file(path, Path(scratch))
            rows.extend(
                {field: row[field] for field in POOL_FIELDS}
                for row in pq.read_table(report.rows_path).to_pylist()
            )
    return rows


GOLD_DIR = DATA_DIR / "eval"
GOLD_FILE = GOLD_DIR / "reddit_gold.jsonl"
SPLITS = ("tune", "heldout")
LABELS = ("valid", "invalid")
REASONS = (
    "not_a_sentence",
    "same_person",
    "work_title",
    "place",
    "organisation",
    "group",
    "other_non_person",
    "fewer_than_two_people",
    "more_than_two_people",
    "pronoun_refers_to_neither",
)


@dataclass(frozen=True)
class GoldItem:
    candidate_id: str
    sentence: str
    split: str
    label: str
    reason: str | None
    antecedents: tuple[tuple[int, int], tuple[int, int]] | None


def load_gold(path: Path = GOLD_FILE) -> list[GoldItem]:
    """The judged items; a malformed line is a UserError naming the file, line and problem."""
    if not path.is_file():
        raise UserError(f"gold set not found: {path}")
    items = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            items.append(_gold_item(orjson.loads(line)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise UserError(f"{path}, line {number}: {error}") from None
    return items


def _gold_item(record: dict[str, Any]) -> GoldItem:
    sentence, label, reason = record["sentence"], record["label"], record["reason"]
    if record["split"] not in SPLITS or label not in LABELS:
        raise ValueError(f"split must be one of {SPLITS} and label one of {LABELS}")
    spans = (record["antecedent1"], record["antecedent2"])
    if label == "valid":
        if reason is not None or None in spans:
            raise ValueError("a valid item has two antecedent spans and no reason")
        (s1, e1), (s2, e2) = spans
        if not 0 <= s1 < e1 <= s2 < e2 <= record["connective_start"]:
            raise ValueError(f"antecedent spans {spans} are not in order before the connective")
        antecedents = ((s1, e1), (s2, e2))
    else:
        if reason not in REASONS or spans != (None, None):
            raise ValueError(f"an invalid item has one reason of {REASONS} and no spans, got {reason!r}")
        antecedents = None
    return GoldItem(record["candidate_id"], sentence, record["split"], label, reason, antecedents)


def gold_metadata(path: Path = GOLD_FILE) -> dict[str, Any]:
    meta: dict[str, Any] = orjson.loads(path.with_name(path.stem + ".meta.json").read_bytes())
    return meta


def judge(item: GoldItem, row: dict[str, Any]) -> str | None:
    """None when the candidate is correct, else the error's reason."""
    if item.antecedents is None:
        return item.reason
    spans = (
        (row["antecedent1_start"], row["antecedent1_end"]),
        (row["antecedent2_start"], row["antecedent2_end"]),
    )
    if spans == item.antecedents:
        return None
    overlapping = all(
        any(start < gold_end and gold_start < end for gold_start, gold_end in item.antecedents)
        for start, end in spans
    )
    return "broken_span" if overlapping else "wrong_person"


@dataclass
class GoldScore:
    """Precision and recall of extraction on one part of the gold set."""

    items: int = 0
    valid: int = 0
    extracted: int = 0
    correct: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, item: GoldItem, row: dict[str, Any] | None) -> None:
        """One gold item, and the candidate extraction made of it, if any."""
        self.items += 1
        self.valid += item.label == "valid"
        if row is not None:
            self.add_candidate(item, row)

    def add_candidate(self, item: GoldItem, row: dict[str, Any]) -> None:
        self.extracted += 1
        error = judge(item, row)
        if error is None:
            self.correct += 1
        else:
            self.errors[error] += 1

    @property
    def precision(self) -> float:
        return self.correct / self.extracted if self.extracted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.valid if self.valid else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "valid": self.valid,
            "extracted": self.extracted,
            "correct": self.correct,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "errors": dict(self.errors.most_common()),
        }


def score_gold(
    items: Sequence[GoldItem], config: ExtractConfig, model_name: str, comments: int
) -> dict[str, Any]:
    """Extraction on the gold sentences (one per line): precision and recall per part, and the yield of
    correct candidates per million comments of the source the pool came from."""
    result = extract_sentences("gold", [item.sentence for item in items], config, model_name)
    rows = {row["line_number"]: row for row in result.rows}
    scores = {split: GoldScore() for split in ("all", *SPLITS)}
    for line, item in enumerate(items, start=1):
        for split in ("all", item.split):
            scores[split].add(item, rows.get(line))
    correct = scores["all"].correct
    return {
        "parts": {split: score.to_dict() for split, score in scores.items()},
        "source_comments": comments,
        "valid_per_million_comments": round(correct * 1_000_000 / comments, 1),
    }


def score_candidates(
    rows: Sequence[dict[str, Any]], items: Sequence[GoldItem], comments: int
) -> dict[str, Any]:
    """Candidates of a real run over the gold set's source file, judged by the gold set: how many are
    correct, the errors by reason, and how many the gold set has not judged (must be none)."""
    by_id = {item.candidate_id: item for item in items}
    score = GoldScore()
    unjudged = 0
    for row in rows:
        item = by_id.get(row["candidate_id"])
        if item is None:
            unjudged += 1
        else:
            score.add_candidate(item, row)
    return {
        "candidates": len(rows),
        "unjudged": unjudged,
        "correct": score.correct,
        "precision": round(score.precision, 4),
        "valid_per_million_comments": round(score.correct * 1_000_000 / comments, 1),
        "errors": dict(score.errors.most_common()),
    }
