"""The labelling rules, their costs, the roles, annotator quality, Dawid-Skene and the status report, on
votes whose answers are known (no Label Studio here: tests/test_annotation.py runs the real server)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig, chosen_levels, load_labelling_config
from knowref60k.labelling.controls import draw_controls
from knowref60k.labelling.costs import outcomes, plan, resolver_answers, screener_answers
from knowref60k.labelling.decisions import (
    KEPT,
    PENDING,
    REJECTED_AMBIGUOUS,
    REJECTED_NEITHER,
    RESOLUTION,
    RESOLUTION_CHOICES,
    SCREENED_OUT,
    SCREENED_VALID,
    SCREENING,
    SCREENING_CHOICES,
    ResolutionRule,
    ScreeningRule,
    decide,
    decide_stage,
)
from knowref60k.labelling.quality import annotator_quality, dawid_skene
from knowref60k.labelling.separation import NO_ROLE, SCREENED_THIS_ITEM, WRONG_ROLE, explain, separate
from knowref60k.labelling.slots import QueueState
from knowref60k.labelling.status import Pace
from knowref60k.labelling.status import status as labelling_status
from knowref60k.settings.effective import labelling_settings
from tests.test_release import vote

PACES = {SCREENING: Pace(10.0, 1.5), RESOLUTION: Pace(15.0, 4.5)}


def sequence(choices: tuple[str, ...], item: str = "i", stage: str = RESOLUTION) -> list[dict[str, Any]]:
    return [vote(n, choice, n, item, stage=stage) for n, choice in enumerate(choices)]


def full_decision(choices: tuple[str, ...], rule: ResolutionRule) -> tuple[bool, str | None]:
    """Keep or drop (and the label) by counting every one of the votes at once: the rule without stopping."""
    tally = Counter(choices)
    label, strength = max(((n, tally[n]) for n in ("antecedent1", "antecedent2")), key=lambda pair: pair[1])
    return (True, label) if strength >= rule.keep_at_least else (False, None)


# ---- resolution: stopping early keeps and drops exactly what waiting for every vote would ----


@pytest.mark.parametrize(
    "rule",
    [ResolutionRule(), ResolutionRule(fifth_vote=True), ResolutionRule(3, 2), ResolutionRule(7, 5)],
    ids=str,
)
def test_stopping_early_gives_the_decision_of_every_vote_on_every_sequence(rule: ResolutionRule) -> None:
    checked = 0
    for choices in itertools.product(RESOLUTION_CHOICES, repeat=rule.votes_per_item):
        decision = decide("i", sequence(choices), rule)
        assert decision.decided, choices  # all votes in: always decided
        kept = decision.status == KEPT
        assert (kept, decision.label if kept else None) == full_decision(choices, rule), choices
        # The task stops at the first decided prefix, and that prefix's decision is the final one.
        stop = len(decision.votes)
        for size in range(1, stop):
            assert not decide("i", sequence(choices[:size]), rule).decided, (choices, size)
        assert decision.late == tuple(sequence(choices)[stop:])
        checked += 1
    assert checked == 3**rule.votes_per_item


def test_the_stopping_points_and_reasons() -> None:
    rule = ResolutionRule()
    cases = {
        ("antecedent1",) * 4: (KEPT, "antecedent1", 4, 4),
        ("neither", "neither"): (REJECTED_NEITHER, None, 2, 2),
        ("antecedent1", "antecedent2", "neither"): (REJECTED_AMBIGUOUS, None, 1, 3),
        ("antecedent1", "antecedent1", "antecedent2", "antecedent2"): (REJECTED_AMBIGUOUS, None, 2, 4),
        ("antecedent2", "antecedent1", "antecedent2", "antecedent2", "antecedent2"): (
            KEPT,
            "antecedent2",
            4,
            5,
        ),
    }
    for choices, (status, label, strength, stop) in cases.items():
        decision = decide("i", sequence(choices), rule)
        assert (decision.status, decision.label, decision.strength, len(decision.votes)) == (
            status,
            label,
            strength,
            stop,
        ), choices
    assert decide("i", sequence(("antecedent1",) * 3), rule).status == PENDING
    # With the fifth vote, a kept item waits for it, and may end 5 of 5.
    fifth = ResolutionRule(fifth_vote=True)
    assert decide("i", sequence(("antecedent1",) * 4), fifth).status == PENDING
    assert decide("i", sequence(("antecedent1",) * 5), fifth).strength == 5


def test_a_late_vote_never_changes_the_decision_and_a_person_counts_once() -> None:
    votes = [*sequence(("antecedent1",) * 4), vote(9, "antecedent2", 60), vote(10, "neither", 61)]
    decision = decide("i", votes, ResolutionRule())
    assert (decision.status, decision.label, decision.strength) == (KEPT, "antecedent1", 4)
    assert [v["annotator_id"] for v in decision.late] == [9, 10]
    # The same person voting twice counts once, with their latest answer, at the time of their first.
    changed = [vote(0, "neither", 0), *sequence(("antecedent1",) * 4)[1:], vote(0, "antecedent1", 30)]
    redone = decide("i", [*changed, vote(4, "antecedent1", 40)], ResolutionRule())
    assert (redone.status, redone.strength, len(redone.votes)) == (KEPT, 4, 4)


def test_a_rule_that_could_keep_both_names_is_refused() -> None:
    with pytest.raises(UserError, match="more than half"):
        ResolutionRule(votes_per_item=5, keep_at_least=2)
    with pytest.raises(UserError, match="more than half"):
        load_labelling_config(None, keep_at_least=3, votes_per_item=6)


# ---- screening ----


def test_screening_rules() -> None:
    single = ScreeningRule()
    assert decide("i", sequence(("valid",), stage=SCREENING), single).status == SCREENED_VALID
    out = decide("i", sequence(("same_person",), stage=SCREENING), single)
    assert (out.status, out.label) == (SCREENED_OUT, "same_person")
    two = ScreeningRule(2, 2)
    assert two.limit == 3
    assert decide("i", sequence(("valid", "not_a_person"), stage=SCREENING), two).status == PENDING
    tie = decide("i", sequence(("valid", "not_a_person", "broken_or_garbled"), stage=SCREENING), two)
    assert (tie.status, tie.label) == (SCREENED_OUT, "not_a_person")  # a tie goes to the earlier reason
    for choices in itertools.product(SCREENING_CHOICES, repeat=two.limit):
        assert decide("i", sequence(choices, stage=SCREENING), two).decided
    assert ScreeningRule.parse("2,1") == ScreeningRule(2, 1)
    with pytest.raises(UserError, match="ACCEPT,REJECT"):
        ScreeningRule.parse("two")


# ---- what a rule costs ----


def simulate_rule(rule: Any, answer: dict[str, float], runs: int, seed: int) -> tuple[Counter[str], float]:
    rng = random.Random(seed)
    choices, weights = list(answer), list(answer.values())
    ends: Counter[str] = Counter()
    votes = 0
    for _ in range(runs):
        cast: tuple[str, ...] = ()
        while (result := rule.outcome(cast) if cast else None) is None:
            cast = (*cast, rng.choices(choices, weights)[0])
        ends[result[0]] += 1
        votes += len(cast)
    return ends, votes / runs


@pytest.mark.parametrize(
    ("rule", "answer"),
    [
        (ResolutionRule(), resolver_answers(0.9)),
        (ResolutionRule(), resolver_answers(0.6)),
        (ScreeningRule(2, 2), screener_answers(True, 0.8)),
        (ScreeningRule(1, 1), screener_answers(False, 0.9, "same_person")),
    ],
)
def test_exact_costs_agree_with_sampling(rule: Any, answer: dict[str, float]) -> None:
    exact = outcomes(rule, answer)
    ends, mean_votes = simulate_rule(rule, answer, 20_000, seed=1)
    assert mean_votes == pytest.approx(exact.expected_votes, abs=0.05)
    for status in {s for s, _ in exact.probabilities}:
        assert ends[status] / 20_000 == pytest.approx(exact.probability(status), abs=0.015)


def test_costs_by_hand() -> None:
    perfect = outcomes(ResolutionRule(), resolver_answers(1.0))
    assert perfect.expected_votes == 4 and perfect.probability(KEPT) == 1
    # Two votes for two names: one vote of each accepts (p) or rejects (1 - p).
    single = outcomes(ScreeningRule(), screener_answers(True, 0.7))
    assert single.expected_votes == 1 and single.probability(SCREENED_VALID) == pytest.approx(0.7)
    # No screening: every invalid item goes to resolution like a valid one.
    unscreened = plan(3, 1, None, ResolutionRule(), 0.9, 1.0)
    assert unscreened.validity == 0.75 and unscreened.votes_per_kept_valid == pytest.approx(16 / 3)
    screened = plan(3, 1, ScreeningRule(), ResolutionRule(), 1.0, 1.0)
    assert screened.validity == 1 and screened.votes_per_kept_valid == pytest.approx((4 + 12) / 3)


# ---- roles ----


def test_votes_the_roles_forbid_are_refused_with_their_reason() -> None:
    roles = {1: "screener", 2: "resolver", 3: "resolver", 4: None}
    votes = [
        vote(1, "valid", 0, "a", stage=SCREENING),
        vote(2, "antecedent1", 1, "a"),
        vote(3, "valid", 2, "a", stage=SCREENING),  # a resolver screening: refused, and then
        vote(3, "antecedent1", 3, "a"),  # ... their resolution of the same item is refused too
        vote(3, "antecedent2", 4, "b"),  # another item: fine
        vote(1, "antecedent1", 5, "b"),  # a screener resolving
        vote(4, "antecedent1", 6, "b"),  # nobody's role
    ]
    separated = separate(votes, roles)
    assert [(v["annotator_id"], v["item_id"]) for v in separated.accepted] == [(1, "a"), (2, "a"), (3, "b")]
    assert separated.counts() == {NO_ROLE: 1, SCREENED_THIS_ITEM: 1, WRONG_ROLE: 2}
    lines = [explain(v, reason, f"user{v['annotator_id']}@x") for v, reason in separated.refused]
    assert lines[1] == (
        "refused the resolution vote of user3@x on item a: that account screened the item, and screeners "
        "never resolve what they screened"
    )
    assert "is not a screener" in lines[0] and "has no role" in lines[3]
    # In what is accepted, no item has an account among both its screeners and its resolvers.
    for item in ("a", "b"):
        screeners = {
            v["annotator_id"] for v in separated.accepted if v["item_id"] == item and v["stage"] == SCREENING
        }
        resolvers = {
            v["annotator_id"] for v in separated.accepted if v["item_id"] == item and v["stage"] == RESOLUTION
        }
        assert not screeners & resolvers


# ---- quality ----


def crowd(items: int, accuracies: list[float], seed: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Votes of annotators with the given accuracies on items with a known answer."""
    rng = random.Random(seed)
    votes, truth = [], {}
    for number in range(items):
        item = f"i{number:03d}"
        truth[item] = rng.choice(("antecedent1", "antecedent2"))
        for annotator, accuracy in enumerate(accuracies):
            wrong = [c for c in RESOLUTION_CHOICES if c != truth[item]]
            choice = truth[item] if rng.random() < accuracy else rng.choice(wrong)
            votes.append(vote(annotator, choice, annotator, item))
    return votes, truth


