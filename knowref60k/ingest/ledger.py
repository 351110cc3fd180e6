"""A ledger of processed dumps: each dump is processed once per config; a changed file or config is
processed again, and a failed one is retried.

A dump is known by name, size, modification time and sha256; the sha256 is computed only when the
size or time changed, so polling a folder of 30 GB dumps stays cheap.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from knowref60k.core.io import file_sha256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS dumps (
    file TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    outcome TEXT NOT NULL CHECK (outcome IN ('running', 'done', 'failed')),
    error TEXT,
    input_check TEXT,
    PRIMARY KEY (file, sha256, config_hash)
);
"""


@dataclass(frozen=True)
class Dump:
    path: Path
    size: int
    mtime_ns: int
    sha256: str


class Ledger:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.executescript(_SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(dumps)")}
        if "input_check" not in columns:  # a ledger from before completeness was recorded
            self.db.execute("ALTER TABLE dumps ADD COLUMN input_check TEXT")

    def close(self) -> None:
        self.db.close()

    def identify(self, path: Path) -> Dump:
        stat = path.stat()
        known = self.db.execute(
            "SELECT sha256 FROM dumps WHERE file = ? AND size = ? AND mtime_ns = ? LIMIT 1",
            (path.name, stat.st_size, stat.st_mtime_ns),
        ).fetchone()
        sha256 = known[0] if known else file_sha256(path)
        return Dump(path, stat.st_size, stat.st_mtime_ns, sha256)

    def pending(self, paths: Iterable[Path], config_hash: str) -> list[Dump]:
        """The dumps not yet done with this config: new, changed, processed with another config, or failed."""
        todo = []
        for path in sorted(paths):
            dump = self.identify(path)
            done = self.db.execute(
                "SELECT 1 FROM dumps WHERE file = ? AND sha256 = ? AND config_hash = ? AND outcome = 'done'",
                (path.name, dump.sha256, config_hash),
            ).fetchone()
            if not done:
                todo.append(dump)
        return todo

    def start(self, dump: Dump, config_hash: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO dumps (file, size, mtime_ns, sha256, config_hash, started, outcome) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running')",
            (dump.path.name, dump.size, dump.mtime_ns, dump.sha256, config_hash, _now()),
        )
        self.db.commit()

    def finish(
        self, dump: Dump, config_hash: str, error: str | None = None, input_check: str | None = None
    ) -> None:
        """`input_check`: whether the dump looked complete when it was read (InputCheck)."""
        self.db.execute(
            "UPDATE dumps SET finished = ?, outcome = ?, error = ?, input_check = ? "
            "WHERE file = ? AND sha256 = ? AND config_hash = ?",
            (
                _now(),
                "failed" if error else "done",
                error,
                input_check,
                dump.path.name,
                dump.sha256,
                config_hash,
            ),
        )
        self.db.commit()

    def entries(self) -> list[dict[str, object]]:
        cursor = self.db.execute("SELECT * FROM dumps ORDER BY started, file")
        columns = [column[0] for column in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor]


def settled(dumps: Sequence[Dump], seconds: float) -> tuple[list[Dump], list[Dump]]:
    """(dumps unchanged, dumps that changed) `seconds` after they were identified: a dump still being
    downloaded or copied into the folder keeps growing, and processing it now would mark it done
    without its last lines. Its size and modification time are looked at again after the wait (and the
    sha256 that `identify` took in between); a dump gone meanwhile counts as changed."""
    if not dumps:
        return [], []
    time.sleep(seconds)
    unchanged: list[Dump] = []
    changed: list[Dump] = []
    for dump in dumps:
        try:
            stat = dump.path.stat()
            same = (stat.st_size, stat.st_mtime_ns) == (dump.size, dump.mtime_ns)
        except FileNotFoundError:
            same = False
        (unchanged if same else changed).append(dump)
    return unchanged, changed


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
