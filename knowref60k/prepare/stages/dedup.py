"""Dedup: a candidate already kept (from any dump), exactly or nearly, is dropped as a copy; so is one
whose very id was kept from another input (a copied candidates file) or earlier in this one."""

from __future__ import annotations

from collections import Counter

from knowref60k.core.stage import Stage
from knowref60k.prepare.dedup import SAME_ID, DedupIndex
from knowref60k.prepare.rows import Row


class Deduplicate(Stage[Row, Row]):
    name = "dedup"
    unit = "candidates"

    def __init__(self, index: DedupIndex, input_name: str, same_id_origins: Counter[str]) -> None:
        """`input_name`: the input being prepared (its items file's stem), by which the index tells a rerun
        of it from another input; `same_id_origins` counts the same-id duplicates by the input that kept
        the id (where the items already are), for the caller that owns it to report."""
        super().__init__()
        self.index = index
        self.input_name = input_name
        self.same_id_origins = same_id_origins

    def reject(self, item: Row) -> str | None:
        decision = self.index.decide(item, self.input_name)
        if decision.kind == SAME_ID:
            self.same_id_origins[decision.kept_in or "?"] += 1
        return None if decision.is_kept else f"{decision.kind}_duplicate"
