"""What a release is cut with: the agreement rule and the split proportions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.release.agreement import AgreementRule
from knowref60k.release.splits import DEFAULT_PROPORTIONS, SPLITS


@dataclass(frozen=True)
class ReleaseConfig:
    rule: AgreementRule = field(default_factory=AgreementRule)
    proportions: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PROPORTIONS))
    # AFLite's features ("ngrams" or "encoder") for a `debiased` config; None: no debiasing.
    debias: str | None = None

    def __post_init__(self) -> None:
        if sorted(self.proportions) != sorted(SPLITS) or abs(sum(self.proportions.values()) - 1) > 1e-9:
            raise UserError(
                f"split proportions must give {', '.join(SPLITS)} and sum to 1: {self.proportions}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "agreement": self.rule.to_dict(),
            "split_proportions": dict(self.proportions),
            "debias": self.debias,
        }
