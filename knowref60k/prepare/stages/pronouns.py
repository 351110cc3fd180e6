"""Dangling pronouns: a pronoun of the other gender than the target's ("he" for Obama beside Hillary's
"she") refers to one of the antecedents or to someone else; once both antecedents take names of the
target's gender it would refer to no one, and the item would not make sense. Such items are dropped."""

from __future__ import annotations

import re

from knowref60k.core.stage import Stage
from knowref60k.prepare.rows import Row

PRONOUNS_BY_GENDER = {
    "male": frozenset({"he", "him", "his", "himself"}),
    "female": frozenset({"she", "her", "hers", "herself"}),
}
_WORD = re.compile(r"[A-Za-z]+")


def other_gender_pronouns(row: Row) -> list[str]:
    """The pronouns of the other gender than the target pronoun's, outside the antecedents' names."""
    other = next(forms for gender, forms in PRONOUNS_BY_GENDER.items() if gender != row["pronoun_gender"])
    names = [(row[f"antecedent{i}_start"], row[f"antecedent{i}_end"]) for i in (1, 2)]
    return [
        match.group()
        for match in _WORD.finditer(row["sentence"])
        if match.group().lower() in other and not any(s <= match.start() < e for s, e in names)
    ]


class OtherGenderPronoun(Stage[Row, Row]):
    name = "pronoun_gender"
    unit = "candidates"

    def reject(self, item: Row) -> str | None:
        return "other_gender_pronoun" if other_gender_pronouns(item) else None
