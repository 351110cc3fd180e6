"""De-duplication across every dump ever processed: exact (normalised text) and near (MinHash LSH).

The index is a SQLite file. Kept items keep their MinHash signature there, so a later run rebuilds the
same LSH and finds copies of items kept months ago. The first item seen is kept; every later copy is
recorded with the kept item's id, the kind of match, the similarity, and where the copy came from.
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
    comment_id TEXT NOT NULL
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


@dataclass(frozen=True)
class Decision:
    """What the index says about one item: kept, or a copy of `kept_id` ('exact' or 'near')."""

    kind: str
    kept_id: str
    similarity: float

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
        try:
            self.db.executescript(_SCHEMA)
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

    def rollback(self) -> None:
        """Forget every decision since the last commit, on disk and in memory."""
        self.db.rollback()
        self._load()

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

    def decide(self, row: dict[str, Any]) -> Decision:
        """Keep the item or record it as a copy; asking again about the same item gives the same answer."""
        candidate_id = row["candidate_id"]
        previous = self._previous(candidate_id)
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
            "INSERT INTO kept VALUES (?, ?, ?, ?, ?)",
            (candidate_id, exact_key, signature.hashvalues.tobytes(), row["source_file"], row["comment_id"]),
        )
        self._remember(candidate_id, signature)
        return Decision("kept", candidate_id, 1.0)

    def _previous(self, candidate_id: str) -> Decision | None:
        if candidate_id in self._signatures:
            return Decision("kept", candidate_id, 1.0)
        copy = self.db.execute(
            "SELECT kind, kept_candidate_id, similarity FROM copies WHERE candidate_id = ?", (candidate_id,)
        ).fetchone()
        return Decision(*copy) if copy else None

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
