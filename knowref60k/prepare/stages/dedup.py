"""Dedup: a candidate already kept (from any dump), exactly or nearly, is dropped as a copy."""

from __future__ import annotations

from knowref60k.core.stage import Stage
from knowref60k.prepare.context import PrepareContext, Row


class Deduplicate(Stage[Row, Row]):
    name = "dedup"
    unit = "candidates"

    def __init__(self, context: PrepareContext) -> None:
        super().__init__()
        self.index = context.index

    def reject(self, item: Row) -> str | None:
        decision = self.index.decide(item)
        return None if decision.is_kept else f"{decision.kind}_duplicate"
