"""How items are labelled: the rules of both stages, and the share of control tasks. Defaults here,
overridable by the `[labelling]` table of the TOML config and by command-line options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from knowref60k.core.config import load_section
from knowref60k.core.errors import UserError
from knowref60k.core.paths import VALIDITY_MODEL
from knowref60k.core.validity_model import operating_point
from knowref60k.labelling.controls import DEFAULT_CONTROLS
from knowref60k.labelling.decisions import ResolutionRule, ScreeningRule


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
    # Items whose validity score is at least this go to resolution unscreened; a negative value: the
    # level the validity model was built with (data/scorer/validity_model.json), above 1: never.
    skip_screening_above: float = -1.0
    # The share of tasks pushed to a stage that are control items with a known answer, and the files
    # they are drawn from (knowref60k.labelling.controls); none for a stage without controls.
    control_share: float = 0.05
    controls: tuple[str, ...] = (str(DEFAULT_CONTROLS),)

    def __post_init__(self) -> None:
        if not 0 <= self.control_share < 1:
            raise UserError(f"control_share must be in [0, 1), not {self.control_share}")
        # Built here so that a bad rule is refused when the settings are read, not in the middle of a collect.
        _ = (self.screening_rule, self.resolution_rule)

    @property
    def screening_rule(self) -> ScreeningRule:
        return ScreeningRule(self.screening_accept_at, self.screening_reject_at)

    @property
    def resolution_rule(self) -> ResolutionRule:
        return ResolutionRule(self.votes_per_item, self.keep_at_least, self.fifth_vote)

    def skips_screening(self, score: float | None) -> bool:
        """Whether an item with this validity score goes to resolution unscreened."""
        return self.screening and score is not None and score >= self.skip_level

    @cached_property
    def skip_level(self) -> float:
        if self.skip_screening_above >= 0:
            return self.skip_screening_above
        if not VALIDITY_MODEL.is_file():
            return 2.0  # no model: screen everything
        return operating_point("skip_screening_above")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "skip_screening_above": self.skip_level}


def load_labelling_config(path: Path | None = None, **overrides: Any) -> LabellingConfig:
    """Defaults, then the TOML file's `[labelling]` table, then explicit overrides. A relative path of
    the file's `controls` is taken from the file's folder."""
    config = load_section(LabellingConfig, path, "labelling", overrides)
    if path is None:
        return config
    controls = tuple(str(path.parent / control) for control in config.controls)
    return dataclasses.replace(config, controls=tuple(str(Path(c).resolve()) for c in controls))
