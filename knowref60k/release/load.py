"""Reading a release back: the researcher's `knowref60k.load_release(path, split)`.

It needs only pyarrow: neither spaCy nor Prefect is imported.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.errors import UserError
from knowref60k.release.schema import release_schema
from knowref60k.release.splits import SPLITS


def load_release(path: str | Path, split: str) -> pa.Table:
    """One split of a release as a pyarrow Table (all its shards, in order)."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    manifest = Path(path) / "manifest.json"
    if not manifest.is_file():
        raise UserError(f"{path}: no manifest.json (is this a release folder?)")
    shards = sorted((Path(path) / "data").glob(f"{split}-*.parquet"))
    if not shards:
        return release_schema("overlap" in orjson.loads(manifest.read_bytes())).empty_table()
    return pa.concat_tables(pq.read_table(shard) for shard in shards)
