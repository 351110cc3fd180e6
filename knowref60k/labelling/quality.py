"""How good each annotator is, and how sure the votes make each item.

Per annotator: votes cast, the share agreeing with the item's final decision, and the accuracy on
control items whose answer the team knows. Over all votes of a stage: a Dawid-Skene model (Toloka's
crowd-kit), whose posterior per item says how sure the votes are of its answer, weighing each annotator
by the confusion the model estimates for them.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from knowref60k.labelling.decisions import (
    KEPT,
    REJECTED_NEITHER,
    SCREENED_OUT,
    SCREENED_VALID,
    VALID,
    Decision,
)

CONTROL_PREFIX = "control:"
# Rounded, so that a release is byte-identical across machines whose floating point differs in the last bits.
DIGITS = 6


def is_control(item_id: str) -> bool:
    return item_id.startswith(CONTROL_PREFIX)


def agrees(choice: str, decision: Decision) -> bool | None:
    """Whether a vote agrees with the item's decision; None where the decision has no one answer
    (pending, or rejected as ambiguous)."""
    if decision.status == KEPT:
        return choice == decision.label
    if decision.status == REJECTED_NEITHER:
        return choice == "neither"
    if decision.status == SCREENED_VALID:
        return choice == VALID
    if decision.status == SCREENED_OUT:
        return choice != VALID
    return None


def right_on_control(choice: str, answer: str) -> bool:
    """A screening control counts as right when the vote takes the right side (valid or not): the reasons
    overlap too much to demand the same one; a resolution control needs the same answer."""
    if VALID in (choice, answer) or answer not in ("antecedent1", "antecedent2", "neither"):
        return (choice == VALID) == (answer == VALID)
    return choice == answer


@dataclass
class AnnotatorQuality:
    votes: int = 0
    decided: int = 0
    agreeing: int = 0
    controls: int = 0
    controls_right: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "votes": self.votes,
            "agreement_with_decision": round(self.agreeing / self.decided, 4) if self.decided else None,
            "control_votes": self.controls,
            "control_accuracy": round(self.controls_right / self.controls, 4) if self.controls else None,
        }


def annotator_quality(
    votes: Iterable[Mapping[str, Any]], decisions: Mapping[str, Decision], control_answers: Mapping[str, str]
) -> dict[Any, AnnotatorQuality]:
    """Quality per annotator id over one stage's votes; control items are judged by `control_answers`."""
    quality: dict[Any, AnnotatorQuality] = defaultdict(AnnotatorQuality)
    for vote in votes:
        found = quality[vote["annotator_id"]]
        found.votes += 1
        if vote["item_id"] in control_answers:
            found.controls += 1
            found.controls_right += right_on_control(vote["choice"], control_answers[vote["item_id"]])
        elif vote["item_id"] in decisions:
            agreement = agrees(vote["choice"], decisions[vote["item_id"]])
            if agreement is not None:
                found.decided += 1
                found.agreeing += agreement
    return dict(quality)


@dataclass(frozen=True)
class DawidSkene:
    """Posterior per item over the answers, and each annotator's estimated accuracy (the mass of their
    confusion matrix on the diagonal, weighted by the answers' priors)."""

    posteriors: Mapping[str, Mapping[str, float]]
    accuracy: Mapping[Any, float]

    def posterior(self, item_id: str, answer: str) -> float | None:
        found = self.posteriors.get(item_id)
        return None if found is None else found.get(answer, 0.0)

    def most_likely(self, item_id: str) -> str | None:
        found = self.posteriors.get(item_id)
        return max(sorted(found), key=found.__getitem__) if found else None

    def summary(self, decided: Mapping[str, str]) -> dict[str, Any]:
        """Mean posterior of the decided answers, and how often the model's most likely answer differs."""
        chosen = [self.posterior(item, answer) or 0.0 for item, answer in decided.items()]
        disagree = sum(1 for item, answer in decided.items() if self.most_likely(item) != answer)
        return {
            "items": len(chosen),
            "mean_posterior": round(sum(chosen) / len(chosen), 4) if chosen else None,
            "items_where_most_likely_answer_differs": disagree,
            "annotators": len(self.accuracy),
        }


def dawid_skene(votes: Iterable[Mapping[str, Any]], iterations: int = 100) -> DawidSkene:
    """Fit Dawid-Skene on (item, annotator, choice) votes (crowd-kit's implementation)."""
    rows = sorted((v["item_id"], v["annotator_id"], v["choice"]) for v in votes)
    if not rows:
        return DawidSkene({}, {})
    import pandas as pd
    from crowdkit.aggregation import DawidSkene as Model

    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 still passes pandas keywords that pandas 3 deprecates; the results are the same.
        warnings.filterwarnings("ignore", module="crowdkit")
        model: Any = Model(n_iter=iterations).fit(frame)
    posteriors = {
        str(item): {str(answer): round(float(p), DIGITS) for answer, p in probabilities.items()}
        for item, probabilities in model.probas_.iterrows()
    }
    accuracy = {}
    for worker, confusion in model.errors_.groupby(level=0):
        matrix = confusion.droplevel(0)
        diagonal = sum(
            float(matrix.at[answer, answer]) * float(model.priors_.get(answer, 0.0))
            for answer in matrix.columns
            if answer in matrix.index
        )
        accuracy[worker.item() if hasattr(worker, "item") else worker] = round(diagonal, DIGITS)
    return DawidSkene(posteriors, accuracy)
