"""Validate: a candidate whose spans do not fit its sentence is quarantined with the reason before it can
become a corrupt item (candidate files can be edited by hand or written by other tools)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import orjson

from knowref60k.core.config import TARGET_PRONOUNS
from knowref60k.core.records import QuarantinedLine
from knowref60k.core.stage import Stage
from knowref60k.prepare.context import Row

# The spans of a candidate, in the order they occur in its sentence.
SPANS = ("antecedent1", "antecedent2", "connective", "pronoun")


def candidate_problem(row: Row) -> tuple[str, str] | None:
    """(reason, detail) when the row cannot be a valid item, else None."""
    sentence = row["sentence"]
    spans = [(name, row[f"{name}_start"], row[f"{name}_end"]) for name in SPANS]
    for name, start, end in spans:
        if not 0 <= start < end <= len(sentence):
            return "span_outside_sentence", f"{name} {start}:{end}, sentence of {len(sentence)} characters"
        if sentence[start:end] != row[name]:
            return "span_text_mismatch", f"{name} {row[name]!r} but the sentence has {sentence[start:end]!r}"
    for (first, _, first_end), (second, second_start, _) in itertools.pairwise(spans):
        if first_end > second_start:
            return "spans_out_of_order", f"{first} ends at {first_end}, {second} starts at {second_start}"
    gender = TARGET_PRONOUNS.get(row["pronoun"].lower())
    if gender is None or gender != row["pronoun_gender"]:
        return "pronoun_gender_mismatch", f"{row['pronoun']!r} with gender {row['pronoun_gender']!r}"
    return None


class Validate(Stage[Row, Row]):
    name = "validate"
    unit = "candidates"

    def run(self, items: Iterable[Row]) -> Iterator[Row]:
        for number, row in enumerate(items, start=1):
            problem = candidate_problem(row)
            if problem is None:
                self.count(None)
                yield row
                continue
            reason, detail = problem
            self.count(reason)
            self.quarantined.append(
                QuarantinedLine(number, reason, detail, orjson.dumps(row, default=str).decode())
            )
