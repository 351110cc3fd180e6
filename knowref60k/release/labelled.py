"""What the votes of both stages decide for a release: which items screening let through, which of
those resolution kept, how sure a Dawid-Skene model is of each, how good each annotator is, and what it
all cost in votes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowref60k.labelling.config import LabellingConfig
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
from knowref60k.labelling.quality import DawidSkene, annotator_quality, dawid_skene, is_control
from knowref60k.release.agreement import AgreementReport, agreement


@dataclass
class Labelled:
    config: LabellingConfig
    # None when items went to resolution unscreened.
    screening: dict[str, Decision] | None
    # Items whose validity score sent them to resolution unscreened.
    skipped: frozenset[str]
    # Items whose validity score had them screened by the careful rule.
    careful: frozenset[str]
    report: AgreementReport
    label_model: DawidSkene
    validity_model: DawidSkene | None
    quality: dict[str, dict[str, Any]]
    votes: dict[str, int]

    def eligible(self, item_id: str) -> bool:
        """Whether an item could be resolved: screened valid, skipped screening by score, or screening is
        off."""
        return (
            self.screening is None
            or item_id in self.skipped
            or self.screening[item_id].status == SCREENED_VALID
        )

    def screening_counts(self) -> dict[str, Any]:
        if self.screening is None:
            return {"screened": False}
        screened = {i: d for i, d in self.screening.items() if i not in self.skipped}
        statuses = Counter(decision.status for decision in screened.values())
        reasons = Counter(d.label for d in screened.values() if d.status == SCREENED_OUT)
        return {
            "items": len(screened),
            "screened_carefully": sum(
                1 for i, d in screened.items() if i in self.careful and d.status != PENDING
            ),
            "screened_valid": statuses[SCREENED_VALID],
            "screened_out": dict(sorted(reasons.items())),
            "pending": statuses[PENDING],
            "skipped_by_score": len(self.skipped),
        }

    def screening_rules(self) -> str:
        described = self.config.screening_rule.describe()
        if not self.config.careful_level:
            return described
        careful = self.config.careful_screening_rule.describe()
        return f"{described}; below validity score {self.config.careful_level:g}: {careful}"

    def kept(self) -> int:
        return self.report.status_counts.get(KEPT, 0)

    def summary(self) -> dict[str, Any]:
        kept = self.kept()
        decided = {i: d.label for i, d in self.report.decisions.items() if d.status == KEPT and d.label}
        return {
            "rules": {
                "screening": self.screening_rules() if self.config.screening else "off",
                "resolution": self.config.resolution_rule.describe(),
                "config": self.config.published_dict(),
            },
            "screening": self.screening_counts(),
            "votes": self.votes,
            "votes_per_kept_item": round(sum(self.votes.values()) / kept, 2) if kept else None,
            "dawid_skene": self.label_model.summary(decided),
            "annotator_quality": self.quality,
        }


def annotators(
    votes: Sequence[Mapping[str, Any]],
    decided: Mapping[str, Mapping[str, Decision]],
    label_model: DawidSkene,
    annotator_key: Callable[[Any], str],
    control_answers: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """Each annotator's quality in their stage (`decided`: each stage's decisions), with Dawid-Skene's
    accuracy for resolvers, by annotator key."""
    quality: dict[str, dict[str, Any]] = {}
    for stage, decisions in decided.items():
        stage_votes = [v for v in votes if v["stage"] == stage]
        for annotator, found in annotator_quality(stage_votes, decisions, control_answers).items():
            accuracy = label_model.accuracy.get(annotator) if stage == RESOLUTION else None
            quality[annotator_key(annotator)] = {
                "stage": stage,
                **found.to_dict(),
                "dawid_skene_accuracy": accuracy,
            }
    return dict(sorted(quality.items()))


def label(
    items: Mapping[str, Mapping[str, Any]],
    votes: Iterable[Mapping[str, Any]],
    config: LabellingConfig,
    annotator_key: Callable[[Any], str],
    control_answers: Mapping[str, str],
) -> Labelled:
    """Both stages' decisions on the items, from the votes of both (control votes only measure annotators)."""
    ids = sorted(items)
    skipped = frozenset(i for i in ids if config.skips_screening(items[i].get("validity_score")))
    votes = list(votes)
    by_stage = {
        stage: [v for v in votes if v["stage"] == stage and not is_control(v["item_id"])]
        for stage in (SCREENING, RESOLUTION)
    }
    careful = config.screening_rules({i: items[i].get("validity_score") for i in ids})
    screening = (
        decide_stage(by_stage[SCREENING], SCREENING, config.screening_rule, ids, careful)
        if config.screening
        else None
    )
    eligible = [i for i in ids if screening is None or i in skipped or screening[i].status == SCREENED_VALID]
    eligible_set = set(eligible)
    resolution_votes = [v for v in by_stage[RESOLUTION] if v["item_id"] in eligible_set]
    report = agreement(eligible, resolution_votes, config.resolution_rule, annotator_key, config.is_audit)
    label_model = dawid_skene(resolution_votes)
    decided = {SCREENING: screening or {}, RESOLUTION: report.decisions}
    quality = annotators(votes, decided, label_model, annotator_key, control_answers)
    return Labelled(
        config=config,
        screening=screening,
        skipped=skipped,
        careful=frozenset(careful),
        report=report,
        label_model=label_model,
        validity_model=dawid_skene(by_stage[SCREENING]) if config.screening else None,
        quality=quality,
        votes={
            "screening": len(by_stage[SCREENING]),
            "resolution": len(by_stage[RESOLUTION]),
            **{
                f"{stage}_controls": sum(v["stage"] == stage and is_control(v["item_id"]) for v in votes)
                for stage in (SCREENING, RESOLUTION)
            },
        },
    )
