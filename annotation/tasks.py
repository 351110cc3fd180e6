"""Label Studio tasks from items, one kind per stage.

- screening: the *original* sentence with both antecedents and the pronoun highlighted, and a fixed
  list of answers (valid, or one reason);
- resolution: the renamed sentence with the pronoun highlighted, the two names (in a seeded random
  order) plus "Neither / can't tell".

Every task maps each shown answer back to its code (`answer_identity`), so a vote never depends on the
order or wording the annotator saw.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from knowref60k.labelling.decisions import RESOLUTION, RESOLUTION_CHOICES, SCREENING

NEITHER = "Neither / can't tell"
IDENTITIES = RESOLUTION_CHOICES
SCREENING_ANSWERS = {
    "valid": "Valid: two different people, and the yellow word could be either",
    "not_a_person": "Not a person (a blue name is a company, game, place, group ...)",
    "same_person": "Same person (both blue names are one person)",
    "pronoun_refers_elsewhere": "The yellow word refers to someone else",
    "broken_or_garbled": "Broken name or garbled text",
}

# The seed of the order in which tasks are pushed (and of the simulated annotators' answers).
ORDER_SEED = 60_000
# The key of a task's data (and an item row's, at the push) marking an item screened by the careful rule.
CAREFUL = "careful"


def names_first_is_name1(item_id: str, seed: int) -> bool:
    """Whether name1 is shown first: one bit of sha256(seed, item id), the same on every machine."""
    return hashlib.sha256(f"{seed}\x1forder\x1f{item_id}".encode()).digest()[0] % 2 == 0


def highlighted(sentence: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """The sentence as HTML with each (start, end, css class) span wrapped; spans do not overlap."""
    parts, position = [], 0
    for start, end, css in sorted(spans):
        parts += [
            html.escape(sentence[position:start]),
            f'<span class="{css}">{html.escape(sentence[start:end])}</span>',
        ]
        position = end
    return '<div class="knowref-sentence">' + "".join(parts) + html.escape(sentence[position:]) + "</div>"


def sentence_html(item: Mapping[str, Any]) -> str:
    """The renamed sentence with its pronoun highlighted (what resolvers see)."""
    span = (item["perturbed_pronoun_start"], item["perturbed_pronoun_end"], "knowref-pronoun")
    return highlighted(item["perturbed_sentence"], [span])


def original_html(item: Mapping[str, Any]) -> str:
    """The original sentence with both antecedents and the pronoun highlighted (what screeners see)."""
    spans = [
        (item["antecedent1_start"], item["antecedent1_end"], "knowref-antecedent"),
        (item["antecedent2_start"], item["antecedent2_end"], "knowref-antecedent"),
        (item["pronoun_start"], item["pronoun_end"], "knowref-pronoun"),
    ]
    return highlighted(item["sentence"], spans)


def resolution_task(item: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The task's data. `answer_identity` maps each shown choice back to antecedent1/2 or neither."""
    names = [(item["name1"], "antecedent1"), (item["name2"], "antecedent2")]
    if not names_first_is_name1(item["candidate_id"], seed):
        names.reverse()
    options = [*names, (NEITHER, "neither")]
    return _task(item, sentence_html(item), item["perturbed_sentence"], options)


def screening_task(item: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The task's data; an item screened carefully (`CAREFUL` set on its row at the push) says so in its
    data, so that whoever settles the task from Label Studio alone applies the careful rule."""
    options = [(label, code) for code, label in SCREENING_ANSWERS.items()]
    task = _task(item, original_html(item), item["sentence"], options)
    if item.get(CAREFUL):
        task["data"][CAREFUL] = True
    return task


def _task(
    item: Mapping[str, Any], html_text: str, text: str, options: list[tuple[str, str]]
) -> dict[str, Any]:
    return {
        "data": {
            "item_id": item["candidate_id"],
            "sentence_html": html_text,
            "sentence": text,
            "options": [{"value": label} for label, _ in options],
            "answer_identity": {label: code for label, code in options},
        }
    }


TASK_BUILDERS: dict[str, Callable[[Mapping[str, Any], int], dict[str, Any]]] = {
    SCREENING: screening_task,
    RESOLUTION: resolution_task,
}


def simulated_truth(seed: int) -> Callable[[str], str]:
    """The answer a perfect simulated resolver gives: a seeded coin per item (there is no real truth)."""

    def truth(item_id: str) -> str:
        bit = hashlib.sha256(f"{seed}\x1ftruth\x1f{item_id}".encode()).digest()[0] % 2
        return "antecedent1" if bit == 0 else "antecedent2"

    return truth
