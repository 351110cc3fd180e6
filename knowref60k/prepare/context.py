"""What the prepare stages share: configuration, the persistent de-duplication index, the name pools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowref60k.core.config import PrepareConfig
from knowref60k.core.names import NamePool
from knowref60k.prepare.dedup import DedupIndex

# A candidate, then an item, as read from and written to Parquet.
Row = dict[str, Any]


@dataclass(frozen=True)
class PrepareContext:
    config: PrepareConfig
    index: DedupIndex
    pools: Mapping[str, NamePool]
    # The validity score below which a candidate is set aside (the config's, else the model's default).
    validity_threshold: float = 0.0
    # The input being prepared (its items file's stem): the index tells a rerun of it from another input.
    input_name: str = ""
