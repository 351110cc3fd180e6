"""What a release is cut with: the labelling rules and the split proportions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowref60k.core.errors import UserError
from knowref60k.core.io import file_sha256
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import control_answers
from knowref60k.release.splits import DEFAULT_PROPORTIONS, SPLITS


@dataclass(frozen=True)
class ReleaseConfig:
    labelling: LabellingConfig = field(default_factory=LabellingConfig)
    proportions: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PROPORTIONS))
    # AFLite's features ("ngrams" or "encoder") for a `debiased` config; None: no debiasing.
    debias: str | None = None

    def __post_init__(self) -> None:
        if sorted(self.proportions) != sorted(SPLITS) or abs(sum(self.proportions.values()) - 1) > 1e-9:
            raise UserError(
                f"split proportions must give {', '.join(SPLITS)} and sum to 1: {self.proportions}"
            )

    def control_answers(self) -> dict[str, str]:
        return control_answers(self.labelling.controls)

    def to_dict(self) -> dict[str, Any]:
        return {
            "labelling": {
                **self.labelling.to_dict(),
                "controls": [
                    {"file": Path(p).name, "sha256": file_sha256(Path(p))} for p in self.labelling.controls
                ],
            },
            "split_proportions": dict(self.proportions),
            "debias": self.debias,
        }
