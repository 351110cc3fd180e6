"""Which items are valid problems, by the hand-judged gold set (`data/eval/`): the answer a careful
screener gives, and the share of a release's items that are valid."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from knowref60k.labelling.decisions import VALID
from knowref60k.labelling.referents import Referent
from knowref60k.quality.gold import GoldItem, judge

# The gold set's reasons (and the two span errors of a candidate) as a screener would name them.
SCREENING_REASON_OF = {
    "not_a_sentence": "broken_or_garbled",
    "same_person": "same_person",
    "work_title": "not_a_person",
    "place": "not_a_person",
    "organisation": "not_a_person",
    "group": "not_a_person",
    "other_non_person": "not_a_person",
    "fewer_than_two_people": "not_a_person",
    "more_than_two_people": "pronoun_refers_elsewhere",
    "pronoun_refers_to_neither": "pronoun_refers_elsewhere",
    "broken_span": "broken_or_garbled",
    "wrong_person": "not_a_person",
}


def screening_answers(rows: Iterable[Mapping[str, Any]], gold: Mapping[str, GoldItem]) -> dict[str, str]:
    """candidate_id -> "valid" or a screening reason, for every row the gold set has judged."""
    answers = {}
    for row in rows:
        item = gold.get(row["candidate_id"])
        if item is not None:
            error = judge(item, dict(row))
            answers[row["candidate_id"]] = VALID if error is None else SCREENING_REASON_OF[error]
    return answers


def resolution_answers(
    rows: Iterable[Mapping[str, Any]], gold: Mapping[str, GoldItem], referents: Mapping[str, Referent]
) -> dict[str, str]:
    """candidate_id -> who a careful resolver names (antecedent1, antecedent2, or unclear when a careful
    reader cannot tell), for every row that is the very candidate the gold set judged valid: a row whose
    spans differ from the judged ones has no judged referent."""
    valid = screening_answers(rows, gold)
    return {
        item_id: referents[item_id].referent
        for item_id, answer in valid.items()
        if answer == VALID and item_id in referents
    }


def validity(item_ids: Iterable[str], answers: Mapping[str, str]) -> dict[str, Any]:
    """How many of the items are valid, invalid (by reason) or not judged, and the valid share of the
    judged ones."""
    kinds = Counter(answers.get(item_id, "unjudged") for item_id in item_ids)
    judged = sum(count for kind, count in kinds.items() if kind != "unjudged")
    return {
        "items": sum(kinds.values()),
        "valid": kinds[VALID],
        "invalid": {kind: count for kind, count in sorted(kinds.items()) if kind not in (VALID, "unjudged")},
        "unjudged": kinds["unjudged"],
        "validity": round(kinds[VALID] / judged, 4) if judged else None,
    }
