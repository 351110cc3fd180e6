"""How items are labelled: the rules of both stages, and the share of control tasks. Defaults here,
overridable by the `[labelling]` table of the TOML config and by command-line options."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowref60k.core.config import level_in_file, load_section, one_of, refuse_bad_choices
from knowref60k.core.errors import UserError
from knowref60k.labelling.controls import DEFAULT_CONTROLS, RESOLUTION_CONTROLS
from knowref60k.labelling.cost_model import CostConfig, read_calibration
from knowref60k.labelling.decisions import SCREENING, Decision, ResolutionRule, Rule, ScreeningRule
from knowref60k.labelling.levels import NEVER, Expected, Pinned, Rules, cached_choice
from knowref60k.labelling.slots import POLICIES, QueueState, is_audit, late_votes, queue_state

# The screening levels a config file may set or leave to the cost model. Careful screening below 0
# applies to no item (skipping from NEVER neither).
LEVELS = ("skip_screening_above", "careful_screening_below")
NEVER_CAREFUL = 0.0
NONE_PINNED = Pinned()


@dataclass(frozen=True)
class LabellingConfig:
    # Screening: "valid" votes that accept an item, votes with a reason that reject it (docs: the
    # choice of 1 and 1 was measured against 2 and 2 and the other pairs).
    screening_accept_at: int = 1
    screening_reject_at: int = 1
    # False: items go to resolution unscreened (for votes collected before screening existed).
    screening: bool = True
    votes_per_item: int = 5
    keep_at_least: int = 4
    # Wait for every vote of a kept item, for a 5/5 strength, instead of closing it at 4 agreeing.
    fifth_vote: bool = False
    # Items whose validity score is at least this go to resolution unscreened; above 1: never. A file
    # that leaves it out has it chosen by cost with the threshold (knowref60k.settings chooses it).
    skip_screening_above: float = NEVER
    # Items whose validity score is below this are screened carefully: `careful_accept_at` "valid" votes
    # accept them, one vote with a reason still rejects them (an invalid item let through costs four or
    # five resolution votes, a second screening vote one). 0: never; left out of a file, chosen by cost.
    careful_screening_below: float = NEVER_CAREFUL
    careful_accept_at: int = 2
    # The share of tasks pushed to a stage that are control items with a known answer, and the files
    # they are drawn from (knowref60k.labelling.controls); none for a stage without controls.
    control_share: float = 0.05
    controls: tuple[str, ...] = (str(DEFAULT_CONTROLS), str(RESOLUTION_CONTROLS))
    # How many annotators a task admits at once (knowref60k.labelling.slots): "fewest", the fewest further
    # votes that could decide it, or "agreeing", those that decide if they all agree (docs: measured).
    overlap_policy: str = one_of(POLICIES, "fewest")
    # The share of items that collect every vote their rule can take whatever it decided early, so that
    # agreement is measured on a sample early stopping does not select; drawn by a hash of the item id.
    audit_share: float = 0.05
    audit_seed: int = 60_000
    # An account that has answered at least `pause_after_controls` control items (since the lead last
    # resumed it) with fewer than `pause_below_accuracy` of them right is paused: its votes are set aside
    # and it is served nothing until the lead resumes it. 0: never pause.
    pause_after_controls: int = 8
    pause_below_accuracy: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.control_share < 1:
            raise UserError(f"control_share must be in [0, 1), not {self.control_share}")
        if not 0 <= self.audit_share <= 1:
            raise UserError(f"audit_share must be in [0, 1], not {self.audit_share}")
        if self.pause_after_controls < 0 or not 0 <= self.pause_below_accuracy <= 1:
            raise UserError(
                f"pause_after_controls must be 0 or more and pause_below_accuracy in [0, 1], not "
                f"{self.pause_after_controls} and {self.pause_below_accuracy}"
            )
        for level in LEVELS:
            if getattr(self, level) < 0:
                raise UserError(
                    f"{level} must be 0 or more, not {getattr(self, level)}; leave it out of the config file "
                    "to have it chosen by cost"
                )
        refuse_bad_choices(self)
        # Built here so that a bad rule is refused when the settings are read, not in the middle of a collect.
        _ = (self.screening_rule, self.careful_screening_rule, self.resolution_rule)

    @property
    def screening_rule(self) -> ScreeningRule:
        return ScreeningRule(self.screening_accept_at, self.screening_reject_at)

    @property
    def careful_screening_rule(self) -> ScreeningRule:
        return ScreeningRule(self.careful_accept_at, self.screening_reject_at)

    @property
    def resolution_rule(self) -> ResolutionRule:
        return ResolutionRule(self.votes_per_item, self.keep_at_least, self.fifth_vote)

    def rule(self, stage: str, careful: bool = False) -> Rule:
        """The stage's rule; `careful`: the careful screening rule (for an item scored below the level)."""
        if stage != SCREENING:
            return self.resolution_rule
        return self.careful_screening_rule if careful else self.screening_rule

    def screens_carefully(self, score: float | None) -> bool:
        """Whether an item with this validity score is screened by the careful rule."""
        return self.screening and score is not None and score < self.careful_level

    def carefully_screened(self, scores: Mapping[str, float | None]) -> frozenset[str]:
        """The items (by id) whose validity scores put them under the careful screening rule."""
        return frozenset(item for item, score in scores.items() if self.screens_carefully(score))

    def careful_rules(self, stage: str, careful: Iterable[str]) -> dict[str, Rule]:
        """The rule of each of these items in `stage`, as a per-item map for `decide_stage`: the careful
        screening rule in screening (the stage's one rule elsewhere)."""
        return {item: self.rule(stage, careful=True) for item in careful}

    def screening_rules(self, scores: Mapping[str, float | None]) -> dict[str, Rule]:
        """The careful rule of each item whose validity score puts it under it, as the per-item map of
        `decide_stage` in screening (the other items screen by the usual rule)."""
        return self.careful_rules(SCREENING, self.carefully_screened(scores))

    def pauses(self, controls: int, right: int) -> bool:
        """Whether an account with `right` of `controls` control votes right is to be paused."""
        return 0 < self.pause_after_controls <= controls and right < self.pause_below_accuracy * controls

    def is_audit(self, item_id: str) -> bool:
        return is_audit(item_id, self.audit_share, self.audit_seed)

    def queue_state(
        self, stage: str, item_id: str, choices: Sequence[str], annotations: int, careful: bool = False
    ) -> QueueState:
        """What the task of `item_id` in `stage` should admit, given its distinct accepted votes so far
        and the annotations Label Studio counts on it."""
        rule = self.rule(stage, careful)
        return queue_state(rule, choices, annotations, self.overlap_policy, self.is_audit(item_id))

    def late_votes(self, stage: str, decision: Decision, careful: bool = False) -> int:
        """The votes cast after the deciding one that no rule asked for: an audit item's extra votes, up to
        all its rule can take, are audit votes, not late ones."""
        audit = self.is_audit(decision.item_id)
        limit = self.rule(stage, careful).limit
        return late_votes(len(decision.votes), len(decision.late), limit, audit)

    def initial_overlap(self, stage: str) -> int:
        """The overlap of a task nobody has voted on (its project's `maximum_annotations`)."""
        return queue_state(self.rule(stage), (), 0, self.overlap_policy, audit=False).overlap

    def skips_screening(self, score: float | None) -> bool:
        """Whether an item with this validity score goes to resolution unscreened."""
        return self.screening and score is not None and score >= self.skip_level

    @property
    def skip_level(self) -> float:
        """The validity score from which items go to resolution unscreened (none without screening)."""
        return self.skip_screening_above if self.screening else NEVER

    @property
    def careful_level(self) -> float:
        """The validity score below which items are screened carefully (none without screening)."""
        return self.careful_screening_below if self.screening else NEVER_CAREFUL

    @property
    def rules(self) -> Rules:
        screening = self.screening_rule if self.screening else None
        return Rules(screening, self.careful_screening_rule, self.resolution_rule, self.control_share)

    def to_dict(self) -> dict[str, Any]:
        levels = {"skip_screening_above": self.skip_level, "careful_screening_below": self.careful_level}
        return {**dataclasses.asdict(self), **levels}

    def published_dict(self) -> dict[str, Any]:
        """The settings as a release records them: each control file by its name and sha256, not by the
        folder it lies in, so that the same input gives the same release in any checkout."""
        from knowref60k.core.io import file_sha256  # pyarrow with it: not for every command's start

        controls = [{"file": Path(path).name, "sha256": file_sha256(Path(path))} for path in self.controls]
        return {**self.to_dict(), "controls": controls}


