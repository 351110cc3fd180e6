"""The Reddit gold set: judged sentences, and how extraction is scored against them. Loading and judging
need no spaCy pipeline; scoring extraction does (`score_gold`)."""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.core.io import read_report
from knowref60k.core.paths import DATA_DIR

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
    comment_id: str = ""
    subreddit: str | None = None
    # "gold" for the judged set; "screening" for an example made of screeners' answers
    # (knowref60k.quality.screening_examples), with its screening reason.
    origin: str = "gold"


def heldout_by_subreddit(subreddit: str | None, comment_id: str) -> bool:
    """The held-back part of items added with their `people` (a third of the subreddits, by a hash of the
    name, so a held-back subreddit is held back whole; a comment without one by its id). The first 944
    items are held back by content hash instead (`split` says which)."""
    key = subreddit.lower() if subreddit else comment_id
    return int(hashlib.sha256(f"knowref60k-gold\x1f{key}".encode()).hexdigest(), 16) % 3 == 0


def load_gold(path: Path = GOLD_FILE) -> list[GoldItem]:
    """The judged items; a malformed line is a UserError naming the file, line and problem."""
    return judged_items(path, "gold set", _gold_item)


def judged_items(path: Path, kind: str, item_of: Callable[[dict[str, Any]], GoldItem]) -> list[GoldItem]:
    """One item per JSON line of `path`; a missing file or a malformed line (one `item_of` refuses with a
    KeyError, TypeError or ValueError) is a UserError naming the file, line and problem."""
    if not path.is_file():
        raise UserError(f"{kind} not found: {path}")
    items = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            record = orjson.loads(line)
            if not isinstance(record, dict):
                raise ValueError(f"not a JSON object but {type(record).__name__}")
            items.append(item_of(record))
        except KeyError as error:
            raise UserError(f"{path}, line {number}: missing field {error}") from None
        except orjson.JSONDecodeError as error:
            raise UserError(f"{path}, line {number}: not JSON ({error})") from None
        except (TypeError, ValueError) as error:
            raise UserError(f"{path}, line {number}: {error}") from None
    return items


def in_order(spans: tuple[tuple[int, int], tuple[int, int]], end: int) -> bool:
    """Whether two antecedent spans are non-empty, apart and in order, both ending by `end`."""
    (s1, e1), (s2, e2) = spans
    return 0 <= s1 < e1 <= s2 < e2 <= end


def _span_of(record: dict[str, Any], name: str) -> tuple[int, int]:
    """The `[start, end]` character offsets of `record[name]`."""
    value = record[name]
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)):
        raise ValueError(f"{name} must be [start, end] character offsets, not {value!r}")
    return value[0], value[1]


def _check_offsets(record: dict[str, Any]) -> None:
    """The connective and then the pronoun lie inside the sentence, in that order."""
    names = ("connective_start", "connective_end", "pronoun_start", "pronoun_end")
    offsets = [record[name] for name in names]
    if not all(type(offset) is int for offset in offsets):
        raise ValueError(f"{', '.join(names)} must be whole numbers, not {offsets}")
    c1, c2, p1, p2 = offsets
    if not 0 <= c1 < c2 <= p1 < p2 <= len(record["sentence"]):
        raise ValueError(
            f"the connective ({c1}-{c2}) and then the pronoun ({p1}-{p2}) must lie inside the sentence "
            f"of {len(record['sentence'])} characters"
        )


def _gold_item(record: dict[str, Any]) -> GoldItem:
    sentence, label, reason = record["sentence"], record["label"], record["reason"]
    if record["split"] not in SPLITS or label not in LABELS:
        raise ValueError(f"split must be one of {SPLITS} and label one of {LABELS}")
    _check_offsets(record)
    spans = (record["antecedent1"], record["antecedent2"])
    if label == "valid":
        if reason is not None or None in spans:
            raise ValueError("a valid item has two antecedent spans and no reason")
        antecedents = (_span_of(record, "antecedent1"), _span_of(record, "antecedent2"))
        if not in_order(antecedents, record["connective_start"]):
            raise ValueError(f"antecedent spans {spans} are not in order before the connective")
    else:
        if reason not in REASONS or spans != (None, None):
            raise ValueError(f"an invalid item has one reason of {REASONS} and no spans, got {reason!r}")
        antecedents = None
    return GoldItem(
        record["candidate_id"],
        sentence,
        record["split"],
        label,
        reason,
        antecedents,
        record["comment_id"],
        record.get("subreddit"),
    )


def gold_metadata(path: Path = GOLD_FILE) -> dict[str, Any]:
    """The gold file's companion `NAME.meta.json`: how many comments its sentences were drawn from."""
    meta_path = path.with_name(path.stem + ".meta.json")
    kind = f"metadata of {path.name} (data/eval/README.md)"
    if not meta_path.is_file():
        raise UserError(f"{meta_path}: not found: the {kind} must lie beside it")
    meta = read_report(meta_path, kind, ["source_comments"])
    if type(meta["source_comments"]) is not int or meta["source_comments"] < 1:
        raise UserError(f'{meta_path}: "source_comments" must be a whole number above 0')
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
    # Valid items whose sentence the configuration's structure admits (shape, connectives, pronoun): the
    # items a person rule can find, so recall measures the person rule and not the structure.
    valid_in_reach: int = 0
    extracted: int = 0
    correct: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, item: GoldItem, row: dict[str, Any] | None, in_reach: bool = True) -> None:
        """One gold item, the candidate extraction made of it, if any, and whether its structure is one
        the configuration admits."""
        self.items += 1
        self.valid += item.label == "valid"
        self.valid_in_reach += item.label == "valid" and in_reach
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
        return self.correct / self.valid_in_reach if self.valid_in_reach else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "valid": self.valid,
            "valid_in_reach": self.valid_in_reach,
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
    correct candidates per million comments of the source the pool came from. Recall counts the valid
    items in reach of the configuration's structure: those its pool (the loose rule) admits."""
    from knowref60k.quality.evaluation import extract_sentences, stages_for
    from knowref60k.quality.pool import POOL_STAGES

    sentences = [item.sentence for item in items]
    result = extract_sentences("gold", sentences, config, model_name, stages_for(config))
    rows = {row["line_number"]: row for row in result.rows}
    pooled = extract_sentences("gold", sentences, config, model_name, POOL_STAGES).rows
    in_reach = {row["line_number"] for row in pooled}
    scores = {split: GoldScore() for split in ("all", *SPLITS)}
    for line, item in enumerate(items, start=1):
        for split in ("all", item.split):
            scores[split].add(item, rows.get(line), line in in_reach)
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
