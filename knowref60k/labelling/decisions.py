"""When a task is decided, and what was decided.

Two stages label an item. **Screening** shows the original sentence and asks whether the two highlighted
antecedents are two different people the highlighted pronoun could refer to; **resolution** shows the
renamed sentence and asks which of the two the pronoun refers to. Each stage has a sequential rule: the
votes are read in the order they were cast, one per annotator, and the task is decided by the first
prefix that settles it. Votes cast after that point are *late*: kept and counted, never used to change
the decision.

The resolution rule stops once `keep_at_least` annotators agree on a name, or once that can no longer
happen. Because `keep_at_least` is more than half of `votes_per_item`, this keeps and drops exactly the
items that waiting for every vote would (`tests/test_labelling.py` checks every sequence of votes).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from knowref60k.core.errors import UserError

RESOLUTION = "resolution"
SCREENING = "screening"
STAGES = (SCREENING, RESOLUTION)

NAMES = ("antecedent1", "antecedent2")
RESOLUTION_CHOICES = (*NAMES, "neither")
# The reasons a screener may give, in the order a tie between them is broken.
SCREENING_REASONS = ("not_a_person", "same_person", "pronoun_refers_elsewhere", "broken_or_garbled")
VALID = "valid"
SCREENING_CHOICES = (VALID, *SCREENING_REASONS)
CHOICES = {SCREENING: SCREENING_CHOICES, RESOLUTION: RESOLUTION_CHOICES}

KEPT, REJECTED_NEITHER, REJECTED_AMBIGUOUS = "kept", "rejected_neither", "rejected_ambiguous"
SCREENED_VALID, SCREENED_OUT = "screened_valid", "screened_out"
PENDING = "pending"


class Rule(Protocol):
    """A sequential rule: `outcome` of the choices so far, or None while undecided."""

    @property
    def limit(self) -> int: ...

    @property
    def choices(self) -> tuple[str, ...]: ...

    def outcome(self, choices: Sequence[str]) -> tuple[str, str | None, int] | None: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class ResolutionRule:
    """Keep an item when `keep_at_least` of `votes_per_item` distinct annotators choose the same name.
    With `fifth_vote`, a kept item waits for all `votes_per_item` votes (for a 5/5 strength)."""

    votes_per_item: int = 5
    keep_at_least: int = 4
    fifth_vote: bool = False
    flag_annotators_below: float = 0.6

    def __post_init__(self) -> None:
        if not 0 < self.keep_at_least <= self.votes_per_item or 2 * self.keep_at_least <= self.votes_per_item:
            raise UserError(
                f"keep-at-least must be more than half of votes-per-item and at most it "
                f"({self.keep_at_least} of {self.votes_per_item}): two names could both be kept otherwise"
            )

    @property
    def limit(self) -> int:
        return self.votes_per_item

    @property
    def choices(self) -> tuple[str, ...]:
        return RESOLUTION_CHOICES

    def outcome(self, choices: Sequence[str]) -> tuple[str, str | None, int] | None:
        tally = Counter(choices)
        label, strength = max(((name, tally[name]) for name in NAMES), key=lambda pair: pair[1])
        remaining = self.votes_per_item - len(choices)
        if strength >= self.keep_at_least and (remaining == 0 or not self.fifth_vote):
            return KEPT, label, strength
        if strength + remaining < self.keep_at_least:
            # The "neither" votes alone leave too few to agree: the item is not a valid problem.
            if tally["neither"] > self.votes_per_item - self.keep_at_least:
                return REJECTED_NEITHER, None, tally["neither"]
            return REJECTED_AMBIGUOUS, None, strength
        return None

    def describe(self) -> str:
        stop = (
            f"stop once {self.keep_at_least} agree on a name (after all {self.votes_per_item} votes with "
            "--fifth-vote)"
            if self.fifth_vote
            else f"stop once {self.keep_at_least} agree on a name"
        )
        keep = f"keep at >= {self.keep_at_least} of {self.votes_per_item} agreeing"
        return f"{keep}; {stop} or once that is out of reach"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ScreeningRule:
    """Accept an item as valid after `accept_at` "valid" votes, reject it after `reject_at` votes that
    give a reason; the reason given most often (ties in `SCREENING_REASONS` order) is the item's."""

    accept_at: int = 1
    reject_at: int = 1

    def __post_init__(self) -> None:
        if self.accept_at < 1 or self.reject_at < 1:
            raise UserError(f"screening needs at least one vote to accept and to reject, not {self}")

    @property
    def limit(self) -> int:
        return self.accept_at + self.reject_at - 1

    @property
    def choices(self) -> tuple[str, ...]:
        return SCREENING_CHOICES

    def outcome(self, choices: Sequence[str]) -> tuple[str, str | None, int] | None:
        valid = sum(choice == VALID for choice in choices)
        if valid >= self.accept_at:
            return SCREENED_VALID, None, valid
        reasons = Counter(choice for choice in choices if choice != VALID)
        if sum(reasons.values()) >= self.reject_at:
            reason = max(SCREENING_REASONS, key=lambda r: (reasons[r], -SCREENING_REASONS.index(r)))
            return SCREENED_OUT, reason, sum(reasons.values())
        return None

    def describe(self) -> str:
        return f"valid after {self.accept_at} valid vote(s), out after {self.reject_at} vote(s) with a reason"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def parse(cls, text: str) -> ScreeningRule:
        """ "ACCEPT,REJECT" as given on the command line, e.g. "2,2"."""
        try:
            accept, reject = (int(part) for part in text.split(","))
        except ValueError:
            raise UserError(
                f"a screening rule is two whole numbers ACCEPT,REJECT (e.g. 2,2), not {text!r}"
            ) from None
        return cls(accept, reject)


