"""Where the labelling stands, from what the last collect wrote: per stage, the items waiting, in
progress and decided (and what was decided), the votes spent and the votes it will take to finish; per
annotator, their votes and quality."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import (
    KEPT,
    PENDING,
    RESOLUTION,
    SCREENED_OUT,
    SCREENING,
    Decision,
    decide_stage,
)
from knowref60k.labelling.quality import annotator_quality, is_control


def stage_status(
    tasks: Iterable[Mapping[str, Any]],
    votes: Iterable[Mapping[str, Any]],
    stage: str,
    config: LabellingConfig,
) -> dict[str, Any]:
    """The state of one stage's items (control tasks left out) and its votes."""
    tasks = list(tasks)
    items = sorted({t["item_id"] for t in tasks if t["stage"] == stage and not is_control(t["item_id"])})
    stage_votes = [v for v in votes if v["stage"] == stage]
    item_votes = [v for v in stage_votes if not is_control(v["item_id"])]
    careful = careful_items(tasks, stage)
    decisions = decide_stage(
        item_votes, stage, config.rule(stage), items, config.careful_rules(stage, careful)
    )
    decided = [d for d in decisions.values() if d.status != PENDING]
    cast = Counter(v["item_id"] for v in item_votes)
    spent = sum(len(d.votes) for d in decided)
    per_decided = spent / len(decided) if decided else None
    in_progress = [d for d in decisions.values() if d.status == PENDING and cast[d.item_id]]
    waiting = sum(1 for d in decisions.values() if d.status == PENDING and not cast[d.item_id])
    return {
        "items": len(items),
        "waiting": waiting,
        "in_progress": len(in_progress),
        "decided": len(decided),
        "outcomes": _outcomes(decided),
        "votes": len(item_votes),
        "late_votes": sum(config.late_votes(stage, d, d.item_id in careful) for d in decided),
        "control_votes": len(stage_votes) - len(item_votes),
        "votes_per_decided_item": round(per_decided, 2) if per_decided is not None else None,
        "votes_per_kept_item": _per_kept(len(stage_votes), decided, stage),
        "projected_votes_to_finish": (
            round(waiting * per_decided + sum(max(0.0, per_decided - cast[d.item_id]) for d in in_progress))
            if per_decided is not None
            else None
        ),
    }


def careful_items(tasks: Iterable[Mapping[str, Any]], stage: str) -> frozenset[str]:
    """The items of the stage's tasks that are screened by the careful rule (as their tasks say)."""
    return frozenset(t["item_id"] for t in tasks if t["stage"] == stage and t.get("careful"))


def _outcomes(decided: Iterable[Decision]) -> dict[str, int]:
    """Kept and rejected items by reason (screening: screened valid, or out by the reason given)."""
    return dict(
        sorted(
            Counter(
                f"{d.status}:{d.label}" if d.status == SCREENED_OUT else d.status for d in decided
            ).items()
        )
    )


def _per_kept(votes: int, decided: list[Decision], stage: str) -> float | None:
    kept = sum(1 for d in decided if d.status == (KEPT if stage == RESOLUTION else "screened_valid"))
    return round(votes / kept, 2) if kept else None


def status(
    tasks: list[Mapping[str, Any]],
    votes: list[Mapping[str, Any]],
    config: LabellingConfig,
    control_answers: Mapping[str, str],
    emails: Mapping[int, str],
    refused: Mapping[str, int],
) -> dict[str, Any]:
    """Both stages, the whole loop (votes per kept item over both stages) and every annotator."""
    stages = {stage: stage_status(tasks, votes, stage, config) for stage in (SCREENING, RESOLUTION)}
    kept = stages[RESOLUTION]["outcomes"].get(KEPT, 0)
    all_votes = sum(s["votes"] + s["control_votes"] for s in stages.values())
    annotators: dict[str, dict[str, Any]] = {}
    for stage in (SCREENING, RESOLUTION):
        rules = config.careful_rules(stage, careful_items(tasks, stage))
        stage_votes = [v for v in votes if v["stage"] == stage]
        item_votes = [v for v in stage_votes if not is_control(v["item_id"])]
        decisions = decide_stage(item_votes, stage, config.rule(stage), rules=rules)
        for annotator, quality in annotator_quality(stage_votes, decisions, control_answers).items():
            annotators[emails.get(annotator, str(annotator))] = {"stage": stage, **quality.to_dict()}
    return {
        "stages": stages,
        "votes": all_votes,
        "refused_votes": dict(refused),
        "kept": kept,
        "votes_per_kept_item": round(all_votes / kept, 2) if kept else None,
        "annotators": dict(sorted(annotators.items())),
    }
