"""The annotators a task admits (knowref60k.labelling.slots), against brute force over every vote sequence:
a task that opens only the slots its rule can still use decides every sequence as the rule does, never
admits a vote past the deciding one when votes come one at a time, and never closes undecided."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import (
    RESOLUTION,
    RESOLUTION_CHOICES,
    SCREENING,
    ResolutionRule,
    Rule,
    ScreeningRule,
    first_decided,
)
from knowref60k.labelling.slots import AGREEING, FEWEST, POLICIES, is_audit, queue_state

RULES = [
    ResolutionRule(),
    ResolutionRule(fifth_vote=True),
    ResolutionRule(3, 2),
    ResolutionRule(7, 5),
    ScreeningRule(),
    ScreeningRule(2, 1),
    ScreeningRule(2, 2),
    ScreeningRule(3, 1),
]


def served_one_at_a_time(rule: Rule, sequence: tuple[str, ...], policy: str, audit: bool) -> list[str]:
    """The votes a task admits when the annotators of `sequence` come one after another, each vote
    settled before the next annotator asks."""
    votes: list[str] = []
    while True:
        state = queue_state(rule, votes, len(votes), policy, audit)
        assert state.overlap <= rule.limit or state.closed, (votes, state)
        if state.closed:
            return votes
        assert state.overlap > len(votes), f"open with no free slot after {votes}"
        votes.append(sequence[len(votes)])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("rule", RULES, ids=str)
def test_every_sequence_is_decided_as_the_rule_decides_it_and_nothing_is_wasted(
    rule: Rule, policy: str
) -> None:
    checked = 0
    for sequence in itertools.product(rule.choices, repeat=rule.limit):
        deciding = first_decided(rule, sequence)
        assert deciding is not None  # every rule decides within its limit
        admitted = served_one_at_a_time(rule, sequence, policy, audit=False)
        assert len(admitted) == deciding, (sequence, admitted)
        assert rule.outcome(admitted) == rule.outcome(sequence[:deciding])
        audited = served_one_at_a_time(rule, sequence, policy, audit=True)
        assert len(audited) == rule.limit and first_decided(rule, audited) == deciding
        checked += 1
    assert checked == len(rule.choices) ** rule.limit


def test_the_slots_of_the_default_resolution_rule() -> None:
    rule = ResolutionRule()
    fewest = [queue_state(rule, votes, len(votes), FEWEST, False).overlap for votes in _prefixes()]
    agreeing = [queue_state(rule, votes, len(votes), AGREEING, False).overlap for votes in _prefixes()]
    # At creation: two "neither" votes could decide; four agreeing names are what keeping takes.
    assert (fewest[0], agreeing[0]) == (2, 4)
    # After a1, a1: two more a1 keep it, whichever policy.
    assert (fewest[2], agreeing[2]) == (4, 4)
    # After a1, a2: one "neither" or a2 more ends it (ambiguous); agreeing waits for three more of a name.
    assert (fewest[3], agreeing[3]) == (3, 5)


def _prefixes() -> list[list[str]]:
    return [[], ["antecedent1"], ["antecedent1", "antecedent1"], ["antecedent1", "antecedent2"]]


def test_a_decided_task_closes_at_the_annotations_label_studio_counts() -> None:
    rule = ResolutionRule()
    # A refused vote holds a slot in Label Studio: the overlap counts it, the rule does not.
    assert queue_state(rule, ["antecedent1"] * 2, 3, FEWEST, False).overlap == 5
    state = queue_state(rule, ["antecedent1"] * 4, 5, FEWEST, False)
    assert state.closed and state.overlap == 5
    assert queue_state(ScreeningRule(), [], 0, FEWEST, False).overlap == 1


def test_audit_items_are_a_seeded_share_and_a_bad_policy_is_refused() -> None:
    drawn = Counter(is_audit(f"item-{n}", 0.05, 60_000) for n in range(20_000))
    assert 0.045 < drawn[True] / 20_000 < 0.055
    assert [is_audit(f"item-{n}", 0.05, 60_000) for n in range(50)] == [
        is_audit(f"item-{n}", 0.05, 60_000) for n in range(50)
    ]
    assert [is_audit(f"item-{n}", 0.05, 1) for n in range(2000)] != [
        is_audit(f"item-{n}", 0.05, 60_000) for n in range(2000)
    ]
    assert not any(is_audit(f"item-{n}", 0.0, 1) for n in range(1000))
    with pytest.raises(UserError, match="overlap_policy"):
        LabellingConfig(overlap_policy="greedy")
    with pytest.raises(UserError, match="audit_share"):
        LabellingConfig(audit_share=1.5)


def test_the_config_gives_each_stage_its_rule_and_initial_overlap() -> None:
    config = LabellingConfig(controls=())
    assert config.initial_overlap(RESOLUTION) == 2 and config.initial_overlap(SCREENING) == 1
    agreeing = LabellingConfig(controls=(), overlap_policy=AGREEING)
    assert agreeing.initial_overlap(RESOLUTION) == 4
    assert config.rule(RESOLUTION).choices == RESOLUTION_CHOICES
