"""Reading a release back: the researcher's `knowref60k.load_release(path, split)`.

It needs only pyarrow: neither spaCy nor Prefect is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.errors import UserError
from knowref60k.release.schema import release_schema
from knowref60k.release.splits import SPLITS

# What every manifest has (build._manifest writes more).
MANIFEST_KEYS = ("name", "version", "created", "splits", "agreement", "files")


def read_manifest(folder: Path) -> dict[str, Any]:
    """A release's manifest.json, or a UserError saying what is wrong with it."""
    path = folder / "manifest.json"
    if not path.is_file():
        raise UserError(f"{folder}: no manifest.json (is this a release folder?)")
    try:
        manifest = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON ({error})") from None
    missing = [key for key in MANIFEST_KEYS if not isinstance(manifest, dict) or key not in manifest]
    if missing:
        raise UserError(f"{path}: not a release manifest (no {', '.join(missing)})")
    return dict(manifest)


def load_release(path: str | Path, split: str, debiased: bool = False) -> pa.Table:
    """One split of a release as a pyarrow Table (all its shards, in order); with `debiased`, only the
    items AFLite kept (a release cut with `--debias`)."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    manifest = read_manifest(Path(path))
    if debiased and "aflite" not in manifest:
        raise UserError(f"{path}: this release has no debiased config (cut it with `release --debias`)")
    folder = Path(path) / "data" / ("debiased" if debiased else "")
    shards = sorted(folder.glob(f"{split}-*.parquet"))
    if not shards:
        return release_schema("overlap" in manifest, "aflite" in manifest).empty_table()
    return pa.concat_tables(pq.read_table(shard) for shard in shards)