def test_dawid_skene_finds_the_answers_and_the_weak_annotator() -> None:
    votes, truth = crowd(200, [0.95, 0.9, 0.9, 0.85, 0.35], seed=3)
    model = dawid_skene(votes)
    right = sum(model.most_likely(item) == answer for item, answer in truth.items())
    assert right >= 196
    assert min(model.accuracy, key=model.accuracy.__getitem__) == 4
    assert model.accuracy[4] < 0.5 < min(model.accuracy[a] for a in range(4))
    assert all(0.0 <= p <= 1.0 for found in model.posteriors.values() for p in found.values())
    assert dawid_skene(votes).posteriors == model.posteriors  # deterministic
    summary = model.summary(truth)
    assert summary["items"] == 200 and summary["items_where_most_likely_answer_differs"] == 200 - right


def test_annotator_quality_against_decisions_and_controls() -> None:
    rule = ResolutionRule()
    votes = [
        *sequence(("antecedent1",) * 4, "a"),
        vote(0, "antecedent1", 10, "control:x"),
        vote(1, "antecedent2", 11, "control:x"),
        vote(4, "antecedent2", 12, "a"),  # late, and against the decision
    ]
    decisions = {"a": decide("a", [v for v in votes if v["item_id"] == "a"], rule)}
    quality = annotator_quality(votes, decisions, {"control:x": "antecedent1"})
    assert quality[0].to_dict() == {
        "votes": 2,
        "agreement_with_decision": 1.0,
        "control_votes": 1,
        "control_accuracy": 1.0,
    }
    assert quality[1].to_dict()["control_accuracy"] == 0.0
    assert quality[4].to_dict()["agreement_with_decision"] == 0.0


