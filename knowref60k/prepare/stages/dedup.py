"""Dedup: a candidate already kept (from any dump), exactly or nearly, is dropped as a copy; so is one
whose very id was kept from another input (a copied candidates file) or earlier in this one."""

from __future__ import annotations

from collections import Counter

from knowref60k.core.stage import Stage
from knowref60k.prepare.context import PrepareContext, Row
from knowref60k.prepare.dedup import SAME_ID


class Deduplicate(Stage[Row, Row]):
    name = "dedup"
    unit = "candidates"

    def __init__(self, context: PrepareContext) -> None:
        super().__init__()
        self.index = context.index
        self.input_name = context.input_name
        # Same-id duplicates by the input that kept the id: where the items already are.
        self.same_id_origins: Counter[str] = Counter()

    def reject(self, item: Row) -> str | None:
        decision = self.index.decide(item, self.input_name)
        if decision.kind == SAME_ID:
            self.same_id_origins[decision.kept_in or "?"] += 1
        return None if decision.is_kept else f"{decision.kind}_duplicate"
