"""Votes from a Label Studio export: one per (stage, item, annotator), mapped back to answer codes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import pyarrow as pa

from knowref60k.labelling.decisions import CHOICES
from knowref60k.labelling.separation import MALFORMED_RESULT, NOT_A_CHOICE, NOT_ITS_AUTHOR

from .labelstudio_app.labelstudio_contract import ANNOTATION_WRITER

# How much of a refused result `refused-votes.jsonl` keeps.
RESULT_SHOWN = 200

VOTE_SCHEMA = pa.schema(
    [
        pa.field("stage", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("task_id", pa.int64(), nullable=False),
        pa.field("annotation_id", pa.int64(), nullable=False),
        pa.field("annotator_id", pa.int64(), nullable=False),
        pa.field("choice", pa.string(), nullable=False),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("updated_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("lead_time", pa.float64()),
        pa.field("simulated", pa.bool_(), nullable=False),
    ]
)


@dataclass
class VoteCounts:
    annotations: int = 0
    votes: int = 0
    duplicate_annotations: int = 0
    skipped: int = 0
    without_choice: int = 0

    def add(self, other: VoteCounts) -> None:
        for name, value in dataclasses.asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def choice_of(
    annotation: Mapping[str, Any], answer_identity: Mapping[str, str], stage: str
) -> tuple[str | None, str | None]:
    """The stage's answer code, else why there is none: (None, None) for a result without a choice (a
    person's empty submit, counted), (None, reason) for a result that is malformed or names no choice of
    the stage (refused: any account can post such a result through the API)."""
    result = annotation.get("result") or []
    if not isinstance(result, list):
        return None, MALFORMED_RESULT
    for region in result:
        if not isinstance(region, Mapping):
            return None, MALFORMED_RESULT
        value = region.get("value")
        chosen = value.get("choices") if isinstance(value, Mapping) else None
        if region.get("type") != "choices" or chosen == []:
            continue
        if not isinstance(chosen, list) or len(chosen) != 1 or not isinstance(chosen[0], str):
            return None, MALFORMED_RESULT
        code = answer_identity.get(chosen[0], chosen[0])
        return (code, None) if code in CHOICES[stage] else (None, NOT_A_CHOICE)
    return None, None


def annotator_of(annotation: Mapping[str, Any]) -> int:
    completed_by = annotation["completed_by"]
    return int(completed_by["id"] if isinstance(completed_by, dict) else completed_by)


def account_id(value: Any) -> int | None:
    """An account as Label Studio gives it (an id, or an object with one); None for anything else."""
    found = value.get("id") if isinstance(value, Mapping) else value
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def writer_of(annotation: Mapping[str, Any]) -> int | None:
    """The account Label Studio recorded as the annotation's last writer (`updated_by`), which no request
    can name: it is the account that made the request; None when none is recorded."""
    return account_id(annotation.get(ANNOTATION_WRITER))


@dataclass
class ExportVotes:
    """The votes of an export, its counts, and the annotations refused with their reason (each as a vote
    whose choice is the result as given, shortened)."""

    votes: list[dict[str, Any]]
    counts: VoteCounts
    refused: list[tuple[dict[str, Any], str]]


def votes_from_export(
    tasks: Iterable[Mapping[str, Any]], stage: str, simulated_users: frozenset[int]
) -> ExportVotes:
    """Every task's latest annotation per annotator. Skipped annotations (Label Studio's
    `was_cancelled`), annotations without a choice, and earlier repeats by the same person are
    counted, not voted; a result that is no choice of the stage is refused."""
    counts, refused = VoteCounts(), []
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for task in tasks:
        identity = task["data"].get("answer_identity")
        for annotation in task.get("annotations") or []:
            counts.annotations += 1
            choice, refusal = choice_of(annotation, identity if isinstance(identity, Mapping) else {}, stage)
            writer, skipped = writer_of(annotation), bool(annotation.get("was_cancelled"))
            # Another account's change, a skip included (it would silence the vote); a skip Label Studio
            # stored without a writer is the author's own.
            if writer != annotator_of(annotation) and not (skipped and writer is None):
                vote = _vote(stage, task, annotation, choice or _shown(annotation), simulated_users)
                refused.append(({**vote, "written_by": writer}, NOT_ITS_AUTHOR))
                continue
            if skipped:  # the annotator pressed Skip
                counts.skipped += 1
                continue
            if refusal is not None:
                refused.append((_vote(stage, task, annotation, _shown(annotation), simulated_users), refusal))
                continue
            if choice is None:
                counts.without_choice += 1
                continue
            vote = _vote(stage, task, annotation, choice, simulated_users)
            key = (vote["item_id"], vote["annotator_id"])
            if key in latest:
                counts.duplicate_annotations += 1
                if (vote["updated_at"], vote["annotation_id"]) < (
                    latest[key]["updated_at"],
                    latest[key]["annotation_id"],
                ):
                    continue
            latest[key] = vote
    votes = sorted(latest.values(), key=lambda v: (v["item_id"], v["annotator_id"]))
    counts.votes = len(votes)
    return ExportVotes(votes, counts, refused)


def _shown(annotation: Mapping[str, Any]) -> str:
    """A refused annotation's result as given, shortened, in place of its choice."""
    return orjson.dumps(annotation.get("result"), default=str).decode()[:RESULT_SHOWN]


def _vote(
    stage: str, task: Mapping[str, Any], annotation: Mapping[str, Any], choice: str, simulated: frozenset[int]
) -> dict[str, Any]:
    annotator = annotator_of(annotation)
    return {
        "stage": stage,
        "item_id": task["data"]["item_id"],
        "task_id": int(task["id"]),
        "annotation_id": int(annotation["id"]),
        "annotator_id": annotator,
        "choice": choice,
        "created_at": _time(annotation["created_at"]),
        "updated_at": _time(annotation["updated_at"]),
        "lead_time": annotation.get("lead_time"),
        "simulated": annotator in simulated,
    }


def refused_vote(
    stage: str, task_id: int, item_id: str, annotation: Mapping[str, Any], simulated: frozenset[int]
) -> dict[str, Any]:
    """An annotation refused before it is read as a vote (its task or its version is not trusted), as a
    vote whose choice is its result as given; built from whatever the annotation holds."""
    author, writer = account_id(annotation.get("completed_by")), writer_of(annotation)
    return {
        "stage": stage,
        "item_id": item_id,
        "task_id": task_id,
        "annotation_id": annotation.get("id"),
        "annotator_id": author,
        "choice": _shown(annotation),
        "created_at": str(annotation.get("created_at")),
        "updated_at": str(annotation.get("updated_at")),
        "lead_time": annotation.get("lead_time"),
        "simulated": author is not None and author in simulated,
        "written_by": writer,
    }