# ---- status of a fixed set of votes ----


def test_status_of_a_fixed_vote_set() -> None:
    config = LabellingConfig(controls=())
    tasks = [{"stage": SCREENING, "item_id": i} for i in ("a", "b", "c", "control:k")]
    tasks += [{"stage": RESOLUTION, "item_id": i} for i in ("a", "b")]
    votes = [
        vote(1, "valid", 0, "a", stage=SCREENING),
        vote(1, "not_a_person", 1, "c", stage=SCREENING),
        vote(2, "valid", 2, "b", stage=SCREENING),
        vote(2, "valid", 3, "control:k", stage=SCREENING),
        *[vote(10 + n, "antecedent1", 10 + n, "a") for n in range(4)],
        vote(20, "antecedent2", 20, "b"),
        vote(21, "neither", 21, "b"),
    ]
    found = labelling_status(
        tasks, votes, config, {"control:k": "valid"}, {1: "s1@x", 10: "r0@x"}, {"wrong_role": 2}, PACES
    )
    screening, resolution = found["stages"][SCREENING], found["stages"][RESOLUTION]
    assert {
        k: screening[k]
        for k in ("items", "waiting", "in_progress", "decided", "item_votes", "control_votes", "votes")
    } == {
        "items": 3,
        "waiting": 0,
        "in_progress": 0,
        "decided": 3,
        "item_votes": 3,
        "control_votes": 1,
        "votes": 4,
    }
    # Every vote of the stage is some annotator's: the rows add up.
    assert sum(a["votes"] for a in found["annotators"].values() if a["stage"] == SCREENING) == 4
    assert screening["outcomes"] == {"screened_out:not_a_person": 1, "screened_valid": 2}
    assert {
        k: resolution[k] for k in ("items", "in_progress", "decided", "votes", "votes_per_decided_item")
    } == {
        "items": 2,
        "in_progress": 1,
        "decided": 1,
        "votes": 6,
        "votes_per_decided_item": 4.0,
    }
    assert resolution["outcomes"] == {"kept": 1}
    assert resolution["projected_votes_to_finish"] == 2  # b has 2 of the 4 a decided item took
    assert resolution["projected_from"] == "decided items"
    # Each vote took the 3 s `vote` gives it; 6 votes, 2 more to come at that pace.
    assert (resolution["person_hours"], resolution["projected_person_hours_to_finish"]) == (
        round(6 * 3 / 3600, 2),
        round(2 * 3 / 3600, 2),
    )
    assert resolution["expected_person_hours"] == round(6 * PACES[RESOLUTION].seconds_per_vote / 3600, 2)
    assert (found["kept"], found["votes"], found["votes_per_kept_item"]) == (1, 10, 10.0)
    assert found["refused_votes"] == {"wrong_role": 2}
    assert found["annotators"]["s1@x"] == {
        "stage": SCREENING,
        "votes": 2,
        "agreement_with_decision": 1.0,
        "control_votes": 0,
        "control_accuracy": None,
        "person_hours": round(2 * 3 / 3600, 3),
    }
    assert found["annotators"]["2"]["control_accuracy"] == 1.0  # no email on record: the id


