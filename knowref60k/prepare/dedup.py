"""De-duplication across every dump ever processed: exact (normalised text) and near (MinHash LSH).

The index is a SQLite file. Kept items keep their MinHash signature there, so a later run rebuilds the
same LSH and finds copies of items kept months ago. The first item seen is kept; every later copy is
recorded with the kept item's id, the kind of match, the similarity, and where the copy came from.

A kept item also records the input (the candidates file's name, which names its items file) that kept
it. Asking again about a kept id from that same input, in a later run, says "kept" again: a rerun
rewrites that input's items file, so nothing is doubled. The same id from another input (a copy of a
candidates file under another name), or twice within one run of an input, would be a second item
with the same id: it is a duplicate, recorded in `repeats` with the input that kept it.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import StorageError, UserError
from knowref60k.core.io import storage_errors

MINHASH_SEED = 1
# Named explicitly: stored signatures (uint32 each) must be read back with the scheme that made them.
MINHASH_SCHEME = "affine32"
_SPACES = re.compile(r"\s+")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kept (
    candidate_id TEXT PRIMARY KEY,
    exact_key TEXT NOT NULL UNIQUE,
    signature BLOB NOT NULL,
    source_file TEXT NOT NULL,
    comment_id TEXT NOT NULL,
    input_name TEXT
);
CREATE TABLE IF NOT EXISTS repeats (
    candidate_id TEXT NOT NULL REFERENCES kept(candidate_id),
    input_name TEXT NOT NULL,
    kept_input TEXT NOT NULL,
    PRIMARY KEY (candidate_id, input_name)
);
CREATE TABLE IF NOT EXISTS copies (
    candidate_id TEXT PRIMARY KEY,
    kept_candidate_id TEXT NOT NULL REFERENCES kept(candidate_id),
    kind TEXT NOT NULL CHECK (kind IN ('exact', 'near')),
    similarity REAL NOT NULL,
    source_file TEXT NOT NULL,
    comment_id TEXT NOT NULL
);
"""


def normalise(sentence: str) -> str:
    """Case, whitespace, punctuation and Unicode folded: what makes two sentences 'the same'."""
    folded = unicodedata.normalize("NFKC", sentence).casefold()
    kept = "".join(" " if unicodedata.category(char).startswith(("P", "S")) else char for char in folded)
    return _SPACES.sub(" ", kept).strip()


def shingles(normalised: str, size: int) -> list[bytes]:
    words = normalised.split()
    if len(words) <= size:
        return [" ".join(words).encode()]
    return [" ".join(words[i : i + size]).encode() for i in range(len(words) - size + 1)]


# The kind of a duplicate that has the very id of a kept item (another input had it, or this one twice).
SAME_ID = "same_id"


@dataclass(frozen=True)
class Decision:
    """What the index says about one item: kept, or a copy of `kept_id` ('exact', 'near' or SAME_ID);
    `kept_in` names the input that kept it, where the index knows it."""

    kind: str
    kept_id: str
    similarity: float
    kept_in: str | None = None

    @property
    def is_kept(self) -> bool:
        return self.kind == "kept"


