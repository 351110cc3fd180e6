"""What a release is cut with: the labelling rules and the split proportions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import control_answers
from knowref60k.labelling.cost_model import CostConfig
from knowref60k.release.splits import DEFAULT_PROPORTIONS, SPLITS


@dataclass(frozen=True)
class ReleaseConfig:
    labelling: LabellingConfig = field(default_factory=LabellingConfig)
    proportions: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PROPORTIONS))
    # AFLite's features ("ngrams" or "encoder") for a `debiased` config; None: no debiasing.
    debias: str | None = None
    # What a person's vote costs, for the card's cost section.
    cost: CostConfig = field(default_factory=CostConfig)
    # The spaCy pipeline that parses the kept items for the card's subject baseline; None: the
    # extraction's (KNOWREF60K_SPACY_MODEL, else the first installed default). The card names it.
    model: str | None = None

    def __post_init__(self) -> None:
        shares = self.proportions
        # NaN fails the range test too, where it would pass a test of the sum (NaN compares false).
        in_range = all(0 <= share <= 1 for share in shares.values())
        if sorted(shares) != sorted(SPLITS) or not in_range or abs(sum(shares.values()) - 1) > 1e-9:
            given = ", ".join(f"{name} {share:g}" for name, share in shares.items())
            raise UserError(
                f"split proportions must give {', '.join(SPLITS)} each a share in [0, 1], the three "
                f"summing to 1, not {given}"
            )

    def control_answers(self) -> dict[str, str]:
        return control_answers(self.labelling.controls)

    def to_dict(self) -> dict[str, Any]:
        return {
            "labelling": self.labelling.published_dict(),
            "split_proportions": dict(self.proportions),
            "debias": self.debias,
            "cost": self.cost.to_dict(),
        }
