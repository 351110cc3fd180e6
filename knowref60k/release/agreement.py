"""Agreement: which items are kept (by the labelling rules), and how much the annotators agree."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knowref60k.labelling.decisions import (
    KEPT,
    PENDING,
    RESOLUTION_CHOICES,
    Decision,
    ResolutionRule,
    decide,
)
from knowref60k.labelling.slots import late_votes

# A vote names an antecedent of the candidate; the release shows the names that replaced them.
RELEASE_NAMES = {"antecedent1": "name1", "antecedent2": "name2", "neither": "neither"}


def kappa_text(kappa: float | None) -> str:
    """A summary's kappa for people: "n/a" when no audit item has all its votes yet."""
    return "n/a (no audit item has all its votes)" if kappa is None else str(kappa)


def alpha_text(alpha: float | None) -> str:
    return "n/a (no item has two votes)" if alpha is None else str(alpha)


def krippendorff_alpha(votes: Iterable[Mapping[str, Any]]) -> float:
    """Krippendorff's alpha (crowd-kit's) over (item, annotator, choice) votes; NaN without two votes on an
    item."""
    rows = sorted((v["item_id"], v["annotator_id"], v["choice"]) for v in votes)
    if len(rows) - len({item for item, _, _ in rows}) < 1:
        return float("nan")
    import pandas as pd
    from crowdkit.metrics.data import alpha_krippendorff

    return float(alpha_krippendorff(pd.DataFrame(rows, columns=["task", "worker", "label"])))


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
    decisions: dict[str, Decision]
    # Fleiss' kappa over the audit items that have all their votes, and how many there are.
    kappa: float
    kappa_items: int
    # Krippendorff's alpha over every vote of the decided items, and how many votes.
    alpha: float
    alpha_votes: int
    annotators: dict[str, dict[str, float]]
    flagged: list[str]
    neither_share: float
    label_balance: dict[str, int]
    status_counts: dict[str, int] = field(default_factory=dict)
    simulated_votes: int = 0
    late_votes: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "items": self.status_counts,
            # None, not NaN, when no item is complete: JSON has no NaN, and "kappa nan" tells nothing.
            "fleiss_kappa": None if math.isnan(self.kappa) else round(self.kappa, 4),
            "fleiss_kappa_items": self.kappa_items,
            "krippendorff_alpha": None if math.isnan(self.alpha) else round(self.alpha, 4),
            "krippendorff_alpha_votes": self.alpha_votes,
            "neither_share": round(self.neither_share, 4),
            "label_balance": self.label_balance,
            "annotators": self.annotators,
            "flagged_annotators": self.flagged,
            "simulated_votes": self.simulated_votes,
            "late_votes": self.late_votes,
        }


def agreement(
    item_ids: Iterable[str],
    votes: Iterable[Mapping[str, Any]],
    rule: ResolutionRule,
    annotator_key: Any = str,
    audit: Callable[[str], bool] = lambda _item: False,
) -> AgreementReport:
    """Decide every item by its (resolution) votes, and measure agreement. Early stopping leaves all
    `votes_per_item` votes only on the contentious items, so Fleiss' kappa is computed over the audit
    items (`audit`: a seeded share that always collects every vote) that have them, and Krippendorff's
    alpha, which takes items with any number of votes, over every vote of the decided items. Agreement
    with the majority per annotator is over every vote cast on a decided item. An audit item's votes
    after its decision are audit votes, not late ones."""
    by_item: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    all_votes = list(votes)
    for vote in all_votes:
        by_item[vote["item_id"]].append(vote)
    decisions = {item_id: decide(item_id, by_item.get(item_id, []), rule) for item_id in item_ids}
    decided = [d for d in decisions.values() if d.status != PENDING]
    full = [(*d.votes, *d.late)[: rule.votes_per_item] for d in decided if audit(d.item_id)]
    counts = [
        [sum(v["choice"] == c for v in cast) for c in RESOLUTION_CHOICES]
        for cast in full
        if len(cast) == rule.votes_per_item
    ]
    every_vote = [v for d in decided for v in (*d.votes, *d.late)]
    annotators = _annotator_agreement(decided, annotator_key)
    counted = [v for d in decided for v in d.votes]
    return AgreementReport(
        decisions=decisions,
        kappa=fleiss_kappa(counts),
        kappa_items=len(counts),
        alpha=krippendorff_alpha(every_vote),
        alpha_votes=len(every_vote),
        annotators=annotators,
        flagged=[
            n for n, a in annotators.items() if a["agreement_with_majority"] < rule.flag_annotators_below
        ],
        neither_share=sum(v["choice"] == "neither" for v in counted) / len(counted) if counted else 0.0,
        label_balance=dict(
            sorted(Counter(RELEASE_NAMES[d.label] for d in decided if d.status == KEPT and d.label).items())
        ),
        status_counts=dict(sorted(Counter(d.status for d in decisions.values()).items())),
        simulated_votes=sum(bool(v.get("simulated")) for v in all_votes),
        late_votes=sum(
            late_votes(len(d.votes), len(d.late), rule.votes_per_item, audit(d.item_id))
            for d in decisions.values()
        ),
    )


def _annotator_agreement(decided: Iterable[Decision], annotator_key: Any) -> dict[str, dict[str, float]]:
    agree: Counter[str] = Counter()
    rated: Counter[str] = Counter()
    for decision in decided:
        cast = (*decision.votes, *decision.late)
        tally = Counter(v["choice"] for v in cast).most_common()
        majority = tally[0][0] if len(tally) == 1 or tally[0][1] > tally[1][1] else None
        for vote in cast:
            annotator = annotator_key(vote["annotator_id"])
            rated[annotator] += 1
            agree[annotator] += vote["choice"] == majority
    return {
        name: {"items": rated[name], "agreement_with_majority": round(agree[name] / rated[name], 4)}
        for name in sorted(rated)
    }
