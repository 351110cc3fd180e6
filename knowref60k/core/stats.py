"""Per-stage counters (in / out / dropped per reason) that merge across workers and files."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# The funnel's stages in order; every counter belongs to one of them.
STAGES = ("read", "clean", "prefilter", "split", "shape", "connective", "antecedent", "language")


@dataclass
class StageStats:
    """What one stage saw: items in, items forwarded, and every drop with its reason."""

    total: int = 0
    forwarded: int = 0
    dropped: Counter[str] = field(default_factory=Counter)

    def drop(self, reason: str, count: int = 1) -> None:
        self.dropped[reason] += count

    def merge(self, other: StageStats) -> None:
        self.total += other.total
        self.forwarded += other.forwarded
        self.dropped.update(other.dropped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "in": self.total,
            "out": self.forwarded,
            "dropped": dict(sorted(self.dropped.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageStats:
        return cls(total=data["in"], forwarded=data["out"], dropped=Counter(data["dropped"]))


@dataclass
class PipelineStats:
    """The whole funnel for one chunk, file or run. Units differ by stage: see `UNITS`."""

    stages: dict[str, StageStats] = field(default_factory=lambda: {name: StageStats() for name in STAGES})
    quarantined: int = 0

    def __getitem__(self, stage: str) -> StageStats:
        return self.stages[stage]

    def merge(self, other: PipelineStats) -> PipelineStats:
        for name, stage in other.stages.items():
            self.stages.setdefault(name, StageStats()).merge(stage)
        self.quarantined += other.quarantined
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": {name: {"unit": UNITS[name], **stage.to_dict()} for name, stage in self.stages.items()},
            "quarantined": self.quarantined,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineStats:
        stages = {name: StageStats.from_dict(stage) for name, stage in data["stages"].items()}
        return cls(stages=stages, quarantined=data["quarantined"])


UNITS = {
    "read": "lines",
    "clean": "comments",
    "prefilter": "paragraphs",
    "split": "paragraphs -> sentences",
    "shape": "sentences",
    "connective": "sentences",
    "antecedent": "sentences",
    "language": "sentences",
    "index": "sentences",
    "dedup": "candidates",
    "perturb": "items",
}
