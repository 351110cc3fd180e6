"""What a pair of rules costs and yields, computed exactly: every sequence of votes a rule can see is
walked with its probability, for annotators who answer right with a given accuracy.

The error model is the conservative one for validity: a screener who errs on an invalid item calls it
valid (the mistake that lets it through), and on a valid item gives a reason at random; a resolver who
errs picks one of the two other answers at random (as the simulated annotators do). A share of valid
items have no referent a careful reader can tell (the resolution gold's `unclear`): resolvers name either
person on them, as the simulated ones do. Resolvers cannot tell an invalid item from a valid one (they
see it renamed), so an invalid item resolves like a clear one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from knowref60k.labelling.decisions import (
    KEPT,
    NAMES,
    RESOLUTION_CHOICES,
    SCREENED_VALID,
    SCREENING_REASONS,
    VALID,
    ResolutionRule,
    Rule,
    ScreeningRule,
)


@dataclass(frozen=True)
class Outcomes:
    """The probability of each (status, label) a rule ends in, and the expected number of votes."""

    probabilities: Mapping[tuple[str, str | None], float]
    expected_votes: float

    def probability(self, status: str) -> float:
        return sum(p for (s, _), p in self.probabilities.items() if s == status)


def outcomes(rule: Rule, answer: Mapping[str, float]) -> Outcomes:
    """Every path of votes drawn independently from `answer` (choice -> probability) until `rule`
    decides."""
    ends: dict[tuple[str, str | None], float] = {}
    expected = 0.0
    paths: list[tuple[tuple[str, ...], float]] = [((), 1.0)]
    while paths:
        choices, probability = paths.pop()
        result = rule.outcome(choices) if choices else None
        if result is not None:
            ends[result[0], result[1]] = ends.get((result[0], result[1]), 0.0) + probability
            expected += probability * len(choices)
            continue
        paths.extend(((*choices, choice), probability * p) for choice, p in answer.items() if p > 0)
    return Outcomes(ends, expected)


def screener_answers(valid: bool, accuracy: float, reason: str = SCREENING_REASONS[0]) -> dict[str, float]:
    if valid:
        return {VALID: accuracy, **{r: (1 - accuracy) / len(SCREENING_REASONS) for r in SCREENING_REASONS}}
    return {reason: accuracy, VALID: 1 - accuracy}


def resolver_answers(accuracy: float, truth: str = RESOLUTION_CHOICES[0]) -> dict[str, float]:
    return {choice: accuracy if choice == truth else (1 - accuracy) / 2 for choice in RESOLUTION_CHOICES}


def unclear_answers() -> dict[str, float]:
    """A resolver on an item whose referent a careful reader cannot tell: either person."""
    return {name: 1 / len(NAMES) for name in NAMES}


@dataclass(frozen=True)
class Resolving:
    """One resolution rule on a valid item (a share of them unclear) and on an invalid one: the chance
    it is kept, and the votes it takes."""

    keep_valid: float
    keep_invalid: float
    votes_valid: float
    votes_invalid: float


def resolving(rule: ResolutionRule, accuracy: float, unclear_share: float) -> Resolving:
    clear = outcomes(rule, resolver_answers(accuracy))
    unclear = outcomes(rule, unclear_answers())

    def valid(on_clear: float, on_unclear: float) -> float:
        return (1 - unclear_share) * on_clear + unclear_share * on_unclear

    return Resolving(
        keep_valid=valid(clear.probability(KEPT), unclear.probability(KEPT)),
        keep_invalid=clear.probability(KEPT),
        votes_valid=valid(clear.expected_votes, unclear.expected_votes),
        votes_invalid=clear.expected_votes,
    )


@dataclass(frozen=True)
class Plan:
    """Expected results of screening every item with one rule, then resolving the accepted ones."""

    kept_valid: float
    kept_invalid: float
    screening_votes: float
    resolution_votes: float

    @property
    def validity(self) -> float:
        kept = self.kept_valid + self.kept_invalid
        return self.kept_valid / kept if kept else 0.0

    @property
    def votes_per_kept_valid(self) -> float:
        return (self.screening_votes + self.resolution_votes) / self.kept_valid if self.kept_valid else 0.0


def plan(
    valid: int,
    invalid: int,
    screening: ScreeningRule | None,
    resolution: ResolutionRule,
    screener_accuracy: float,
    resolver_accuracy: float,
    unclear_share: float = 0.0,
) -> Plan:
    """`valid` and `invalid` items through screening (None: no screening) and resolution, `unclear_share`
    of the valid ones without a referent a careful reader can tell."""
    resolved = resolving(resolution, resolver_accuracy, unclear_share)
    if screening is None:
        accept_valid = accept_invalid = 1.0
        screening_votes = 0.0
    else:
        on_valid = outcomes(screening, screener_answers(True, screener_accuracy))
        on_invalid = outcomes(screening, screener_answers(False, screener_accuracy))
        accept_valid, accept_invalid = (
            on_valid.probability(SCREENED_VALID),
            on_invalid.probability(SCREENED_VALID),
        )
        screening_votes = valid * on_valid.expected_votes + invalid * on_invalid.expected_votes
    return Plan(
        kept_valid=valid * accept_valid * resolved.keep_valid,
        kept_invalid=invalid * accept_invalid * resolved.keep_invalid,
        screening_votes=screening_votes,
        resolution_votes=valid * accept_valid * resolved.votes_valid
        + invalid * accept_invalid * resolved.votes_invalid,
    )


def summed(plans: Iterable[Plan]) -> Plan:
    """Items split between rules (by score band): the sum of their plans."""
    parts = list(plans)
    return Plan(*(sum(getattr(part, name) for part in parts) for name in Plan.__dataclass_fields__))
