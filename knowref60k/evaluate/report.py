"""Scoring a model on problems, zero- and few-shot, and the accuracies a researcher reports: overall, by
annotation strength (4/5 or 5/5) and by overlap subset (BM25 > 0 or = 0, the KnowRef-60K paper's
Table 8), each with a bootstrap confidence interval; few-shot results as the mean and spread over seeds."""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from knowref60k.evaluate.problems import Problem, demonstrations
from knowref60k.evaluate.scoring import CAUSAL, Scorer
from knowref60k.release.winogrande_form import BLANK

FEWSHOT_DELIMITER = "\n\n"
BOOTSTRAP_SAMPLES = 1000


def contexts(problem: Problem, demos: Sequence[Problem], method: str) -> tuple[list[str], str]:
    """The two contexts and the continuation a scorer compares; solved demonstrations (their right
    option filled in) come first, separated by blank lines, as the harness writes few-shot prompts."""
    prefix = "".join(d.filled(d.answer) + FEWSHOT_DELIMITER for d in demos)
    if method == CAUSAL:
        return [prefix + problem.partial(i) for i in (0, 1)], problem.rest()
    marked = [
        prefix + problem.sentence.replace(BLANK, "\x00" + option + "\x00", 1) for option in problem.options
    ]
    return marked, ""


def answers(
    scorer: Scorer,
    problems: Sequence[Problem],
    shots: int,
    seed: int,
    pool: Sequence[Problem],
    progress: Callable[[], None] = lambda: None,
) -> list[tuple[int, list[float]]]:
    """The option the model picks for each problem, and both options' scores; `batch_size` problems
    at a time."""
    picked: list[tuple[int, list[float]]] = []
    for start in range(0, len(problems), scorer.batch_size):
        batch = problems[start : start + scorer.batch_size]
        prompts = [
            contexts(p, demonstrations(pool, p, shots, seed) if shots else [], scorer.method) for p in batch
        ]
        picked += scorer.choose_many(prompts)
        for _ in batch:
            progress()
    return picked


def accuracy_with_interval(correct: Sequence[bool], seed: int = 0) -> dict[str, Any]:
    """Accuracy and its 95% bootstrap interval (percentiles of 1,000 resamples, seeded)."""
    if not correct:
        return {"items": 0, "accuracy": None, "ci95": None}
    rng = random.Random(seed)
    n = len(correct)
    resampled = sorted(sum(rng.choices(correct, k=n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    low, high = resampled[int(0.025 * BOOTSTRAP_SAMPLES)], resampled[int(0.975 * BOOTSTRAP_SAMPLES) - 1]
    return {"items": n, "accuracy": round(sum(correct) / n, 4), "ci95": [round(low, 4), round(high, 4)]}


def breakdown(problems: Sequence[Problem], picked: Sequence[int]) -> dict[str, Any]:
    """Accuracy overall and per subset the problems carry (strength, overlap)."""
    correct = [choice == p.answer for p, choice in zip(problems, picked, strict=True)]
    result: dict[str, Any] = {"all": accuracy_with_interval(correct)}
    for field, label in (("strength", "annotation_strength"), ("overlap", "overlap")):
        values = sorted({getattr(p, field) for p in problems if getattr(p, field) is not None})
        for value in values:
            subset = [c for p, c in zip(problems, correct, strict=True) if getattr(p, field) == value]
            result[f"{label} {value}"] = accuracy_with_interval(subset)
    return result


def spread(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean, standard deviation, lowest and highest overall accuracy over seeds."""
    values = [run["all"]["accuracy"] for run in runs if run["all"]["accuracy"] is not None]
    if not values:
        return {"mean": None}
    return {
        "mean": round(statistics.fmean(values), 4),
        "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def evaluate_model(
    scorer: Scorer,
    problems: Sequence[Problem],
    shots: Sequence[int],
    seeds: int,
    pool: Sequence[Problem],
    progress: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """Every shot count: zero-shot once, few-shot once per seed (demonstrations drawn anew), each run's
    breakdown and, over seeds, the spread."""
    results: dict[str, Any] = {}
    for count in shots:
        runs = []
        for seed in range(1 if count == 0 else seeds):
            scored = answers(scorer, problems, count, seed, pool, progress)
            picked = [choice for choice, _ in scored]
            per_item = {
                p.item_id: {"picked": c, "scores": s} for p, (c, s) in zip(problems, scored, strict=True)
            }
            runs.append({"seed": seed, **breakdown(problems, picked), "items": per_item})
        results[f"{count}-shot"] = {"runs": runs, "spread": spread(runs)}
    return results
