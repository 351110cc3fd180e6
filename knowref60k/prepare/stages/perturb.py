"""Perturb: both antecedents replaced by new names of the pronoun's gender, drawn from a seeded pool."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping

from knowref60k.core.names import NamePool
from knowref60k.core.stage import Stage
from knowref60k.prepare.perturb import perturb
from knowref60k.prepare.rows import Row

log = logging.getLogger(__name__)


class Perturb(Stage[Row, Row]):
    name = "perturb"
    unit = "items"

    def __init__(self, pools: Mapping[str, NamePool], seed: int) -> None:
        super().__init__()
        self.pools = pools
        self.seed = seed

    def run(self, items: Iterable[Row]) -> Iterator[Row]:
        for row in items:
            try:
                perturbed = perturb(row, self.pools, self.seed)
            except ValueError as error:
                log.warning("%s: %s", row["candidate_id"], error)
                self.count("no_distinct_names")
                continue
            self.count(None)
            yield {**row, **perturbed.columns()}
