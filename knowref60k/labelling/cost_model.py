"""What labelling costs and what it must buy: the `[cost]` table of the TOML config (a person's seconds per
vote, the machine's seconds per million comments, optional prices, the release's required validity and
yield), and the calibration the expected figures come from: the gold set's tuning part, each candidate the
default extraction finds in it with its out-of-fold validity score and its verdict
(`data/scorer/calibration.json`, written by `knowref60k eval`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.config import load_section
from knowref60k.core.errors import UserError
from knowref60k.core.paths import CALIBRATION


@dataclass(frozen=True)
class CostConfig:
    # A person's seconds per vote (docs/labelling-operations.md says where the defaults come from).
    screening_vote_seconds: float = 10.0
    resolution_vote_seconds: float = 15.0
    # The machine's seconds to extract a million comments (`make bench`: CPU time of both workers).
    cpu_seconds_per_million_comments: float = 35.0
    # Optional prices (0: not priced), for the report only: the levels minimise person-time.
    person_hour_price: float = 0.0
    cpu_hour_price: float = 0.0
    currency: str = "USD"
    # What the chosen levels must reach in expectation: the kept items' validity, and the valid items sent
    # to labelling per million comments read.
    min_release_validity: float = 0.97
    min_valid_per_million: float = 30.0
    # The chance a screener or resolver answers right, in the expected figures.
    annotator_accuracy: float = 0.9

    def __post_init__(self) -> None:
        negative = [
            name
            for name in (
                "screening_vote_seconds",
                "resolution_vote_seconds",
                "cpu_seconds_per_million_comments",
                "person_hour_price",
                "cpu_hour_price",
                "min_valid_per_million",
            )
            if getattr(self, name) < 0
        ]
        if negative:
            values = ", ".join(f"{name} = {getattr(self, name)}" for name in negative)
            raise UserError(f"{values}: seconds, prices and yields cannot be negative")
        if self.screening_vote_seconds + self.resolution_vote_seconds <= 0:
            raise UserError("screening_vote_seconds and resolution_vote_seconds cannot both be 0")
        if not 0 <= self.min_release_validity <= 1:
            raise UserError(f"min_release_validity must be in [0, 1], not {self.min_release_validity}")
        if not 0.5 < self.annotator_accuracy <= 1:
            raise UserError(f"annotator_accuracy must be in (0.5, 1], not {self.annotator_accuracy}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_cost_config(path: Path | None = None, **overrides: Any) -> CostConfig:
    """Defaults, then the TOML file's `[cost]` table, then explicit overrides."""
    return load_section(CostConfig, path, "cost", overrides)


@dataclass(frozen=True)
class Calibration:
    """The tuning part's candidates, ascending by score, each with whether it is correct; one candidate
    stands for `1e6 / (comments * share)` per million comments (the part's share of all candidates)."""

    scores: tuple[float, ...]
    correct: tuple[bool, ...]
    comments: int
    share: float

    @property
    def per_million(self) -> float:
        return 1e6 / (self.comments * self.share)

    def to_dict(self) -> dict[str, Any]:
        return {
            "comments": self.comments,
            "share": self.share,
            "candidates": [
                [score, int(right)] for score, right in zip(self.scores, self.correct, strict=True)
            ],
        }


def calibration_from(scored: list[tuple[float, bool]], comments: int, share: float) -> Calibration:
    ordered = sorted(scored)
    return Calibration(tuple(s for s, _ in ordered), tuple(c for _, c in ordered), comments, round(share, 6))


def read_calibration(path: Path = CALIBRATION) -> Calibration | None:
    """The shipped calibration; None when there is none (no validity model to choose levels by). Read
    again when the file changes, so a long-running receiver or watch sees a new one."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return _read_calibration(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _read_calibration(path: Path, mtime_ns: int, size: int) -> Calibration:
    try:
        data = orjson.loads(path.read_bytes())
        scored = [(float(score), bool(right)) for score, right in data["candidates"]]
        return calibration_from(scored, int(data["comments"]), float(data["share"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise UserError(
            f"{path}: not a calibration file ({error}); `knowref60k eval` writes one to copy there"
        ) from None
