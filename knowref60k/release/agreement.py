"""Agreement: which items are kept, and how much the annotators agree."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CHOICES = ("antecedent1", "antecedent2", "neither")
# A vote names an antecedent of the candidate; the release shows the names that replaced them.
RELEASE_NAMES = {"antecedent1": "name1", "antecedent2": "name2", "neither": "neither"}
KEPT, REJECTED_NEITHER, REJECTED_AMBIGUOUS, PENDING = (
    "kept",
    "rejected_neither",
    "rejected_ambiguous",
    "pending",
)


@dataclass(frozen=True)
class AgreementRule:
    """Votes needed per item, and the least number agreeing on one antecedent to keep it."""

    votes_per_item: int = 5
    keep_at_least: int = 4
    flag_annotators_below: float = 0.6

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ItemDecision:
    item_id: str
    status: str
    label: str | None
    strength: int
    votes: tuple[Mapping[str, Any], ...]


def distinct_votes(votes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One vote per annotator (their latest), in the order the votes were first cast."""
    latest: dict[Any, Mapping[str, Any]] = {}
    for vote in sorted(votes, key=lambda v: (v["updated_at"], v["annotation_id"])):
        latest[vote["annotator_id"]] = vote
    return sorted(latest.values(), key=lambda v: (v["created_at"], v["annotation_id"]))


def decide(item_id: str, votes: Iterable[Mapping[str, Any]], rule: AgreementRule) -> ItemDecision:
    """Keep when at least `keep_at_least` of the first `votes_per_item` distinct annotators chose the
    same antecedent; reject as an extraction error when a majority chose "neither"; reject as
    ambiguous otherwise; pending while fewer than `votes_per_item` annotators voted."""
    counted = distinct_votes(votes)[: rule.votes_per_item]
    if len(counted) < rule.votes_per_item:
        return ItemDecision(item_id, PENDING, None, 0, tuple(counted))
    tally = Counter(vote["choice"] for vote in counted)
    label, strength = max(((c, tally[c]) for c in CHOICES[:2]), key=lambda pair: pair[1])
    if strength >= rule.keep_at_least:
        return ItemDecision(item_id, KEPT, label, strength, tuple(counted))
    if tally["neither"] * 2 > rule.votes_per_item:
        return ItemDecision(item_id, REJECTED_NEITHER, None, tally["neither"], tuple(counted))
    return ItemDecision(item_id, REJECTED_AMBIGUOUS, None, strength, tuple(counted))


def kappa_text(kappa: float | None) -> str:
    """A summary's kappa for people: "n/a" when no item has all its votes yet."""
    return "n/a (no item has all its votes)" if kappa is None else str(kappa)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa of items x categories counts, every item rated by the same number of raters."""
    items = len(counts)
    raters = sum(counts[0]) if counts else 0
    if raters < 2:
        return float("nan")
    total = items * raters
    shares = [sum(row[j] for row in counts) / total for j in range(len(counts[0]))]
    observed = sum((sum(n * n for n in row) - raters) / (raters * (raters - 1)) for row in counts) / items
    expected = sum(share * share for share in shares)
    return (observed - expected) / (1 - expected) if expected < 1 else float("nan")


@dataclass
class AgreementReport:
    decisions: dict[str, ItemDecision]
    kappa: float
    annotators: dict[str, dict[str, float]]
    flagged: list[str]
    neither_share: float
    label_balance: dict[str, int]
    status_counts: dict[str, int] = field(default_factory=dict)
    simulated_votes: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "items": self.status_counts,
            # None, not NaN, when no item is complete: JSON has no NaN, and "kappa nan" tells nothing.
            "fleiss_kappa": None if math.isnan(self.kappa) else round(self.kappa, 4),
            "neither_share": round(self.neither_share, 4),
            "label_balance": self.label_balance,
            "annotators": self.annotators,
            "flagged_annotators": self.flagged,
            "simulated_votes": self.simulated_votes,
        }


def agreement(
    item_ids: Iterable[str], votes: Iterable[Mapping[str, Any]], rule: AgreementRule, annotator_key: Any = str
) -> AgreementReport:
    """Decide every item and measure agreement over the complete ones."""
    by_item: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    all_votes = list(votes)
    for vote in all_votes:
        by_item[vote["item_id"]].append(vote)
    decisions = {item_id: decide(item_id, by_item.get(item_id, []), rule) for item_id in item_ids}
    complete = [d for d in decisions.values() if d.status != PENDING]
    counts = [[sum(v["choice"] == c for v in d.votes) for c in CHOICES] for d in complete]
    agree: Counter[str] = Counter()
    rated: Counter[str] = Counter()
    for decision in complete:
        tally = Counter(v["choice"] for v in decision.votes).most_common()
        majority = tally[0][0] if len(tally) == 1 or tally[0][1] > tally[1][1] else None
        for vote in decision.votes:
            annotator = annotator_key(vote["annotator_id"])
            rated[annotator] += 1
            agree[annotator] += vote["choice"] == majority
    annotators = {
        name: {"items": rated[name], "agreement_with_majority": round(agree[name] / rated[name], 4)}
        for name in sorted(rated)
    }
    counted = [v for d in complete for v in d.votes]
    return AgreementReport(
        decisions=decisions,
        kappa=fleiss_kappa(counts),
        annotators=annotators,
        flagged=[
            n for n, a in annotators.items() if a["agreement_with_majority"] < rule.flag_annotators_below
        ],
        neither_share=sum(v["choice"] == "neither" for v in counted) / len(counted) if counted else 0.0,
        label_balance=dict(
            sorted(
                Counter(
                    RELEASE_NAMES[d.label] for d in decisions.values() if d.status == KEPT and d.label
                ).items()
            )
        ),
        status_counts=dict(sorted(Counter(d.status for d in decisions.values()).items())),
        simulated_votes=sum(bool(v.get("simulated")) for v in all_votes),
    )