def test_items_scored_below_the_careful_level_need_two_valid_screening_votes() -> None:
    config = LabellingConfig(controls=(), careful_screening_below=0.5)
    assert config.screens_carefully(0.49) and not config.screens_carefully(0.5)
    assert not config.screens_carefully(None) and not config.skips_screening(0.49)
    assert config.rule(SCREENING, careful=True) == ScreeningRule(2, 1) == config.careful_screening_rule
    assert config.rule(SCREENING) == ScreeningRule(1, 1)
    assert config.rule(RESOLUTION, careful=True) == config.resolution_rule
    assert config.carefully_screened({"low": 0.2, "high": 0.7, "unscored": None}) == {"low"}
    rules = config.careful_rules(SCREENING, {"low"})
    assert rules == {"low": ScreeningRule(2, 1)}
    assert config.careful_rules(RESOLUTION, {"low"}) == {"low": config.resolution_rule}
    assert config.screening_rules({"low": 0.2, "high": 0.7}) == {"low": config.careful_screening_rule}
    votes = [vote(1, "valid", 0, "low", stage=SCREENING), vote(1, "valid", 1, "high", stage=SCREENING)]
    decided = decide_stage(votes, SCREENING, config.screening_rule, rules=rules)
    assert (decided["low"].status, decided["high"].status) == (PENDING, SCREENED_VALID)
    second = decide_stage(
        [*votes, vote(2, "valid", 2, "low", stage=SCREENING)], SCREENING, config.screening_rule, rules=rules
    )
    assert second["low"].status == SCREENED_VALID and len(second["low"].votes) == 2
    reason = decide_stage(
        [vote(3, "same_person", 0, "low", stage=SCREENING)], SCREENING, config.screening_rule, rules=rules
    )
    assert (reason["low"].status, reason["low"].label) == (SCREENED_OUT, "same_person")
    # One "valid" vote on a careful task admits one more screener; on another task it closes it.
    assert config.queue_state(SCREENING, "low", ["valid"], 1, careful=True) == QueueState(2, False)
    assert config.queue_state(SCREENING, "high", ["valid"], 1) == QueueState(1, True)
    assert config.to_dict()["careful_screening_below"] == 0.5
    assert not LabellingConfig(controls=(), careful_screening_below=0.0).screens_carefully(0.01)
    assert not LabellingConfig(controls=(), screening=False, careful_screening_below=0.5).screens_carefully(
        0.1
    )
    shipped = labelling_settings()
    levels = chosen_levels(shipped)
    assert levels is not None
    assert (shipped.careful_level, shipped.skip_level) == (levels.careful, levels.skip)
    assert 0 <= shipped.careful_level < shipped.skip_level
    with pytest.raises(UserError, match="at least one vote"):
        LabellingConfig(controls=(), careful_accept_at=0)


