"""Validate: a candidate with a null or wrongly typed value, or whose spans do not fit its sentence, is
quarantined with the reason before it can become a corrupt item or stop the file (candidate files can be
edited by hand or written by other tools)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import orjson
import pyarrow as pa

from knowref60k.core.config import TARGET_PRONOUNS
from knowref60k.core.io import CANDIDATE_SCHEMA
from knowref60k.core.privacy import mask_user_mentions, masked_texts
from knowref60k.core.records import QuarantinedLine
from knowref60k.core.stage import Stage
from knowref60k.prepare.rows import Row

# The spans of a candidate, in the order they occur in its sentence.
SPANS = ("antecedent1", "antecedent2", "connective", "pronoun")
# How much of a wrong value a quarantine record's detail shows.
MAX_SHOWN = 80


def value_problem(row: Row) -> tuple[str, str] | None:
    """(reason, detail) when a column holds a null where the candidates' schema allows none, or a value of
    another type than the schema's (a string `line_number`): such a row cannot be checked or written."""
    for column in CANDIDATE_SCHEMA:
        value = row.get(column.name)
        if value is None:
            if not column.nullable:
                return "missing_value", f"{column.name} is null"
        elif not fits(column.type, value):
            shown = repr(value)[:MAX_SHOWN]
            return "wrong_type", f"{column.name} is {type(value).__name__} {shown}, expected {column.type}"
    return None


def fits(kind: pa.DataType, value: object) -> bool:
    """Whether a column of type `kind` can hold the value as it is (no conversion)."""
    if pa.types.is_string(kind):
        return type(value) is str
    if pa.types.is_integer(kind):
        bound = 2 ** (kind.bit_width - 1)
        return type(value) is int and -bound <= value < bound
    if pa.types.is_floating(kind):
        return type(value) in (int, float)
    return True


def candidate_problem(row: Row) -> tuple[str, str] | None:
    """(reason, detail) when the row cannot be a valid item, else None; `value_problem` first: the checks
    here expect values of the schema's types."""
    found = value_problem(row)
    if found is not None:
        return found
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
                QuarantinedLine(
                    number,
                    reason,
                    mask_user_mentions(detail),
                    orjson.dumps(masked_texts(row), default=str).decode(),
                )
            )
