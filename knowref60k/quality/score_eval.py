"""How the validity score trades precision for yield on the judged Reddit sentences: the curve over every
threshold, the points the thresholds chosen on the tuning part reach on the held-back part, the errors
that pass, and the rules' own point for comparison (`make eval`)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.cost_model import Calibration, CostConfig, calibration_from
from knowref60k.labelling.levels import Expected, Pinned, choose_levels
from knowref60k.labelling.referents import unclear_share
from knowref60k.quality.gold import GoldItem, judge, score_gold

PARTS = ("tune", "heldout")
# The yardstick: the rules' person detection, which the validity score had to beat to be the default.
RULES = "both"
# How far the calibration's expected precision at the default may be from the held-back part's.
CALIBRATION_TOLERANCE = 0.05


@dataclass(frozen=True)
class Judged:
    part: str
    score: float
    # None when the candidate is correct, else the gold reason or the span error.
    error: str | None


def judged_candidates(
    items: Sequence[GoldItem], config: ExtractConfig, model_name: str, tune_scores: Mapping[str, float]
) -> list[Judged]:
    """The score-mode extraction of every judged sentence, each candidate with its verdict and its score:
    for a tuning sentence the out-of-fold score of `tune_scores` (the shipped model saw it in training),
    for a held-back one the shipped model's."""
    from knowref60k.extract.pipeline import STAGES
    from knowref60k.quality.evaluation import extract_sentences
    from knowref60k.quality.scorer_data import UNSCORED_STAGES

    scoring = dataclasses.replace(config, person_detection="score")
    judged = []
    for part in PARTS:
        # The tuning part's scores are out-of-fold ones: the shipped model's are not computed for it.
        stages = UNSCORED_STAGES if part == "tune" else STAGES
        in_part = [item for item in items if item.split == part]
        if not in_part:
            continue
        result = extract_sentences("gold", [item.sentence for item in in_part], scoring, model_name, stages)
        for row in result.rows:
            item = in_part[row["line_number"] - 1]
            score = tune_scores.get(item.sentence) if part == "tune" else row["validity_score"]
            if score is not None:
                judged.append(Judged(part, float(score), judge(item, row)))
    return judged


def point(judged: Sequence[Judged], threshold: float, comments: int, share: float) -> dict[str, Any]:
    """Candidates kept at `threshold`: how many, how many correct, precision, correct candidates per
    million comments (the part's count divided by its share of all candidates), the errors by kind."""
    kept = [j for j in judged if j.score >= threshold]
    correct = sum(1 for j in kept if j.error is None)
    return {
        "threshold": round(threshold, 4),
        "kept": len(kept),
        "correct": correct,
        "precision": round(correct / len(kept), 4) if kept else None,
        "per_million": round(correct * 1_000_000 / comments / share, 1) if share else None,
        "errors": dict(Counter(j.error for j in kept if j.error).most_common()),
    }


def curve(judged: Sequence[Judged], comments: int, share: float) -> list[dict[str, Any]]:
    return [point(judged, t, comments, share) for t in sorted({j.score for j in judged})]


def threshold_for(
    points: Sequence[dict[str, Any]], precision: float | None = None, yield_: float | None = None
) -> float:
    """On a curve, the lowest threshold with at least `precision`, or the highest with at least `yield_`."""
    if precision is not None:
        return next((p["threshold"] for p in points if (p["precision"] or 0) >= precision), 1.0)
    meeting = [p["threshold"] for p in points if (p["per_million"] or 0) >= (yield_ or 0)]
    return max(meeting) if meeting else 0.0


def evaluate_score(
    items: Sequence[GoldItem],
    config: ExtractConfig,
    model_name: str,
    comments: int,
    recall_floor: float,
    tune_scores: Mapping[str, float],
) -> dict[str, Any]:
    """The curve per part, the rules' point (`RULES` with the other settings of `config`), the tuning
    part's calibration, and on the held-back part the points at thresholds chosen on the tuning part's
    out-of-fold scores: the default (chosen by cost from the calibration, with the default labelling
    rules and costs), the model's recall floor, the rules' yield, and 90% precision."""
    judged = judged_candidates(items, config, model_name, tune_scores)
    parts = {part: [j for j in judged if j.part == part] for part in PARTS}
    share = {part: len(found) / len(judged) if judged else 0.0 for part, found in parts.items()}
    rules = score_gold(items, dataclasses.replace(config, person_detection=RULES), model_name, comments)
    rules_yield = rules["valid_per_million_comments"]
    tune_curve = curve(parts["tune"], comments, share["tune"])
    scored = [(round(j.score, 4), j.error is None) for j in parts["tune"]]
    # With the resolution gold's unclear share, as labelling reads the shipped calibration.
    calibration = calibration_from(scored, comments, share["tune"], unclear_share())
    expected = default_levels(calibration)
    chosen = {
        **({"default": expected.threshold} if expected else {}),
        "recall_floor": recall_floor,
        "rules_yield": threshold_for(tune_curve, yield_=rules_yield),
        "precision_90": threshold_for(tune_curve, precision=0.9),
    }
    heldout = {name: point(parts["heldout"], t, comments, share["heldout"]) for name, t in chosen.items()}
    return {
        "candidates": {part: len(found) for part, found in parts.items()},
        "curves": {"tune": tune_curve, "heldout": curve(parts["heldout"], comments, share["heldout"])},
        "rules": {"per_million": rules_yield, "parts": rules["parts"]},
        "chosen_on_tune": chosen,
        "heldout": heldout,
        "tune": {name: point(parts["tune"], t, comments, share["tune"]) for name, t in chosen.items()},
        "calibration": calibration.to_dict(),
        "default_levels": expected.to_dict() if expected else None,
        "calibration_check": calibration_check(expected, heldout["default"]) if expected else None,
    }


def default_levels(calibration: Calibration) -> Expected | None:
    """The levels the default labelling rules and costs choose on `calibration`; None when no levels meet
    their targets on it (a calibration of few candidates, as the learning curve's slices)."""
    try:
        return choose_levels(calibration, LabellingConfig().rules, CostConfig(), Pinned())
    except UserError:
        return None


def calibration_check(expected: Expected, measured: dict[str, Any]) -> dict[str, Any]:
    """The precision the calibration expects at the default threshold against the held-back part's."""
    precision = measured["precision"]
    difference = None if precision is None else round(abs(expected.precision - precision), 4)
    return {
        "expected_precision": round(expected.precision, 4),
        "heldout_precision": precision,
        "difference": difference,
        "within": difference is not None and difference <= CALIBRATION_TOLERANCE,
    }
