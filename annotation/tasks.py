"""Label Studio tasks from items: the perturbed sentence with the pronoun highlighted, and the two
names (in a seeded random order) plus "Neither / can't tell", each mapped back to its identity."""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Mapping
from typing import Any

NEITHER = "Neither / can't tell"
IDENTITIES = ("antecedent1", "antecedent2", "neither")

# The seed of the order in which tasks are pushed (and of the simulated annotators' answers).
ORDER_SEED = 60_000


def names_first_is_name1(item_id: str, seed: int) -> bool:
    """Whether name1 is shown first: one bit of sha256(seed, item id), the same on every machine."""
    return hashlib.sha256(f"{seed}\x1forder\x1f{item_id}".encode()).digest()[0] % 2 == 0


def sentence_html(item: Mapping[str, Any]) -> str:
    sentence = item["perturbed_sentence"]
    start, end = item["perturbed_pronoun_start"], item["perturbed_pronoun_end"]
    return (
        '<div class="knowref-sentence">'
        + html.escape(sentence[:start])
        + f'<span class="knowref-pronoun">{html.escape(sentence[start:end])}</span>'
        + html.escape(sentence[end:])
        + "</div>"
    )


def task_for(item: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The task's data. `answer_identity` maps each shown choice back to antecedent1/2 or neither."""
    names = [(item["name1"], "antecedent1"), (item["name2"], "antecedent2")]
    if not names_first_is_name1(item["candidate_id"], seed):
        names.reverse()
    options = [*names, (NEITHER, "neither")]
    return {
        "data": {
            "item_id": item["candidate_id"],
            "sentence_html": sentence_html(item),
            "sentence": item["perturbed_sentence"],
            "options": [{"value": label} for label, _ in options],
            "answer_identity": {label: identity for label, identity in options},
            "source_file": item["source_file"],
        }
    }


def simulated_truth(seed: int) -> Callable[[str], str]:
    """The answer a perfect simulated annotator gives: a seeded coin per item (there is no real truth)."""

    def truth(item_id: str) -> str:
        bit = hashlib.sha256(f"{seed}\x1ftruth\x1f{item_id}".encode()).digest()[0] % 2
        return "antecedent1" if bit == 0 else "antecedent2"

    return truth
