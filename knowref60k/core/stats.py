"""Per-stage counters (in / out / dropped per reason) that merge across workers and files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowref60k.core.errors import UserError


@dataclass
class StageStats:
    """What one stage saw, in its unit: items in, items forwarded, and every drop with its reason."""

    unit: str = "items"
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
            "unit": self.unit,
            "in": self.total,
            "out": self.forwarded,
            "dropped": dict(sorted(self.dropped.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageStats:
        return cls(data["unit"], data["in"], data["out"], Counter(data["dropped"]))


@dataclass
class PipelineStats:
    """The funnel of one chunk, file or run: its stages' counters in pipeline order."""

    stages: dict[str, StageStats] = field(default_factory=dict)
    quarantined: int = 0

    def __getitem__(self, stage: str) -> StageStats:
        return self.stages[stage]

    def merge(self, other: PipelineStats) -> PipelineStats:
        for name, stage in other.stages.items():
            self.stages.setdefault(name, StageStats(stage.unit)).merge(stage)
        self.quarantined += other.quarantined
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": {name: stage.to_dict() for name, stage in self.stages.items()},
            "quarantined": self.quarantined,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineStats:
        stages = {name: StageStats.from_dict(stage) for name, stage in data["stages"].items()}
        return cls(stages=stages, quarantined=data["quarantined"])


def merge_stats(stats_files: Iterable[Path]) -> PipelineStats:
    """The funnel over the `stats` of several finished files (extraction's or prepare's reports); a
    UserError naming the first file that is not such a report."""
    total = PipelineStats()
    for path in stats_files:
        total.merge(read_stats(path))
    return total


def person_detection_of(stats_files: Iterable[Path]) -> str:
    """The person detection mode(s) the extraction reports were made with ("score", the default, or a
    rule), so that a funnel says which of them it counts."""
    from knowref60k.core.io import read_report  # here: io loads pyarrow, which a funnel table does not need

    modes = set()
    for path in stats_files:
        config = read_report(path, "stats report").get("config")
        modes.add(str(config.get("person_detection", "?")) if isinstance(config, dict) else "?")
    return ", ".join(sorted(modes))


def read_stats(path: Path) -> PipelineStats:
    """The funnel of one finished file's report; a UserError naming the file when it holds none."""
    from knowref60k.core.io import read_report  # here: io loads pyarrow, which a funnel table does not need

    report = read_report(path, "stats report", ("stats",))
    try:
        return PipelineStats.from_dict(report["stats"])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UserError(f"{path}: not a stats report: its 'stats' are malformed ({error!r})") from None
