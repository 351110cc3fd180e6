"""What a release's labelling was expected to cost and what it did cost, for its card and manifest: the
levels it was prepared and labelled at, the expected votes and person-seconds per kept valid item there
(`knowref60k.labelling.levels`), the votes actually spent, and the candidates held back below the
threshold, which are kept and can still be sent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.labelling.config import chosen_levels
from knowref60k.labelling.cost_model import CostConfig
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k.labelling.levels import Pinned
from knowref60k.prepare.stages.threshold import BELOW_THRESHOLD, HELD_BACK_SUFFIX, SEND_HELD_BACK
from knowref60k.release.labelled import Labelled


@dataclass
class HeldBack:
    """The validity thresholds of a run's prepare reports, and the candidates below them: held back by the
    run's own files, less those a later prepare of a held-back file took up again."""

    thresholds: set[float] = field(default_factory=set)
    later_thresholds: set[float] = field(default_factory=set)
    candidates: int = 0
    taken_up: int = 0

    def add(self, report: Mapping[str, Any]) -> None:
        stages = (report.get("stats") or {}).get("stages", {})
        given = (report.get("config") or {}).get("validity_threshold")
        threshold = float(given) if isinstance(given, int | float) and given >= 0 else None
        if str(report.get("source_file") or "").endswith(HELD_BACK_SUFFIX):
            self.taken_up += int(stages.get("validate", {}).get("in", 0))
            self.later_thresholds.update([threshold] if threshold is not None else [])
        elif threshold is not None:
            self.thresholds.add(threshold)
        self.candidates += int(stages.get("threshold", {}).get("dropped", {}).get(BELOW_THRESHOLD, 0))

    @property
    def threshold(self) -> float:
        """The one threshold of the run's own files; -1 (unknown: chosen by cost) when they differ or do
        not say."""
        return next(iter(self.thresholds)) if len(self.thresholds) == 1 else -1.0

    @property
    def still_held(self) -> int:
        return max(self.candidates - self.taken_up, 0)


def cost_facts(labelled: Labelled, cost: CostConfig, held_back: HeldBack) -> dict[str, Any]:
    """The expected and the spent figures of a release's labelling."""
    config = labelled.config
    try:
        threshold = held_back.threshold if held_back.threshold >= 0 else None
        pinned = Pinned(threshold, config.skip_level, config.careful_level)
        expected = chosen_levels(config, pinned, cost)
    except UserError:  # targets no levels reach: the card reports what was spent
        expected = None
    # Control tasks included, as the expected figures count them.
    votes = {
        stage: labelled.votes.get(stage, 0) + labelled.votes.get(f"{stage}_controls", 0)
        for stage in (SCREENING, RESOLUTION)
    }
    seconds = (
        votes[SCREENING] * cost.screening_vote_seconds + votes[RESOLUTION] * cost.resolution_vote_seconds
    )
    kept = labelled.kept()
    spent: dict[str, Any] = {
        "votes": votes,
        "person_seconds": round(seconds, 1),
        "votes_per_kept_item": round(sum(votes.values()) / kept, 2) if kept else None,
        "person_seconds_per_kept_item": round(seconds / kept, 1) if kept else None,
    }
    if cost.person_hour_price:
        spent["price"] = round(seconds / 3600 * cost.person_hour_price, 2)
    return {
        "levels": {
            "validity_threshold": expected.threshold if expected else held_back.threshold,
            "skip_screening_above": config.skip_level,
            "careful_screening_below": config.careful_level,
        },
        "cost": cost.to_dict(),
        "expected": expected.to_dict() if expected else None,
        "spent": spent,
        "held_below_threshold": held_back.still_held,
        "taken_up_later": {
            "candidates": held_back.taken_up,
            "thresholds": sorted(held_back.later_thresholds),
        },
    }


def cost_section(facts: Mapping[str, Any]) -> str:
    """The card's "Cost" section (Markdown)."""
    levels = facts["levels"]
    lines = [
        f"- Levels: validity threshold {levels['validity_threshold']:g} (candidates scoring below it were "
        f"not sent), unscreened from {levels['skip_screening_above']:g}, careful screening below "
        f"{levels['careful_screening_below']:g} (0: none).",
    ]
    if facts["expected"]:
        lines.append(_expected_line(facts["expected"], facts["cost"]))
    lines.append(_spent_line(facts["spent"], facts["cost"]))
    later = facts["taken_up_later"]
    at = ", ".join(f"{threshold:g}" for threshold in later["thresholds"])
    taken = f" ({later['candidates']:,} more were prepared later at {at})" if later["candidates"] else ""
    lines.append(
        f"- Held back: {facts['held_below_threshold']:,} candidates scored below the threshold{taken}. They "
        f"are kept in the run's `items/*{HELD_BACK_SUFFIX}` and can be labelled later: `{SEND_HELD_BACK}`, "
        "then push the items."
    )
    return "\n".join(lines) + "\n"


def _expected_line(expected: Mapping[str, Any], cost: Mapping[str, Any]) -> str:
    per_item = expected["votes_per_kept_valid"] * expected["validity"]
    return (
        "- Expected at these levels (the validity score's calibration on the gold set's tuning part, "
        f"annotators right {cost['annotator_accuracy']:.0%} of the time): "
        f"{expected['votes_per_kept_valid']:.2f} votes and "
        f"{expected['person_seconds_per_kept_valid']:.0f} person-seconds per kept valid item "
        f"({per_item:.2f} votes per kept item), {expected['validity']:.1%} of kept items valid, "
        f"{expected['valid_per_million']:.1f} valid items sent per million comments."
    )


def _spent_line(spent: Mapping[str, Any], cost: Mapping[str, Any]) -> str:
    rate = (
        f"{cost['screening_vote_seconds']:g} s a screening vote, "
        f"{cost['resolution_vote_seconds']:g} s a resolution vote"
    )
    line = (
        f"- Spent (control tasks included): {spent['votes'][SCREENING]:,} screening and "
        f"{spent['votes'][RESOLUTION]:,} resolution "
        f"votes, {spent['person_seconds'] / 3600:.1f} person-hours at {rate}"
    )
    if "price" in spent:
        line += f" ({spent['price']:,.2f} {cost['currency']})"
    if spent["votes_per_kept_item"] is None:
        return line + "."
    return (
        f"{line}; {spent['votes_per_kept_item']:.2f} votes and "
        f"{spent['person_seconds_per_kept_item']:.0f} person-seconds per kept item."
    )