def chosen_levels(
    config: LabellingConfig, pinned: Pinned = NONE_PINNED, cost: CostConfig | None = None
) -> Expected | None:
    """The levels the cost model chooses for the rules of `config`, those `pinned` kept as they are, with
    what labelling at them is expected to cost and buy; None without a calibration to choose by."""
    calibration = read_calibration()
    if calibration is None:
        return None
    return cached_choice(calibration, config.rules, cost or CostConfig(), pinned)


def levels_left_to_cost(path: Path | None) -> tuple[str, ...]:
    """The screening levels the file at `path` leaves to the cost model: left out, or negative (earlier
    files wrote -1); without a file, both."""
    if path is None:
        return LEVELS
    return tuple(key for key in LEVELS if _left_to_cost(level_in_file(path, "labelling", key)))


def _left_to_cost(value: Any) -> bool:
    return value is None or (type(value) in (int, float) and value < 0)


def load_labelling_config(path: Path | None = None, **overrides: Any) -> LabellingConfig:
    """Defaults, then the TOML file's `[labelling]` table, then explicit overrides. A level the file
    leaves to the cost model keeps its default here: a command's settings (knowref60k.settings) choose
    it. A relative path of the file's `controls` is taken from the file's folder."""
    config = load_section(LabellingConfig, path, "labelling", overrides, levels_left_to_cost(path))
    if path is None:
        return config
    controls = tuple(str(path.parent / control) for control in config.controls)
    return dataclasses.replace(config, controls=tuple(str(Path(c).resolve()) for c in controls))
