"""The three labelling levels chosen together by cost: the validity threshold (a candidate scored below it
is held back, not sent), the level from which items go to resolution unscreened, and the one below which
two screeners must accept an item. Comments are abundant and people's time is not, so the levels are the
ones that spend the fewest person-seconds per kept valid item while the kept items are expected to be
`min_release_validity` valid and at least `min_valid_per_million` valid items are sent per million comments.

Every expected figure is exact for the calibration (`knowref60k.labelling.cost_model`): each band of
scores holds the calibration's valid and invalid candidates, which go through the band's rule as
`knowref60k.labelling.costs` computes for annotators right `annotator_accuracy` of the time, with the
resolution gold's share of valid items whose referent is unclear (`Calibration.unclear_share`). A level that
is set in the config is kept as it is (`Pinned`), and the others are chosen around it; the settings
(knowref60k.settings.effective.RunConfig) choose them once, when a command reads its config."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from knowref60k.core.errors import UserError
from knowref60k.labelling.cost_model import Calibration, CostConfig
from knowref60k.labelling.costs import outcomes, resolving, screener_answers
from knowref60k.labelling.decisions import SCREENED_VALID, ResolutionRule, ScreeningRule

Array = npt.NDArray[np.float64]

# A level above every score: no item skips screening.
NEVER = 2.0
# The levels tried: every hundredth of the score, and any level the config sets.
GRID = tuple(round(step / 100, 2) for step in range(101))
# Two choices whose person-seconds differ by less than this are a tie (broken towards more yield).
TIE = 1e-9
# The yield target must hold at the one-sided 95% lower bound of the calibration's count of valid
# candidates (normal approximation to the Poisson): a level is not chosen on a lucky handful.
YIELD_CONFIDENCE_Z = 1.645


@dataclass(frozen=True)
class Rules:
    """The labelling rules the levels route items to; `screening` None: items go unscreened. Control
    items make up `control_share` of each stage's tasks and take about the votes an item does."""

    screening: ScreeningRule | None
    careful: ScreeningRule
    resolution: ResolutionRule
    control_share: float = 0.0


@dataclass(frozen=True)
class Pinned:
    """Levels the config sets (None: chosen by cost)."""

    threshold: float | None = None
    skip: float | None = None
    careful: float | None = None


@dataclass(frozen=True)
class Expected:
    """The levels and what labelling at them is expected to cost and buy, per the calibration."""

    threshold: float
    skip: float
    careful: float
    # Of the candidates sent: the valid share, and the valid ones per million comments read.
    precision: float
    valid_per_million: float
    # Its 95% lower bound, which the yield target is held to.
    valid_per_million_low: float
    # Of the kept items: the valid share, and the valid ones per million comments read.
    validity: float
    kept_valid_per_million: float
    screening_votes_per_kept_valid: float
    resolution_votes_per_kept_valid: float
    person_seconds_per_kept_valid: float
    cpu_seconds_per_kept_valid: float
    meets_yield: bool

    @property
    def votes_per_kept_valid(self) -> float:
        return self.screening_votes_per_kept_valid + self.resolution_votes_per_kept_valid

    def price_per_kept_valid(self, cost: CostConfig) -> float:
        return (
            self.person_seconds_per_kept_valid * cost.person_hour_price
            + self.cpu_seconds_per_kept_valid * cost.cpu_hour_price
        ) / 3600

    def to_dict(self) -> dict[str, Any]:
        return {
            **{
                key: round(value, 4) if isinstance(value, float) else value
                for key, value in asdict(self).items()
            },
            "votes_per_kept_valid": round(self.votes_per_kept_valid, 4),
        }


@dataclass(frozen=True)
class RuleRates:
    """One rule on one item: the chance it passes the item on, and the votes it takes, for a valid item
    and an invalid one."""

    accept_valid: float
    accept_invalid: float
    votes_valid: float
    votes_invalid: float


UNSCREENED = RuleRates(1.0, 1.0, 0.0, 0.0)


def screening_rates(rule: ScreeningRule, accuracy: float) -> RuleRates:
    on_valid = outcomes(rule, screener_answers(True, accuracy))
    on_invalid = outcomes(rule, screener_answers(False, accuracy))
    return RuleRates(
        on_valid.probability(SCREENED_VALID),
        on_invalid.probability(SCREENED_VALID),
        on_valid.expected_votes,
        on_invalid.expected_votes,
    )


