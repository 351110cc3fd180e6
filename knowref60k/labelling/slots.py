"""How many annotators a task admits at once: its votes so far plus the further votes its stage's rule can
still use.

Label Studio serves a task to anyone while its locks and annotations are fewer than its `overlap`. A task
created with overlap 5 is opened by five people together, and the fifth vote is in flight before the
fourth decides: the savings of stopping early vanish when people label side by side. So each task's
overlap opens only the slots its rule can still use, and is raised (or the task closed) as each vote is
settled. Two policies, both computed from the rule objects (no second copy of any rule):

- `fewest`: the fewest further votes that could decide the task (two at creation with the default
  resolution rule, since two "neither" votes decide). Nothing is wasted; almost every vote needs a step up.
- `agreeing`: the further votes that decide if every one of them agrees with the choice given most so
  far (at creation, the most that any one unanimous answer needs: four names). Steps up rarely; the slots
  an early rejection leaves open are wasted.

An *audit* item (a seeded share of items) always collects every vote its rule can take, so that the
annotators' agreement can be measured on a sample that early stopping does not select. Its decision is
still the rule's; its votes after the deciding one are audit votes, not late ones.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from knowref60k.core.errors import UserError
from knowref60k.labelling.decisions import Rule, first_decided

FEWEST, AGREEING = "fewest", "agreeing"
POLICIES = (FEWEST, AGREEING)


def fewest_to_decide(rule: Rule, choices: Sequence[str]) -> int:
    """The fewest further votes after the undecided `choices` that could decide the task."""
    for further in range(1, rule.limit - len(choices) + 1):
        for extra in itertools.product(rule.choices, repeat=further):
            if rule.outcome((*choices, *extra)) is not None:
                return further
    raise ValueError(f"{rule.describe()}: no further votes decide {list(choices)}")


def agreeing_to_decide(rule: Rule, choices: Sequence[str]) -> int:
    """The further votes that decide the undecided `choices` if all of them repeat the choice given most so
    far (any of the tied ones, the one needing most; at creation, any choice)."""
    tally = Counter(choices)
    most = max(tally.values(), default=0)
    leaders = [choice for choice in rule.choices if tally[choice] == most]
    return max(_unanimous(rule, choices, leader) for leader in leaders)


def _unanimous(rule: Rule, choices: Sequence[str], choice: str) -> int:
    for further in range(1, rule.limit - len(choices) + 1):
        if rule.outcome((*choices, *[choice] * further)) is not None:
            return further
    return fewest_to_decide(rule, choices)


SLOTS = {FEWEST: fewest_to_decide, AGREEING: agreeing_to_decide}


@dataclass(frozen=True)
class QueueState:
    """What a task's queue state should be: the annotators it admits in all, and whether it is closed."""

    overlap: int
    closed: bool


def queue_state(rule: Rule, choices: Sequence[str], annotations: int, policy: str, audit: bool) -> QueueState:
    """The state of a task whose distinct accepted votes are `choices` (in the order cast), out of the
    `annotations` Label Studio counts on it (refused votes included: they hold a slot there). An audit item
    stays open until it has every vote its rule can take."""
    if policy not in SLOTS:
        raise UserError(f"overlap policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    if audit:
        further = max(0, rule.limit - len(choices))
    elif first_decided(rule, choices) is not None:
        further = 0
    else:
        further = SLOTS[policy](rule, choices)
    if further == 0:
        return QueueState(max(1, annotations), True)
    return QueueState(annotations + further, False)


def late_votes(deciding: int, after: int, limit: int, audit: bool) -> int:
    """Of the `after` votes cast after the `deciding` votes that decided an item, those no rule asked for:
    an audit item's, up to every vote its rule can take (`limit`), are audit votes, not late ones."""
    return after - min(after, limit - deciding) if audit else after


def is_audit(item_id: str, share: float, seed: int) -> bool:
    """Whether the item is in the audit sample: a seeded hash of its id below `share`."""
    digest = hashlib.sha256(f"{seed}\x1faudit\x1f{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64
