"""Reading a release back: the researcher's `knowref60k.load_release(path, split)`.

It needs only pyarrow: neither spaCy nor Prefect is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.errors import UserError
from knowref60k.core.io import file_sha256
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


@dataclass(frozen=True)
class FileCheck:
    """One file of a release against its manifest entry: `problem` is None when they agree."""

    path: str
    rows: int | None
    sha256: str | None
    problem: str | None


def manifest_files(manifest: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """The manifest's file entries, each a path inside the release with its rows and sha256 (None where
    an entry has none); a UserError naming the entry when one is not of that shape."""
    entries = manifest["files"]
    if not isinstance(entries, list):
        raise UserError(f"{folder / 'manifest.json'}: 'files' is not a list")
    checked = []
    for number, entry in enumerate(entries):
        path = entry.get("path") if isinstance(entry, dict) else None
        rows = entry.get("rows") if isinstance(entry, dict) else None
        # A path leaving the release ("../x", "/x") would check, or load, a file that is not its own.
        if not isinstance(path, str) or Path(path).is_absolute() or ".." in Path(path).parts:
            raise UserError(f"{folder / 'manifest.json'}: file entry {number} has no path inside the release")
        if rows is not None and type(rows) is not int:
            raise UserError(f"{folder / 'manifest.json'}: {path}: 'rows' is {rows!r}, not a number")
        checked.append({"path": path, "rows": rows, "sha256": entry.get("sha256")})
    return checked


def check_files(folder: Path, entries: list[dict[str, Any]], verify: bool = False) -> list[FileCheck]:
    """Each file against its entry: present, and as many rows as the manifest says (from Parquet's
    metadata, or the JSONL's lines: cheap); with `verify`, also its sha256 (reads every byte)."""
    return [
        FileCheck(entry["path"], entry["rows"], entry["sha256"], _problem(folder, entry, verify))
        for entry in entries
    ]


def _problem(folder: Path, entry: dict[str, Any], verify: bool) -> str | None:
    path = folder / entry["path"]
    if not path.is_file():
        return "missing"
    if entry["rows"] is not None:
        try:
            rows = _rows(path)
        except (pa.ArrowException, OSError) as error:  # a truncated Parquet file has no footer
            return f"not a readable Parquet file ({error})"
        if rows != entry["rows"]:
            return f"{rows} rows where the manifest says {entry['rows']}"
    if verify and file_sha256(path) != entry["sha256"]:
        return "sha256 differs from the manifest's"
    return None


def _rows(path: Path) -> int:
    if path.suffix == ".parquet":
        return int(pq.ParquetFile(path).metadata.num_rows)
    with path.open("rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def damaged(folder: Path, checks: list[FileCheck]) -> UserError | None:
    """One line naming every damaged file and what is wrong with it; None when none is."""
    problems = [f"{check.path}: {check.problem}" for check in checks if check.problem]
    if not problems:
        return None
    return UserError(f"{folder}: damaged release, {len(problems)} file(s): {'; '.join(problems)}")


def load_release(path: str | Path, split: str, debiased: bool = False, verify: bool = False) -> pa.Table:
    """One split of a release as a pyarrow Table (all its shards, in order); with `debiased`, only the
    items AFLite kept (a release cut with `--debias`). The shards are the manifest's, checked against it
    first (present, their row counts; with `verify`, their sha256): a damaged release is a UserError
    naming the file, never fewer rows."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    folder = Path(path)
    manifest = read_manifest(folder)
    if debiased and "aflite" not in manifest:
        raise UserError(f"{path}: this release has no debiased config (cut it with `release --debias`)")
    prefix = f"data/{'debiased/' if debiased else ''}{split}-"
    shards = sorted(
        (entry for entry in manifest_files(manifest, folder) if _is_shard(entry["path"], prefix)),
        key=lambda entry: str(entry["path"]),
    )
    checks = check_files(folder, shards, verify) + _unlisted(folder, prefix, shards)
    problem = damaged(folder, checks)
    if problem:
        raise problem
    if not shards:
        return release_schema("overlap" in manifest, "aflite" in manifest).empty_table()
    return pa.concat_tables(_read_shard(folder / entry["path"]) for entry in shards)


def _is_shard(path: str, prefix: str) -> bool:
    return path.startswith(prefix) and "/" not in path[len(prefix) :] and path.endswith(".parquet")


def _unlisted(folder: Path, prefix: str, shards: list[dict[str, Any]]) -> list[FileCheck]:
    """Shards of the split on disk that the manifest does not list: not the release's, so not loaded."""
    listed = {entry["path"] for entry in shards}
    found = (folder / prefix).parent.glob(f"{Path(prefix).name}*.parquet")
    names = sorted(path.relative_to(folder).as_posix() for path in found)
    return [FileCheck(name, None, None, "not in the manifest") for name in names if name not in listed]


def unlisted_shards(folder: Path, entries: list[dict[str, Any]]) -> list[FileCheck]:
    """Shards of any split on disk that the manifest does not list (`stats` reports them as damage, as
    `load_release` refuses them)."""
    listed = {entry["path"] for entry in entries}
    names = sorted(path.relative_to(folder).as_posix() for path in (folder / "data").rglob("*.parquet"))
    return [FileCheck(name, None, None, "not in the manifest") for name in names if name not in listed]


def _read_shard(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"{path}: not a readable Parquet file ({error})") from None