class DedupIndex:
    """A persistent index of kept items; use as a context manager, `commit()` to make a file's decisions
    permanent (an interrupted run leaves the index as it was)."""

    def __init__(self, path: Path, config: PrepareConfig) -> None:
        self.config = config
        with storage_errors(path.parent, "create the folder"):
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(path)
        except sqlite3.OperationalError as error:
            raise StorageError(f"cannot open the de-duplication index {path}: {error}") from None
        # Ids kept since the last commit: the same id again before the commit is a repeat in this run.
        self._uncommitted: set[str] = set()
        try:
            self.db.executescript(_SCHEMA)
            self._add_input_column()
            self._check_settings(path)
            self._load()
        except sqlite3.DatabaseError as error:
            self.db.close()
            raise UserError(f"{path}: not a usable de-duplication index ({error})") from None

    def __enter__(self) -> DedupIndex:
        return self

    def __exit__(self, *_: object) -> None:
        self.db.rollback()
        self.db.close()

    def commit(self) -> None:
        self.db.commit()
        self._uncommitted.clear()

    def rollback(self) -> None:
        """Forget every decision since the last commit, on disk and in memory."""
        self.db.rollback()
        self._uncommitted.clear()
        self._load()

    def _add_input_column(self) -> None:
        """An index made before kept items recorded their input gets the column, empty (NULL): the first
        input to ask about such an item afterwards takes it over (see `_kept_again`)."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(kept)")}
        if "input_name" not in columns:
            self.db.execute("ALTER TABLE kept ADD COLUMN input_name TEXT")
            self.db.commit()

    def _load(self) -> None:
        self.lsh = MinHashLSH(
            threshold=self.config.near_duplicate_threshold, num_perm=self.config.minhash_permutations
        )
        self._signatures: dict[str, LeanMinHash] = {}
        self._order: dict[str, int] = {}
        kept = self.db.execute("SELECT candidate_id, signature FROM kept ORDER BY rowid")
        for candidate_id, signature in kept:
            self._remember(candidate_id, self._from_bytes(signature))

    def _check_settings(self, path: Path) -> None:
        wanted = {
            "near_duplicate_threshold": str(self.config.near_duplicate_threshold),
            "minhash_permutations": str(self.config.minhash_permutations),
            "shingle_words": str(self.config.shingle_words),
            "minhash_seed": str(MINHASH_SEED),
            "minhash_scheme": MINHASH_SCHEME,
        }
        stored = dict(self.db.execute("SELECT key, value FROM settings"))
        if stored and stored != wanted:
            raise UserError(
                f"{path} was built with other de-duplication settings ({stored}); "
                f"use another --index or the same settings ({wanted})"
            )
        if not stored:
            self.db.executemany("INSERT INTO settings VALUES (?, ?)", wanted.items())
            self.db.commit()

    def _from_bytes(self, signature: bytes) -> LeanMinHash:
        hashvalues = np.frombuffer(signature, dtype=np.uint32)
        return LeanMinHash(seed=MINHASH_SEED, hashvalues=hashvalues, scheme=MINHASH_SCHEME)

    def _remember(self, candidate_id: str, signature: LeanMinHash) -> None:
        self.lsh.insert(candidate_id, signature, check_duplication=False)
        self._signatures[candidate_id] = signature
        self._order[candidate_id] = len(self._order)

    def minhash(self, normalised: str) -> LeanMinHash:
        minhash = MinHash(num_perm=self.config.minhash_permutations, seed=MINHASH_SEED, scheme=MINHASH_SCHEME)
        minhash.update_batch(shingles(normalised, self.config.shingle_words))
        return LeanMinHash(minhash)

    def decide(self, row: dict[str, Any], input_name: str = "") -> Decision:
        """Keep the item or record it as a copy. `input_name` names the input the row comes from (its
        items file): a later run of the same input gets the same answers; an id kept from another input,
        or already kept in this run, is a SAME_ID duplicate."""
        candidate_id = row["candidate_id"]
        previous = self._previous(candidate_id, input_name)
        if previous is not None:
            return previous
        normalised = normalise(row["sentence"])
        exact_key = hashlib.sha256(normalised.encode()).hexdigest()
        exact = self.db.execute("SELECT candidate_id FROM kept WHERE exact_key = ?", (exact_key,)).fetchone()
        if exact is not None:
            return self._record_copy(row, Decision("exact", exact[0], 1.0))
        signature = self.minhash(normalised)
        near = self._nearest(signature)
        if near is not None:
            return self._record_copy(row, near)
        self.db.execute(
            "INSERT INTO kept (candidate_id, exact_key, signature, source_file, comment_id, input_name) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                candidate_id,
                exact_key,
                signature.hashvalues.tobytes(),
                row["source_file"],
                row["comment_id"],
                input_name,
            ),
        )
        self._remember(candidate_id, signature)
        self._uncommitted.add(candidate_id)
        return Decision("kept", candidate_id, 1.0, input_name)

    def _previous(self, candidate_id: str, input_name: str) -> Decision | None:
        if candidate_id in self._signatures:
            return self._kept_again(candidate_id, input_name)
        copy = self.db.execute(
            "SELECT kind, kept_candidate_id, similarity FROM copies WHERE candidate_id = ?", (candidate_id,)
        ).fetchone()
        return Decision(*copy) if copy else None

    def _kept_again(self, candidate_id: str, input_name: str) -> Decision:
        """A kept id asked about again: "kept" for a later run of the input that kept it (a NULL input, from
        an index older than the column, is taken over by the first input to ask); a SAME_ID duplicate of
        it from any other input, or from the same input twice in one run."""
        (kept_in,) = self.db.execute(
            "SELECT input_name FROM kept WHERE candidate_id = ?", (candidate_id,)
        ).fetchone()
        if kept_in is None:
            claim = "UPDATE kept SET input_name = ? WHERE candidate_id = ?"
            self.db.execute(claim, (input_name, candidate_id))
            self._uncommitted.add(candidate_id)
            return Decision("kept", candidate_id, 1.0, input_name)
        if kept_in == input_name and candidate_id not in self._uncommitted:
            return Decision("kept", candidate_id, 1.0, kept_in)
        self.db.execute("INSERT OR IGNORE INTO repeats VALUES (?, ?, ?)", (candidate_id, input_name, kept_in))
        return Decision(SAME_ID, candidate_id, 1.0, kept_in)

    def _nearest(self, signature: LeanMinHash) -> Decision | None:
        """The earliest kept item at least as similar as the threshold (LSH finds, signatures confirm)."""
        for candidate_id in sorted(self.lsh.query(signature), key=self._order.__getitem__):
            similarity = float(signature.jaccard(self._signatures[candidate_id]))
            if similarity >= self.config.near_duplicate_threshold:
                return Decision("near", candidate_id, round(similarity, 4))
        return None

    def _record_copy(self, row: dict[str, Any], decision: Decision) -> Decision:
        self.db.execute(
            "INSERT INTO copies VALUES (?, ?, ?, ?, ?, ?)",
            (
                row["candidate_id"],
                decision.kept_id,
                decision.kind,
                decision.similarity,
                row["source_file"],
                row["comment_id"],
            ),
        )
        return decision

    def copies_of(self, candidate_id: str) -> list[dict[str, Any]]:
        """Every recorded copy of a kept item: where it was seen and how similar it was."""
        cursor = self.db.execute(
            "SELECT candidate_id, kind, similarity, source_file, comment_id FROM copies "
            "WHERE kept_candidate_id = ? ORDER BY rowid",
            (candidate_id,),
        )
        columns = [column[0] for column in cursor.description]
        return [dict(zip(columns, values, strict=True)) for values in cursor]

    def repeats_of(self, candidate_id: str) -> list[dict[str, Any]]:
        """Every input that had a kept item's very id again, and the input that kept it."""
        cursor = self.db.execute(
            "SELECT input_name, kept_input FROM repeats WHERE candidate_id = ? ORDER BY rowid",
            (candidate_id,),
        )
        return [{"input_name": name, "kept_input": kept} for name, kept in cursor]
