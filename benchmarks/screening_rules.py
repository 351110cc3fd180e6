"""Which screening rule to use: release validity, votes per kept valid item and kept valid items, computed
exactly (knowref60k.labelling.costs) for every rule and screener accuracy, on the valid/invalid mix of real
items as the gold set judges them.

    .venv/bin/python benchmarks/screening_rules.py [ITEMS ...]   (default: output/demo/items/*.items.parquet)

Resolvers answer right with 0.9 (as the simulated ones do) and cannot tell an invalid item from a valid
one; a screener who errs on an invalid item lets it through. Prints a Markdown table, then one for rules
that use the validity score: items at or above the model's skip level go to resolution unscreened, those
from LEVEL up are screened by the configured rule, and those below LEVEL by the careful one (two screeners
to accept, one to reject); the configured level (chosen on the gold set's tuning part) is marked.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from knowref60k.labelling.costs import plan, summed
from knowref60k.labelling.decisions import VALID, ResolutionRule, ScreeningRule
from knowref60k.quality.gold import load_gold
from knowref60k.quality.gold_verdicts import screening_answers
from knowref60k.settings.effective import labelling_settings

REPO = Path(__file__).resolve().parent.parent
RULES: list[ScreeningRule | None] = [
    None,
    *(ScreeningRule(a, r) for a, r in ((1, 1), (1, 2), (2, 1), (2, 2), (3, 3))),
]
ACCURACIES = (0.85, 0.9, 0.95)
SECOND_SCREENER_BELOW = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("items", nargs="*", type=Path)
    args = parser.parse_args()
    paths = args.items or sorted((REPO / "output" / "demo" / "items").glob("*.items.parquet"))
    rows = [row for path in paths for row in pq.read_table(path).to_pylist()]
    answers = screening_answers(rows, {item.candidate_id: item for item in load_gold()})
    valid = sum(answer == VALID for answer in answers.values())
    invalid = len(answers) - valid
    print(f"{len(rows)} items, {len(answers)} judged by the gold set: {valid} valid, {invalid} invalid\n")
    print("| screening rule | screener accuracy | validity | votes per kept valid item | kept valid items |")
    print("|---|---:|---:|---:|---:|")
    print_rules(valid, invalid)
    print_score_bands(rows, answers)


def print_rules(valid: int, invalid: int) -> None:
    for rule in RULES:
        for accuracy in ACCURACIES if rule else (ACCURACIES[1],):
            found = plan(valid, invalid, rule, ResolutionRule(), accuracy, 0.9)
            name = f"accept {rule.accept_at}, reject {rule.reject_at}" if rule else "no screening"
            shown = f"{accuracy:.2f}" if rule else "-"
            print(
                f"| {name} | {shown} | {found.validity:.1%} | {found.votes_per_kept_valid:.2f} | "
                f"{found.kept_valid:.1f} |"
            )


def print_score_bands(rows: list[dict[str, Any]], answers: dict[str, str]) -> None:
    config = labelling_settings()
    skip = config.skip_level
    print(f"\nWith the score (unscreened from {skip}; screener and resolver accuracy 0.9):\n")
    print("| careful screening below | validity | votes per kept valid item | kept valid items |")
    print("|---:|---:|---:|---:|")
    for level in sorted({*SECOND_SCREENER_BELOW, config.careful_level}):
        bands = ((skip, None), (level, config.screening_rule), (0.0, config.careful_screening_rule))
        parts, upper = [], float("inf")
        for lower, rule in bands:
            judged = [
                answers[r["candidate_id"]]
                for r in rows
                if lower <= r["validity_score"] < upper and r["candidate_id"] in answers
            ]
            valid = sum(answer == VALID for answer in judged)
            parts.append(plan(valid, len(judged) - valid, rule, ResolutionRule(), 0.9, 0.9))
            upper = lower
        found = summed(parts)
        shown = f"**{level}** (configured)" if level == config.careful_level else str(level)
        print(
            f"| {shown} | {found.validity:.1%} | {found.votes_per_kept_valid:.2f} | {found.kept_valid:.1f} |"
        )


if __name__ == "__main__":
    main()