@dataclass(frozen=True)
class Bands:
    """Valid and invalid calibration candidates scoring at least each level (`levels`, ascending, NEVER
    last), as arrays indexed like `levels`."""

    levels: Array
    valid: Array
    invalid: Array

    @classmethod
    def of(cls, calibration: Calibration, pinned: Pinned) -> Bands:
        extra = {level for level in (pinned.threshold, pinned.skip, pinned.careful) if level is not None}
        levels = np.array(sorted({*GRID, *(min(level, NEVER) for level in extra), NEVER}))
        scores = np.array(calibration.scores, dtype=float)
        correct = np.array(calibration.correct, dtype=float)
        below = np.searchsorted(scores, levels, side="left")
        valid_below = np.concatenate(([0.0], np.cumsum(correct)))[below]
        valid = correct.sum() - valid_below
        return cls(levels, valid, (len(scores) - below) - valid)

    def index(self, level: float) -> int:
        return int(np.searchsorted(self.levels, min(level, NEVER), side="left"))


def choose_levels(calibration: Calibration, rules: Rules, cost: CostConfig, pinned: Pinned) -> Expected:
    """The cheapest levels in person-seconds per kept valid item that meet both targets. A threshold the
    config sets is not held to the yield target (the team chose its yield), and where no screening levels
    reach the validity target around it the most valid ones are taken (their figures say so); a UserError
    only when the threshold is left to the cost model and no levels meet both targets."""
    search = Search.of(calibration, rules, cost, pinned)
    chosen = search.cheapest(require_yield=pinned.threshold is None)
    if chosen is not None:
        return chosen
    if pinned.threshold is not None:
        return search.most_valid()
    closest = search.most_valid()
    raise UserError(
        f"no labelling levels reach min_release_validity {cost.min_release_validity} with "
        f"min_valid_per_million {cost.min_valid_per_million} (the closest: validity "
        f"{closest.validity:.3f} at {closest.valid_per_million:.1f} valid per million); lower one in "
        "[cost] or set [prepare] validity_threshold"
    )


@lru_cache(maxsize=32)
def cached_choice(calibration: Calibration, rules: Rules, cost: CostConfig, pinned: Pinned) -> Expected:
    return choose_levels(calibration, rules, cost, pinned)


def cost_curve(
    calibration: Calibration, rules: Rules, cost: CostConfig, pinned: Pinned, thresholds: tuple[float, ...]
) -> list[Expected]:
    """For each threshold, the cheapest skip and careful levels around it that reach the validity target
    (the most valid ones when none does), whatever the yield."""
    curve = []
    for threshold in thresholds:
        search = Search.of(calibration, rules, cost, Pinned(threshold, pinned.skip, pinned.careful))
        best = search.cheapest(require_yield=False)
        curve.append(best or search.most_valid())
    return curve


class Search:
    """Every combination of levels the pins allow, lower thresholds first, then higher skip levels, then
    lower careful levels, with the expected figures of each as arrays."""

    def __init__(
        self, bands: Bands, triples: npt.NDArray[np.int64], figures: dict[str, Array], cost: CostConfig
    ):
        self.bands, self.triples, self.figures, self.cost = bands, triples, figures, cost
        self.validity = figures["validity"]
        self.valid_per_million = figures["valid_per_million"]

    @classmethod
    def of(cls, calibration: Calibration, rules: Rules, cost: CostConfig, pinned: Pinned) -> Search:
        bands = Bands.of(calibration, pinned)
        triples = np.array(list(_triples(bands, rules, pinned)), dtype=np.int64).reshape(-1, 3)
        return cls(bands, triples, _figures(bands, triples, rules, cost, calibration), cost)

    def cheapest(self, require_yield: bool) -> Expected | None:
        """The first of the cheapest combinations that reach the validity target (and the yield's)."""
        eligible = (self.validity >= self.cost.min_release_validity - TIE) & (
            self.figures["kept_valid_per_million"] > 0
        )
        if require_yield:
            eligible &= self.figures["meets_yield"].astype(bool)
        if not eligible.any():
            return None
        seconds = np.where(eligible, self.figures["person_seconds_per_kept_valid"], np.inf)
        return self.expected(int(np.flatnonzero(seconds <= seconds.min() + TIE)[0]))

    def most_valid(self) -> Expected:
        """The combination with the most valid kept items expected (then the most yield)."""
        return self.expected(int(np.lexsort((self.valid_per_million, self.validity))[-1]))

    def expected(self, row: int) -> Expected:
        t, s, c = self.triples[row]
        # A careful level at the threshold screens nothing carefully: 0, as the config says "never".
        levels = {
            "threshold": float(self.bands.levels[t]),
            "skip": float(self.bands.levels[s]),
            "careful": float(self.bands.levels[c]) if c > t else 0.0,
        }
        values = {name: float(column[row]) for name, column in self.figures.items() if name != "meets_yield"}
        return Expected(**levels, **values, meets_yield=bool(self.figures["meets_yield"][row]))


