"""The stage protocol: a name, the unit it counts, and one method that says keep or the reason to drop.

A pipeline is a list of stage classes. Each stage counts what it saw, forwarded and dropped (by reason)
in a `StageStats`, so the funnel, its stage names and units all come from that list. A stage gets what it
needs as typed constructor arguments; what it leaves out of its output goes to one of two declared side
outputs: `quarantined` (input that could not be used) and `set_aside` (input kept for later).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from knowref60k.core.records import QuarantinedLine
from knowref60k.core.stats import PipelineStats, StageStats

In = TypeVar("In")
Out = TypeVar("Out")


class Stage(Generic[In, Out]):
    """One step of a pipeline. A filter implements `reject`; a stage that turns each item into other
    items (a comment into paragraphs, say) overrides `run` and still counts through `self.stats`."""

    name: ClassVar[str]
    unit: ClassVar[str]

    def __init__(self) -> None:
        self.stats = StageStats(self.unit)
        # Input that could not be used, kept with its reason (the read stage's unparsable lines).
        self.quarantined: list[QuarantinedLine] = []
        # Input left out of the output but kept, for the pipeline to write beside it (the candidates the
        # validity threshold held back).
        self.set_aside: list[In] = []

    def reject(self, item: In) -> str | None:
        """None keeps the item; a string is the reason it is dropped."""
        raise NotImplementedError(f"{type(self).__name__} must implement reject() or run()")

    def count(self, reason: str | None) -> bool:
        """Counts one item in, and out (no reason) or dropped with its reason; True when it passes."""
        self.stats.total += 1
        if reason is None:
            self.stats.forwarded += 1
            return True
        self.stats.drop(reason)
        return False

    def run(self, items: Iterable[In]) -> Iterator[Out]:
        """The items that pass, lazily: the counts are complete once the output is consumed."""
        # `count`, inlined: this loop runs for every comment and paragraph of a dump.
        stats, reject = self.stats, self.reject
        for item in items:
            reason = reject(item)
            stats.total += 1
            if reason is None:
                stats.forwarded += 1
                yield item  # type: ignore[misc]
            else:
                stats.dropped[reason] += 1


def stage_modules(stages: Sequence[type[Stage[Any, Any]]]) -> tuple[str, ...]:
    """The modules the stages live in: what, with its imports, decides what a pipeline outputs."""
    return tuple(stage.__module__ for stage in stages)


def empty_stats(stages: Sequence[type[Stage[Any, Any]]]) -> PipelineStats:
    """A funnel with one empty counter per stage, in pipeline order."""
    return PipelineStats({stage.name: StageStats(stage.unit) for stage in stages})


def chain(stages: Sequence[Stage[Any, Any]], items: Iterable[Any]) -> Iterable[Any]:
    """The items that pass every stage, lazily: the stages' counts are complete once it is consumed."""
    for stage in stages:
        items = stage.run(items)
    return items


def quarantined_by(stages: Iterable[Stage[Any, Any]]) -> list[QuarantinedLine]:
    return [line for stage in stages for line in stage.quarantined]


def set_aside_by(stages: Iterable[Stage[Any, Any]]) -> list[Any]:
    """What the stages set aside, in pipeline order."""
    return [item for stage in stages for item in stage.set_aside]


def collect_stats(stages: Iterable[Stage[Any, Any]], into: PipelineStats) -> PipelineStats:
    """The stages' counters, in order, and how many inputs they quarantined."""
    for stage in stages:
        into.stages[stage.name] = stage.stats
        into.quarantined += len(stage.quarantined)
    return into