@dataclass(frozen=True)
class Decision:
    item_id: str
    status: str
    # Resolution: the name kept; screening: the reason an item was screened out.
    label: str | None
    strength: int
    votes: tuple[Mapping[str, Any], ...]
    late: tuple[Mapping[str, Any], ...] = ()

    @property
    def decided(self) -> bool:
        return self.status != PENDING


def distinct_votes(votes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One vote per annotator (their latest), in the order the votes were first cast."""
    latest: dict[Any, Mapping[str, Any]] = {}
    for vote in sorted(votes, key=lambda v: (v["updated_at"], v["annotation_id"])):
        latest[vote["annotator_id"]] = vote
    return sorted(latest.values(), key=lambda v: (v["created_at"], v["annotation_id"]))


def decide(item_id: str, votes: Iterable[Mapping[str, Any]], rule: Rule) -> Decision:
    """The first prefix of the item's distinct votes that `rule` settles decides; the votes after it are
    late. Pending while no prefix settles it."""
    counted = distinct_votes(votes)
    choices = [vote["choice"] for vote in counted]
    size = first_decided(rule, choices)
    if size is None:
        return Decision(item_id, PENDING, None, 0, tuple(counted))
    result = rule.outcome(choices[:size])
    assert result is not None
    return Decision(item_id, *result, tuple(counted[:size]), tuple(counted[size:]))


def first_decided(rule: Rule, choices: Sequence[str]) -> int | None:
    """The length of the first prefix of `choices` that `rule` settles; None while none does."""
    for size in range(1, min(len(choices), rule.limit) + 1):
        if rule.outcome(choices[:size]) is not None:
            return size
    return None


def decide_stage(
    votes: Iterable[Mapping[str, Any]],
    stage: str,
    rule: Rule,
    item_ids: Iterable[str] = (),
    rules: Mapping[str, Rule] | None = None,
) -> dict[str, Decision]:
    """The decision on every item of `stage` that has votes, and on every item of `item_ids` (pending
    when it has none); an item of `rules` is decided by its own rule there (careful screening)."""
    by_item: dict[str, list[Mapping[str, Any]]] = {item_id: [] for item_id in item_ids}
    for vote in votes:
        if vote["stage"] == stage:
            by_item.setdefault(vote["item_id"], []).append(vote)
    own = rules or {}
    return {
        item_id: decide(item_id, item_votes, own.get(item_id, rule))
        for item_id, item_votes in sorted(by_item.items())
    }
