"""What labelling costs and what it must buy: the `[cost]` table of the TOML config (a person's seconds per
vote, the machine's seconds per million comments, optional prices, the release's required validity and
yield), and the calibration the expected figures come from: the gold set's tuning part, each candidate the
default extraction finds in it with its out-of-fold validity score and its verdict
(`data/scorer/calibration.json`, written by `knowref60k measure-extraction`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.config import load_section
from knowref60k.core.errors import UserError
from knowref60k.core.paths import CALIBRATION
from knowref60k.labelling.referents import unclear_share

# Seconds and prices past this are no run's (a million seconds is eleven days a vote); the expected
# figures multiply them by votes and counts, and must stay finite.
LARGEST = 1e6
BOUNDED = (
    "screening_vote_seconds",
    "resolution_vote_seconds",
    "cpu_seconds_per_million_comments",
    "person_hour_price",
    "cpu_hour_price",
    "min_valid_per_million",
)


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
        negative = [name for name in BOUNDED if getattr(self, name) < 0]
        if negative:
            values = ", ".join(f"{name} = {getattr(self, name)}" for name in negative)
            raise UserError(f"{values}: seconds, prices and yields cannot be negative")
        if self.screening_vote_seconds + self.resolution_vote_seconds <= 0:
            raise UserError("screening_vote_seconds and resolution_vote_seconds cannot both be 0")
        if not 0 <= self.min_release_validity <= 1:
            raise UserError(f"min_release_validity must be in [0, 1], not {self.min_release_validity}")
        if not 0.5 < self.annotator_accuracy <= 1:
            raise UserError(f"annotator_accuracy must be in (0.5, 1], not {self.annotator_accuracy}")
        too_large = [name for name in BOUNDED if getattr(self, name) > LARGEST]
        if too_large:
            values = ", ".join(f"{name} = {getattr(self, name):g}" for name in too_large)
            raise UserError(f"{values}: above {LARGEST:,.0f}, which no run can use")
        if not (0 < len(self.currency) <= 8 and self.currency.isprintable() and not self.currency.isspace()):
            raise UserError(
                f"currency must be a code or symbol of 1 to 8 printable characters, not {self.currency!r}"
            )

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
    # Of the valid items, those whose referent a careful reader cannot tell (resolvers split on them):
    # read beside the calibration from the resolution gold's tuning part.
    unclear_share: float = 0.0

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


def calibration_from(
    scored: list[tuple[float, bool]], comments: int, share: float, unclear: float = 0.0
) -> Calibration:
    ordered = sorted(scored)
    scores, correct = tuple(s for s, _ in ordered), tuple(c for _, c in ordered)
    return Calibration(scores, correct, comments, round(share, 6), unclear)


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
        problem = calibration_problem(data)
    except orjson.JSONDecodeError as error:
        problem = str(error)
    if problem is not None:
        raise UserError(
            f"{path}: not a calibration file ({problem}); `knowref60k measure-extraction` writes one to copy "
            "there"
        )
    scored = [(float(score), bool(right)) for score, right in data["candidates"]]
    return calibration_from(scored, data["comments"], float(data["share"]), unclear_share())


def calibration_problem(data: Any) -> str | None:
    """What makes `data` no calibration: `comments` a whole number above 0, `share` in (0, 1], each
    candidate a score in [0, 1] and a verdict 0 or 1 (true or false); None when nothing does."""
    if not isinstance(data, dict) or not {"comments", "share", "candidates"} <= data.keys():
        return "an object with comments, share and candidates"
    comments, share, candidates = data["comments"], data["share"], data["candidates"]
    if not (_is_number(comments) and isinstance(comments, int) and comments > 0):
        return f"comments must be a whole number above 0, not {comments!r}"
    if not (_is_number(share) and 0 < share <= 1):
        return f"share must be a number in (0, 1], not {share!r}"
    if not isinstance(candidates, list):
        return "candidates must be a list of [score, verdict] pairs"
    for number, candidate in enumerate(candidates, 1):
        if not (isinstance(candidate, list) and len(candidate) == 2):
            return f"candidate {number}: not a [score, verdict] pair: {candidate!r}"
        score, verdict = candidate
        if not (_is_number(score) and 0 <= score <= 1):
            return f"candidate {number}: the score must be a number in [0, 1], not {score!r}"
        if verdict not in (0, 1) or not isinstance(verdict, int):
            return f"candidate {number}: the verdict must be 0 or 1 (or false or true), not {verdict!r}"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
