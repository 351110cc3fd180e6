"""Where the labelling stands, from what the last collect wrote: per stage, the items waiting, in
progress and decided (and what was decided), the votes and person-time spent (Label Studio's `lead_time`
of each vote) beside what the cost model expects them to cost, and the votes and time it will take to
finish; per annotator, their votes, time and quality. Votes always count every vote of a stage, control
votes included (`item_votes` + `control_votes`), so the annotators' votes add up to their stage's."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.cost_model import CostConfig
from knowref60k.labelling.costs import outcomes, resolving, screener_answers
from knowref60k.labelling.decisions import (
    KEPT,
    PENDING,
    RESOLUTION,
    SCREENED_OUT,
    SCREENED_VALID,
    SCREENING,
    Decision,
    decide_stage,
)
from knowref60k.labelling.quality import annotator_quality, is_control
from knowref60k.labelling.referents import unclear_share

MAX_VOTE_SECONDS = 3600.0


@dataclass(frozen=True)
class Pace:
    """What a vote costs a stage: the cost model's person-seconds per vote and its expected votes per
    item (used until items are decided to measure it)."""

    seconds_per_vote: float
    expected_votes_per_item: float


def paces(config: LabellingConfig, cost: CostConfig) -> dict[str, Pace]:
    """Each stage's pace by the cost model: its seconds per vote, and the votes its rule is expected to
    take per item (screening: a valid item's; resolution: with the resolution gold's unclear share)."""
    accuracy = cost.annotator_accuracy
    screening = outcomes(config.screening_rule, screener_answers(True, accuracy)).expected_votes
    resolution = resolving(config.resolution_rule, accuracy, unclear_share()).votes_valid
    return {
        SCREENING: Pace(cost.screening_vote_seconds, screening),
        RESOLUTION: Pace(cost.resolution_vote_seconds, resolution),
    }


def stage_status(
    tasks: Iterable[Mapping[str, Any]],
    votes: Iterable[Mapping[str, Any]],
    stage: str,
    config: LabellingConfig,
    pace: Pace,
) -> dict[str, Any]:
    """The state of one stage's items (control tasks left out), every vote it took (controls included)
    and the person-time they took, and the votes and time it will take to finish."""
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
    measured = sum(len(d.votes) for d in decided) / len(decided) if decided else None
    per_item = measured if measured is not None else pace.expected_votes_per_item
    in_progress = [d for d in decisions.values() if d.status == PENDING and cast[d.item_id]]
    waiting = sum(1 for d in decisions.values() if d.status == PENDING and not cast[d.item_id])
    to_finish = round(waiting * per_item + sum(max(0.0, per_item - cast[d.item_id]) for d in in_progress))
    seconds = [vote_seconds(v) for v in stage_votes if v.get("lead_time") is not None]
    per_vote = sum(seconds) / len(seconds) if seconds else pace.seconds_per_vote
    return {
        "items": len(items),
        "waiting": waiting,
        "in_progress": len(in_progress),
        "decided": len(decided),
        "outcomes": _outcomes(decided),
        "item_votes": len(item_votes),
        "control_votes": len(stage_votes) - len(item_votes),
        "votes": len(stage_votes),
        "late_votes": sum(config.late_votes(stage, d, d.item_id in careful) for d in decided),
        "votes_per_decided_item": round(measured, 2) if measured is not None else None,
        PASSED_ON[stage]: _per_passed(len(stage_votes), decided, stage),
        "projected_votes_to_finish": to_finish,
        "projected_from": "decided items" if measured is not None else "the cost model",
        "person_hours": round(sum(seconds) / 3600, 2),
        "expected_person_hours": round(len(stage_votes) * pace.seconds_per_vote / 3600, 2),
        "projected_person_hours_to_finish": round(to_finish * per_vote / 3600, 2),
    }


def vote_seconds(vote: Mapping[str, Any]) -> float:
    """The seconds a vote took, as its page measured them (`lead_time`), within [0, an hour]: whoever posts
    a vote sets it, and one absurd value must not swamp the rest."""
    try:
        seconds = float(vote.get("lead_time") or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return min(max(seconds, 0.0), MAX_VOTE_SECONDS) if seconds == seconds else 0.0


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


# Each stage's word for an item it passes on: screening accepts items, resolution keeps them.
PASSED_ON = {SCREENING: "votes_per_accepted_item", RESOLUTION: "votes_per_kept_item"}


def _per_passed(votes: int, decided: list[Decision], stage: str) -> float | None:
    passed = sum(1 for d in decided if d.status == (KEPT if stage == RESOLUTION else SCREENED_VALID))
    return round(votes / passed, 2) if passed else None


def status(
    tasks: list[Mapping[str, Any]],
    votes: list[Mapping[str, Any]],
    config: LabellingConfig,
    control_answers: Mapping[str, str],
    emails: Mapping[int, str],
    refused: Mapping[str, int],
    paces: Mapping[str, Pace],
) -> dict[str, Any]:
    """Both stages, the whole loop (votes per kept item over both stages) and every annotator."""
    stages = {
        stage: stage_status(tasks, votes, stage, config, paces[stage]) for stage in (SCREENING, RESOLUTION)
    }
    kept = stages[RESOLUTION]["outcomes"].get(KEPT, 0)
    all_votes = sum(s["votes"] for s in stages.values())
    annotators: dict[str, dict[str, Any]] = {}
    for stage in (SCREENING, RESOLUTION):
        rules = config.careful_rules(stage, careful_items(tasks, stage))
        stage_votes = [v for v in votes if v["stage"] == stage]
        item_votes = [v for v in stage_votes if not is_control(v["item_id"])]
        decisions = decide_stage(item_votes, stage, config.rule(stage), rules=rules)
        hours: dict[Any, float] = defaultdict(float)
        for vote in stage_votes:
            hours[vote["annotator_id"]] += vote_seconds(vote) / 3600
        for annotator, quality in annotator_quality(stage_votes, decisions, control_answers).items():
            name = emails.get(annotator, str(annotator))
            annotators[name] = {
                "stage": stage,
                **quality.to_dict(),
                "person_hours": round(hours[annotator], 3),
            }
    return {
        "stages": stages,
        "votes": all_votes,
        "refused_votes": dict(refused),
        "kept": kept,
        "votes_per_kept_item": round(all_votes / kept, 2) if kept else None,
        "person_hours": round(sum(s["person_hours"] for s in stages.values()), 2),
        "annotators": dict(sorted(annotators.items())),
    }