def _triples(bands: Bands, rules: Rules, pinned: Pinned) -> Iterator[tuple[int, int, int]]:
    last = len(bands.levels) - 1
    for t in _choices(bands, pinned.threshold, 0, last - 1):
        if rules.screening is None:
            yield t, t, t
            continue
        for s in reversed(_choices(bands, pinned.skip, t, last)):
            for c in _choices(bands, pinned.careful, t, s):
                yield t, s, c


def _choices(bands: Bands, pinned: float | None, low: int, high: int) -> list[int]:
    """The indices a level may take between `low` and `high` (both included): the pinned one, clamped
    into that range, or all of them."""
    if pinned is None:
        return list(range(low, high + 1))
    return [min(max(bands.index(pinned), low), high)]


def _figures(
    bands: Bands, triples: npt.NDArray[np.int64], rules: Rules, cost: CostConfig, calibration: Calibration
) -> dict[str, Array]:
    """The expected figures of each combination: its candidates in three bands (from the skip level up
    unscreened, from the careful level up the usual screening, below it the careful one)."""
    accuracy, per_million = cost.annotator_accuracy, calibration.per_million
    screened = rules.screening is not None
    rates = (
        UNSCREENED,
        screening_rates(rules.screening, accuracy) if rules.screening is not None else UNSCREENED,
        screening_rates(rules.careful, accuracy) if screened else UNSCREENED,
    )
    resolved = resolving(rules.resolution, accuracy, calibration.unclear_share)
    t, s, c = triples.T
    valid = (bands.valid[s], bands.valid[c] - bands.valid[s], bands.valid[t] - bands.valid[c])
    invalid = (bands.invalid[s], bands.invalid[c] - bands.invalid[s], bands.invalid[t] - bands.invalid[c])
    accepted_valid = sum(v * r.accept_valid for v, r in zip(valid, rates, strict=True))
    accepted_invalid = sum(i * r.accept_invalid for i, r in zip(invalid, rates, strict=True))
    screening = sum(
        v * r.votes_valid + i * r.votes_invalid for v, i, r in zip(valid, invalid, rates, strict=True)
    )
    resolution = accepted_valid * resolved.votes_valid + accepted_invalid * resolved.votes_invalid
    kept_valid = accepted_valid * resolved.keep_valid
    kept_invalid = accepted_invalid * resolved.keep_invalid
    sent = bands.valid[t] + bands.invalid[t]
    low = np.maximum(bands.valid[t] - YIELD_CONFIDENCE_Z * np.sqrt(bands.valid[t]), 0.0)
    with_controls = 1 / (1 - rules.control_share)
    screening, resolution = screening * with_controls, resolution * with_controls
    seconds = screening * cost.screening_vote_seconds + resolution * cost.resolution_vote_seconds
    return {
        "precision": _share(bands.valid[t], sent),
        "valid_per_million": bands.valid[t] * per_million,
        "validity": _share(kept_valid, kept_valid + kept_invalid),
        "kept_valid_per_million": kept_valid * per_million,
        "screening_votes_per_kept_valid": _per(screening, kept_valid),
        "resolution_votes_per_kept_valid": _per(resolution, kept_valid),
        "person_seconds_per_kept_valid": _per(seconds, kept_valid),
        "cpu_seconds_per_kept_valid": _per(cost.cpu_seconds_per_million_comments, kept_valid * per_million),
        "valid_per_million_low": low * per_million,
        "meets_yield": low * per_million >= cost.min_valid_per_million - TIE,
    }


def _per(amount: Array | float, kept: Array) -> Array:
    """`amount` per kept item; infinite where none is kept (so never the cheapest)."""
    return np.where(kept > 0, amount / np.where(kept > 0, kept, 1.0), np.inf)


def _share(part: Array, whole: Array) -> Array:
    return np.where(whole > 0, part / np.where(whole > 0, whole, 1.0), 0.0)
