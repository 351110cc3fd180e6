"""Validity threshold: a candidate whose validity score is below the threshold is set aside, not made an
item; `prepare` writes the set-aside candidates, score and all, beside the items
(`*.below-threshold.parquet`), so a later model or threshold can still take them up. A candidate without
a score (from an extraction that did not score) goes on."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.core.stage import Stage
from knowref60k.core.stats import PipelineStats
from knowref60k.prepare.rows import Row

BELOW_THRESHOLD = "below_validity_threshold"
# The file beside the items that holds them: a candidates file, which prepare can take again, thus.
HELD_BACK_SUFFIX = ".below-threshold.parquet"
SEND_HELD_BACK = "knowref60k prepare FILE --out ITEMS --validity-threshold 0"


class ValidityThreshold(Stage[Row, Row]):
    name = "threshold"
    unit = "candidates"

    def __init__(self, threshold: float) -> None:
        super().__init__()
        if not 0 <= threshold <= 1:  # a level still to be chosen must not reach here as a marker
            raise ValueError(f"the validity threshold must be a score in [0, 1], not {threshold}")
        self.threshold = threshold

    def run(self, items: Iterable[Row]) -> Iterator[Row]:
        for row in items:
            score = row.get("validity_score")
            if score is not None and score < self.threshold:
                self.count(BELOW_THRESHOLD)
                self.set_aside.append(row)
                continue
            self.count(None)
            yield row


def held_back(stats: PipelineStats) -> int:
    """The candidates a prepare funnel's threshold held back."""
    stage = stats.stages.get(ValidityThreshold.name)
    return stage.dropped.get(BELOW_THRESHOLD, 0) if stage else 0
