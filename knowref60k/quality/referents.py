"""The resolution gold set (data/eval/README.md, "Resolution criteria"): who the target pronoun of every
valid gold sentence refers to in the original sentence, and how often a release's labels agree with it.

    referents = load_referents()
    label_agreement([(row["id"], row["label"]) for row in rows], referents)
    # {"items": 40, "judged": 12, "clear": 11, "agree": 10, "agreement": {...}, "unclear": 1, ...}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.core.proportions import proportion
from knowref60k.labelling.referents import REFERENTS_FILE, UNCLEAR
from knowref60k.labelling.referents import Referent as Judged
from knowref60k.labelling.referents import load_referents as load_judged
from knowref60k.quality.gold import GOLD_FILE, load_gold

# A release's `label`: 0 = name1, the name that replaced antecedent1; 1 = name2, antecedent2's.
LABEL_REFERENTS = ("antecedent1", "antecedent2")

Spans = tuple[tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class Referent(Judged):
    # The judged names' [start, end) offsets in the original sentence: what antecedent1/2 point to.
    antecedents: Spans


def load_referents(path: Path = REFERENTS_FILE, gold_path: Path = GOLD_FILE) -> dict[str, Referent]:
    """Every judged referent by candidate id, with the judged names it refers to; a malformed line, or
    an id that is no valid gold item, is a UserError naming the file."""
    names = {item.candidate_id: item.antecedents for item in load_gold(gold_path) if item.antecedents}
    found = {}
    for candidate_id, judged in load_judged(path).items():
        if candidate_id not in names:
            raise UserError(f"{path}: {candidate_id} is no valid item of {gold_path.name}")
        found[candidate_id] = Referent(candidate_id, judged.split, judged.referent, names[candidate_id])
    return found


def label_agreement(
    item_ids_and_labels: Iterable[tuple[str, int]],
    referents: Mapping[str, Referent] | None = None,
    antecedents: Mapping[str, Spans] | None = None,
) -> dict[str, Any]:
    """How a release's labels (0 = name1 = antecedent1, 1 = name2) compare with the judged referents.

    `judged`: items whose sentence has a judged referent; with `antecedents` (each item's two antecedent
    spans in the original sentence, by id) only those whose pair is the judged names, the others counted
    as `other_pair` (a candidate that took another phrase for a person: the judged referent is not about
    its names). Of the judged: `clear` (a name was judged), of which `agree` have that name as label
    (`agreement`: the share with its 95% Wilson interval), and `unclear`."""
    referents = load_referents() if referents is None else referents
    items = judged = other_pair = clear = agree = unclear = 0
    for item_id, label in item_ids_and_labels:
        items += 1
        if label not in (0, 1):
            raise ValueError(f"item {item_id}: label {label!r} is neither 0 (name1) nor 1 (name2)")
        found = referents.get(item_id)
        if found is None:
            continue
        if antecedents is not None and antecedents.get(item_id) != found.antecedents:
            other_pair += 1
            continue
        judged += 1
        if found.referent == UNCLEAR:
            unclear += 1
        else:
            clear += 1
            agree += LABEL_REFERENTS[label] == found.referent
    return {
        "items": items,
        "judged": judged,
        "other_pair": other_pair,
        "clear": clear,
        "agree": agree,
        "agreement": proportion(agree, clear),
        "unclear": unclear,
    }