def test_status_decides_a_careful_task_by_the_careful_rule() -> None:
    config = LabellingConfig(controls=(), careful_screening_below=0.5)
    tasks = [{"stage": SCREENING, "item_id": "a", "careful": True}, {"stage": SCREENING, "item_id": "b"}]
    votes = [vote(1, "valid", 0, "a", stage=SCREENING), vote(1, "valid", 1, "b", stage=SCREENING)]
    screening = labelling_status(tasks, votes, config, {}, {}, {}, PACES)["stages"][SCREENING]
    assert (screening["in_progress"], screening["decided"], screening["outcomes"]) == (
        1,
        1,
        {"screened_valid": 1},
    )


# ---- controls ----


def test_controls_are_drawn_reproducibly_and_never_beside_their_own_sentence() -> None:
    controls = [{"candidate_id": f"control:{n}", "stage": SCREENING, "sentence": f"s{n}"} for n in range(100)]
    first = draw_controls(controls, SCREENING, items=95, share=0.05, exclude=["s3"], seed=7)
    assert len(first) == 5 and all(row["sentence"] != "s3" for row in first)
    assert draw_controls(controls, SCREENING, 95, 0.05, ["s3"], 7) == first
    # More items later: the earlier draw is kept, and more are added.
    more = draw_controls(controls, SCREENING, 190, 0.05, ["s3"], 7)
    assert more[:5] == first and len(more) == 10
    assert draw_controls(controls, RESOLUTION, 95, 0.05, [], 7) == []
    assert draw_controls(controls, SCREENING, 95, 0.0, [], 7) == []
