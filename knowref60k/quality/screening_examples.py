"""Screening answers as judged examples for the validity score. Every decided screening task is a
sentence with two candidate names that screeners called valid, or not with a reason (not a person,
same person, refers to someone else, broken). Each becomes one JSON line marked `"origin": "screening"`,
which the score's build (`tools/scorer/build.py --screening-examples`) takes beside the gold set with a
weight below the gold set's, since screeners, simulated or real, err."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.io import atomic_path
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import SCREENED_VALID, SCREENING, SCREENING_REASONS, decide_stage
from knowref60k.labelling.quality import is_control
from knowref60k.quality.gold import GoldItem, in_order, judged_items

ORIGIN = "screening"
# What an example keeps of its item: where it comes from, the sentence screeners saw, the spans they judged.
ITEM_FIELDS = (
    "candidate_id",
    "source_file",
    "line_number",
    "comment_id",
    "subreddit",
    "sentence",
    "connective_start",
    "connective_end",
    "antecedent1_start",
    "antecedent1_end",
    "antecedent2_start",
    "antecedent2_end",
    "pronoun_start",
    "pronoun_end",
)


@dataclass
class ExampleCounts:
    """What became of the screening decisions: examples, and what was left out by reason."""

    examples: Counter[str] = field(default_factory=Counter)
    left_out: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "examples": dict(sorted(self.examples.items())),
            "left_out": dict(sorted(self.left_out.items())),
        }


def screening_examples(
    votes: Iterable[Mapping[str, Any]],
    items: Mapping[str, Mapping[str, Any]],
    config: LabellingConfig,
) -> tuple[list[dict[str, Any]], ExampleCounts]:
    """One example per decided screening task, in item id order, by the labelling rule's decisions;
    control items, undecided tasks and items not in `items` are counted and left out."""
    counts = ExampleCounts()
    screening = [vote for vote in votes if vote["stage"] == SCREENING]
    scores = {item_id: item.get("validity_score") for item_id, item in items.items()}
    decisions = decide_stage(
        screening,
        SCREENING,
        config.rule(SCREENING),
        rules=config.screening_rules(scores),
    )
    found = []
    for item_id, decision in decisions.items():
        item = items.get(item_id)
        reason = _left_out(item_id, decision.decided, item)
        if reason:
            counts.left_out[reason] += 1
            continue
        assert item is not None
        valid = decision.status == SCREENED_VALID
        found.append(
            {
                **{name: item[name] for name in ITEM_FIELDS},
                "label": "valid" if valid else "invalid",
                "reason": None if valid else decision.label,
                "votes": len(decision.votes),
                "simulated": all(vote.get("simulated", False) for vote in decision.votes),
                "origin": ORIGIN,
            }
        )
        counts.examples["valid" if valid else str(decision.label)] += 1
    return found, counts


def _left_out(item_id: str, decided: bool, item: Mapping[str, Any] | None) -> str | None:
    if is_control(item_id):
        return "control_item"
    if not decided:
        return "undecided"
    return "not_in_the_items" if item is None else None


def write_examples(examples: list[dict[str, Any]], path: Path) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(b"".join(orjson.dumps(example) + b"\n" for example in examples))


def load_examples(path: Path) -> list[GoldItem]:
    """Screening-derived examples as tuning items of their origin; a malformed line is a UserError
    naming the file and line."""
    items = judged_items(path, "screening examples", _example_item)
    if not items:
        raise UserError(f"{path}: no screening examples in the file")
    return items


def _example_item(record: dict[str, Any]) -> GoldItem:
    if record["origin"] != ORIGIN:
        raise ValueError(f"origin must be {ORIGIN!r}, not {record['origin']!r}")
    for name in ("candidate_id", "sentence", "comment_id"):
        if not isinstance(record[name], str) or not record[name]:
            raise ValueError(f"{name} must be a non-empty string, not {record[name]!r}")
    if not isinstance(record.get("subreddit"), str | None):
        raise ValueError(f"subreddit must be a string, not {record['subreddit']!r}")
    valid = record["label"] == "valid"
    if not valid and (record["label"] != "invalid" or record["reason"] not in SCREENING_REASONS):
        raise ValueError(f"label {record['label']!r} with reason {record['reason']!r}")
    spans = (
        (int(record["antecedent1_start"]), int(record["antecedent1_end"])),
        (int(record["antecedent2_start"]), int(record["antecedent2_end"])),
    )
    if not in_order(spans, len(record["sentence"])):
        raise ValueError(f"antecedent spans {spans} are not in order inside the sentence")
    return GoldItem(
        record["candidate_id"],
        record["sentence"],
        "tune",
        record["label"],
        None if valid else record["reason"],
        spans if valid else None,
        record["comment_id"],
        record.get("subreddit"),
        origin=ORIGIN,
    )
