"""AFLite (Sakaguchi et al., WinoGrande, AAAI 2020, Algorithm 1).

Each round trains `n` linear models, each on a random `m`-subset of the instances left, and lets each
predict the rest; an instance's score is the share of correct predictions over the times it was held
out. The top `k` instances scoring at least `tau` are removed; the rounds stop when fewer than `k`
qualify or fewer than `m` instances would remain.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from knowref60k.core.errors import UserError
from knowref60k.debias.linear import Array, Features, fit, group_split

log = logging.getLogger(__name__)

# WinoGrande's values, for its ~50k instances.
PAPER_M, PAPER_N, PAPER_K, PAPER_TAU = 10_000, 64, 500, 0.75
# Smaller sets scale m and k with their size: m = a fifth, k = a hundredth (WinoGrande's ratios), so
# AFLite can remove at most four fifths of the set and at most a hundredth per round.
M_SHARE, K_SHARE = 0.2, 0.01
SMALLEST_M = 20


@dataclass(frozen=True)
class Parameters:
    m: int
    n: int = PAPER_N
    k: int = 1
    tau: float = PAPER_TAU
    seed: int = 0

    @classmethod
    def for_size(
        cls,
        size: int,
        m: int | None = None,
        n: int = PAPER_N,
        k: int | None = None,
        tau: float = PAPER_TAU,
        seed: int = 0,
    ) -> Parameters:
        """The paper's parameters scaled to `size` instances where not given; refuses what cannot work."""
        chosen = cls(
            m=m if m is not None else min(PAPER_M, int(size * M_SHARE)),
            n=n,
            k=k if k is not None else max(1, min(PAPER_K, int(size * K_SHARE))),
            tau=tau,
            seed=seed,
        )
        chosen.check(size)
        return chosen

    def check(self, size: int) -> None:
        problems = []
        if self.m < SMALLEST_M:
            problems.append(
                f"m = {self.m}: each model needs at least {SMALLEST_M} training instances "
                f"(with {size} instances the default m is a fifth: at least {SMALLEST_M * 5} instances)"
            )
        if self.m >= size:
            problems.append(
                f"m = {self.m} must be smaller than the {size} instances, or no model predicts any"
            )
        if self.n < 1 or self.k < 1:
            problems.append(f"n and k must be at least 1 (got n = {self.n}, k = {self.k})")
        if not 0.5 <= self.tau <= 1.0:
            problems.append(f"tau = {self.tau} must be between 0.5 and 1 (a share of correct predictions)")
        if problems:
            raise UserError("AFLite cannot run: " + "; ".join(problems))


@dataclass
class Result:
    parameters: Parameters
    scores: Array  # the last score of each instance (NaN if never held out)
    removed_in_round: Array  # 0 for kept instances, else the round (from 1)
    rounds: list[dict[str, float]] = field(default_factory=list)

    @property
    def kept(self) -> Array:
        return np.asarray(self.removed_in_round == 0)

    def summary(self) -> dict[str, object]:
        return {"parameters": asdict(self.parameters), "kept": int(self.kept.sum()), "rounds": self.rounds}


def aflite(
    features: Features,
    labels: Array,
    parameters: Parameters,
    groups: Array | None = None,
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Run AFLite; the same features, labels and parameters give the same result on every machine.
    With `groups` (small ints), each model trains on whole groups: a twin held out is never predicted
    by a model that saw its twin."""
    size = features.shape[0]
    parameters.check(size)
    generator = np.random.default_rng(parameters.seed)
    scores = np.full(size, np.nan)
    removed_in_round = np.zeros(size, dtype=np.int32)
    result = Result(parameters, scores, removed_in_round)
    left = np.arange(size)
    groups = np.arange(size) if groups is None else groups
    largest = int(np.bincount(groups).max()) if size else 0
    if largest > size - parameters.m:
        raise UserError(
            f"AFLite cannot run: {largest} of the {size} instances form one group (twins), so no model "
            f"trained on m = {parameters.m} of them could hold the group out"
        )
    round_number = 0
    while len(left) - parameters.k >= parameters.m:
        round_number += 1
        round_scores = _predictability(
            features[left], labels[left], groups[left], parameters, generator, progress
        )
        scores[left] = round_scores
        qualified = np.flatnonzero(round_scores >= parameters.tau)
        # highest score first, ties by position: deterministic
        order = qualified[np.lexsort((qualified, -round_scores[qualified]))]
        removed = order[: parameters.k]
        removed_in_round[left[removed]] = round_number
        result.rounds.append(
            {"round": round_number, "size": len(left), "qualified": len(qualified), "removed": len(removed)}
        )
        log.info("AFLite round %d: %d instances, %d removed", round_number, len(left), len(removed))
        left = np.delete(left, removed)
        if len(removed) < parameters.k:
            break
    return result


def _predictability(
    features: Features,
    labels: Array,
    groups: Array,
    parameters: Parameters,
    generator: np.random.Generator,
    progress: Callable[[int], None] | None,
) -> Array:
    size = features.shape[0]
    correct = np.zeros(size)
    held_out = np.zeros(size)
    for _ in range(parameters.n):
        train, test = group_split(groups, parameters.m, generator)
        model = fit(features[train], labels[train])
        correct[test] += model.predict(features[test]) == labels[test]
        held_out[test] += 1
        if progress:
            progress(1)
    with np.errstate(invalid="ignore"):
        return np.where(held_out > 0, correct / np.maximum(held_out, 1), np.nan)
