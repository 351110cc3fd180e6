"""Atomic writers for candidate Parquet files, quarantine files and stats; readers of our own files."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.errors import StorageError, UserError, storage_error
from knowref60k.core.files import check_readable_file
from knowref60k.core.records import QuarantinedLine

CANDIDATE_SCHEMA = pa.schema(
    [
        pa.field("candidate_id", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("line_number", pa.int64(), nullable=False),
        pa.field("comment_id", pa.string(), nullable=False),
        pa.field("link_id", pa.string()),
        pa.field("subreddit", pa.string()),
        pa.field("created_utc", pa.int64()),
        pa.field("sentence", pa.string(), nullable=False),
        pa.field("connective", pa.string(), nullable=False),
        pa.field("connective_start", pa.int32(), nullable=False),
        pa.field("connective_end", pa.int32(), nullable=False),
        pa.field("antecedent1", pa.string(), nullable=False),
        pa.field("antecedent1_start", pa.int32(), nullable=False),
        pa.field("antecedent1_end", pa.int32(), nullable=False),
        pa.field("antecedent2", pa.string(), nullable=False),
        pa.field("antecedent2_start", pa.int32(), nullable=False),
        pa.field("antecedent2_end", pa.int32(), nullable=False),
        pa.field("pronoun", pa.string(), nullable=False),
        pa.field("pronoun_start", pa.int32(), nullable=False),
        pa.field("pronoun_end", pa.int32(), nullable=False),
        pa.field("pronoun_gender", pa.string(), nullable=False),
        pa.field("validity_score", pa.float64()),
    ]
)
# An annotation-ready item: the candidate, then the perturbation. Offsets index `perturbed_sentence`.
# Answers are stored by identity: name1 replaces antecedent1, name2 replaces antecedent2.
ITEM_SCHEMA = pa.schema(
    [
        *CANDIDATE_SCHEMA,
        pa.field("perturbed_sentence", pa.string(), nullable=False),
        pa.field("name1", pa.string(), nullable=False),
        pa.field("name1_start", pa.int32(), nullable=False),
        pa.field("name1_end", pa.int32(), nullable=False),
        pa.field("name2", pa.string(), nullable=False),
        pa.field("name2_start", pa.int32(), nullable=False),
        pa.field("name2_end", pa.int32(), nullable=False),
        pa.field("perturbed_pronoun_start", pa.int32(), nullable=False),
        pa.field("perturbed_pronoun_end", pa.int32(), nullable=False),
        pa.field("perturbation_seed", pa.int64(), nullable=False),
    ]
)
ROW_GROUP_SIZE = 50_000

log = logging.getLogger(__name__)


def partial_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


@contextmanager
def storage_errors(path: Path, doing: str = "write") -> Iterator[None]:
    """An OSError in the block (no space left, permission denied, ...) as one StorageError naming `path`."""
    try:
        yield
    except OSError as error:
        raise storage_error(error, path, doing) from None


def output_clashes(paths: Iterable[Path], stem_of: Callable[[Path], str]) -> str:
    """The inputs that would write the same output files (one stem), listed for an error message; empty
    when none does."""
    by_stem: dict[str, list[Path]] = {}
    for path in paths:
        by_stem.setdefault(stem_of(path), []).append(path)
    clashes = {stem: group for stem, group in by_stem.items() if len(group) > 1}
    return "; ".join(f"{stem}.*: {', '.join(map(str, group))}" for stem, group in clashes.items())


def refuse_file_as_folder(path: Path, option: str = "--out") -> None:
    """A UserError when `path`, or the nearest of its parents that exists, is a file (the folder could
    then never be made); nothing is created."""
    existing = next((folder for folder in (path, *path.parents) if folder.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == path else f" ({existing})"
        raise UserError(f"{option} {path}{where} is a file, not a folder")


def refuse_output_over_inputs(output: Path, inputs: Iterable[Path], option: str) -> None:
    """A UserError when `output` is one of `inputs` (by its resolved path): writing it would destroy what
    is read."""
    target = output.resolve()
    for path in inputs:
        if path.resolve() == target:
            raise UserError(f"{option} {output} is an input of this command ({path}): write elsewhere")


def output_folder(path: Path, option: str = "--out") -> Path:
    """`path` as a folder to write into, created if missing, before any work is done: a UserError when it,
    or the nearest of its parents that exists, is a file; a StorageError when it cannot be created or
    written into."""
    refuse_file_as_folder(path, option)
    with storage_errors(path, "create the folder"):
        path.mkdir(parents=True, exist_ok=True)
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot write into {path}: permission denied (or a read-only file system)")
    return path


def private_dir(path: Path) -> Path:
    """A folder only its owner can read (0700), created if missing: for databases holding annotators'
    work and logins (Label Studio's SQLite, Prefect's), which would otherwise be world-readable."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` that replaces it only if the block finishes. The file is on the
    disk before it replaces `path`, and the rename is too before this returns (the file, then its folder,
    fsynced): after a crash or power cut `path` is the old file or the new one whole, never a file of
    zero bytes, which a completion marker written after it would vouch for."""
    if path.is_dir():
        raise StorageError(f"cannot write {path}: it is a folder, not a file")
    with storage_errors(path.parent, "create the folder"):
        path.parent.mkdir(parents=True, exist_ok=True)
    temporary = partial_path(path)
    try:
        yield temporary
        with storage_errors(path):
            fsync_path(temporary)
            os.replace(temporary, path)
            fsync_path(path.parent)
    finally:
        temporary.unlink(missing_ok=True)


def fsync_path(path: Path) -> None:
    """Flush a file, or a folder's entries, to the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError as error:
        # Some file systems cannot fsync a folder (EINVAL): the file itself is on the disk already.
        if not (error.errno == errno.EINVAL and path.is_dir()):
            raise
    finally:
        os.close(descriptor)


def distinct_files(paths: Iterable[Path]) -> list[Path]:
    """The paths without repeats of a file listed before (the same path twice, another spelling of it, a
    symbolic or hard link to it), in their order: what is given twice is read and counted once."""
    seen: set[object] = set()
    kept = []
    for path in paths:
        try:
            status = path.stat()
            identity: object = (status.st_dev, status.st_ino)
        except OSError:  # a missing file: its reader says so
            identity = path.resolve()
        if identity not in seen:
            seen.add(identity)
            kept.append(path)
    return kept


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def source_identity(path: Path) -> dict[str, int]:
    """Size and modification time: what tells a finished marker that its input is unchanged."""
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def output_digests(outputs: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Size and sha256 of each output, by file name: what a completion marker vouches for."""
    return {path.name: {"size": path.stat().st_size, "sha256": file_sha256(path)} for path in outputs}


def finished_marker(
    marker: Path, outputs: Sequence[Path], fingerprint: str, source: Path
) -> dict[str, Any] | None:
    """A completion marker's content when the fingerprint and source match, and every output is there
    with the size and sha256 it recorded. A marker that cannot be read (cut short, edited, not ours), or
    whose outputs differ from what it recorded (a file of zero bytes after a crash, one replaced or
    edited since), marks nothing done: the file is redone, with a warning."""
    if not marker.exists():
        return None
    try:
        report = read_report(marker, "completion marker")
    except UserError as problem:
        log.warning("%s; its file is done again", problem)
        return None
    if report.get("fingerprint") != fingerprint or report.get("source") != source_identity(source):
        return None
    difference = unlike_recorded(report.get("outputs"), outputs)
    if difference is not None:
        log.warning("%s: %s; its file is done again", marker, difference)
        return None
    return report


def unlike_recorded(recorded: object, outputs: Sequence[Path]) -> str | None:
    """How the outputs differ from the sizes and sha256s a marker recorded (`output_digests`), or None.
    Sizes are compared first: a damaged file is found without reading it."""
    if not isinstance(recorded, dict):
        return "it records no size and sha256 of its outputs"
    for path in outputs:
        expected = recorded.get(path.name)
        if not isinstance(expected, dict):
            return f"it records no size and sha256 of {path.name}"
        if not path.is_file():
            return f"{path.name} is missing"
        size = path.stat().st_size
        if size != expected.get("size"):
            return f"{path.name} is {size:,} bytes, {expected.get('size')!r} when it was written"
    for path in outputs:
        if file_sha256(path) != recorded[path.name].get("sha256"):
            return f"{path.name} is not the file it was written as (another sha256)"
    return None


def read_report(path: Path, kind: str, fields: Sequence[str] = ()) -> dict[str, Any]:
    """One of our JSON reports (a stats report, a prepare report) as a dict; a UserError naming the file
    when it is not valid JSON, not an object, or lacks one of `fields`."""
    try:
        report = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise UserError(f"{path}: not a {kind}: not valid JSON ({error})") from None
    if not isinstance(report, dict):
        raise UserError(f"{path}: not a {kind}: a JSON {type(report).__name__}, not an object")
    missing = [name for name in fields if name not in report]
    if missing:
        raise UserError(f"{path}: not a {kind}: no {', '.join(repr(name) for name in missing)}")
    return report


def read_table(path: Path, kind: str, columns: Sequence[str]) -> pa.Table:
    """A whole Parquet file of ours; a UserError naming the file when it is not Parquet, is damaged, or
    lacks one of `columns`."""
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:  # pyarrow raises both for a damaged file
        raise UserError(f"{path}: not a readable {kind} file ({error})") from None
    missing = set(columns) - set(table.schema.names)
    if missing:
        raise UserError(f"{path}: not a {kind} file, missing columns {', '.join(sorted(missing))}")
    return table


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Keys in the order the code puts them (a funnel's stages in pipeline order), which is the same on
    every run."""
    with atomic_path(path) as temporary, storage_errors(path):
        temporary.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")


class RowWriter:
    """Streams rows to Parquet in fixed-size row groups, so the bytes do not depend on chunking. A file
    system that refuses is a StorageError naming `target` (the file `path` will become)."""

    def __init__(
        self, path: Path, schema: pa.Schema, metadata: dict[str, str], target: Path | None = None
    ) -> None:
        schema = schema.with_metadata({key.encode(): value.encode() for key, value in metadata.items()})
        self.target = target or path
        with storage_errors(self.target):
            self._writer = pq.ParquetWriter(path, schema, compression="zstd")
        self._schema = schema
        self._pending: list[dict[str, Any]] = []
        self.rows = 0

    def write(self, rows: list[dict[str, Any]]) -> None:
        self._pending.extend(rows)
        while len(self._pending) >= ROW_GROUP_SIZE:
            self._flush(self._pending[:ROW_GROUP_SIZE])
            del self._pending[:ROW_GROUP_SIZE]

    def close(self) -> None:
        if self._pending or self.rows == 0:
            self._flush(self._pending)
        self._pending = []
        with storage_errors(self.target):
            self._writer.close()

    def abandon(self) -> None:
        """Close after a failure, quietly: the file is thrown away, and a second error (the footer does not
        fit on a full disk either) would only hide the first."""
        with suppress(OSError, pa.ArrowException):
            self._writer.close()

    def _flush(self, rows: list[dict[str, Any]]) -> None:
        table = pa.Table.from_pylist(rows, schema=self._schema)
        with storage_errors(self.target):
            self._writer.write_table(table)
        self.rows += len(rows)


def read_rows(
    path: Path, columns: list[str], kind: str, optional: Sequence[str] = ()
) -> Iterator[dict[str, Any]]:
    """Rows of a Parquet file of ours, one row group at a time; a file of another shape is a user error.
    The `optional` columns are read where the file has them."""
    check_readable_file(path, f"{kind} file")
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several kinds for a file that is not Parquet
        raise UserError(f"{path}: not a Parquet file ({error})") from None
    missing = set(columns) - set(parquet.schema_arrow.names)
    if missing:
        raise UserError(f"{path}: not a {kind} file, missing columns {', '.join(sorted(missing))}")
    present = [name for name in optional if name in parquet.schema_arrow.names]
    for batch in parquet.iter_batches(columns=[*columns, *present]):
        yield from batch.to_pylist()


def read_tsv_rows(path: Path) -> Iterator[dict[str, str]]:
    """The rows of one of our TSV files (a header line, tab-separated fields, no quoting) as dicts. A row
    with missing or extra fields is refused here, naming the file and line: `csv.DictReader` would fill
    in None and fail later, far from the cause (and took 1.2-1.35x as long on the 165,000 rows of the
    name lists)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise UserError(f"{path}: empty, expected a header line of tab-separated column names")
    columns = lines[0].split("\t")
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(columns):
            raise UserError(
                f"{path}, line {number}: {len(fields)} tab-separated fields, expected {len(columns)}"
            )
        yield dict(zip(columns, fields, strict=True))


class QuarantineWriter:
    """Quarantine records of one source file, a JSON line each. A file system that refuses is a
    StorageError naming `target` (the file `path` will become)."""

    def __init__(self, path: Path, source: str, target: Path) -> None:
        self.source = source
        self.target = target
        with storage_errors(target):
            self._handle = path.open("wb")

    def write(self, lines: Sequence[QuarantinedLine]) -> None:
        with storage_errors(self.target):
            write_quarantine(self._handle, self.source, lines)

    def close(self) -> None:
        with storage_errors(self.target):
            self._handle.close()

    def abandon(self) -> None:
        """Close after a failure, quietly (see `RowWriter.abandon`)."""
        with suppress(OSError):
            self._handle.close()


def write_quarantine(handle: IO[bytes], source: str, lines: Sequence[QuarantinedLine]) -> None:
    for line in lines:
        record = {
            "source_file": source,
            "line_number": line.line_number,
            "reason": line.reason,
            "detail": line.detail,
            "raw": line.raw,
        }
        if line.size is not None:
            record["bytes"] = line.size
        if line.sha256 is not None:
            record["sha256"] = line.sha256
        handle.write(orjson.dumps(record) + b"\n")


def appended_rows(path: Path, offset: int) -> tuple[list[Any], int]:
    """The JSON lines appended to `path` past byte `offset` (whole lines only: a writer may be
    mid-line), and the offset after them; nothing when the file does not exist yet."""
    if not path.exists():
        return [], offset
    with path.open("rb") as handle:
        handle.seek(offset)
        chunk = handle.read()
    complete = chunk[: chunk.rfind(b"\n") + 1]
    return [orjson.loads(line) for line in complete.splitlines()], offset + len(complete)
