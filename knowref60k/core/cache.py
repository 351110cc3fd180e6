"""The user's cache of results that are slow to compute and safe to compute again: each entry is named by
a hash of everything it depends on, so a change to any of those simply misses it."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO

from knowref60k.core.paths import cache_folder

log = logging.getLogger(__name__)
# Libraries whose results the cached entries hold: another version of one misses every entry.
LIBRARIES = ("spacy", "numpy", "langdetect", "tokenizers")


def cache_key(*parts: bytes | str) -> str:
    """A hash of `parts`, of Python's and the libraries' versions."""
    digest = hashlib.sha256(sys.version.encode())
    for library in LIBRARIES:
        try:
            digest.update(f"{library} {version(library)}".encode())
        except PackageNotFoundError:
            digest.update(f"{library} missing".encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:24]


def cache_path(kind: str, key: str) -> Path:
    return cache_folder() / f"{kind}-{key}"


def read_cached(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        log.warning("computing again: the cached %s is unreadable (%s)", path, error)
        return None


def write_cached(path: Path, data: bytes) -> None:
    """Written whole or not at all (a temporary file renamed), so that processes can share an entry; a
    cache that cannot be written only costs time (logged)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".partial", delete=False) as out:
            out.write(data)
        os.replace(out.name, path)
    except OSError as error:
        log.warning("not cached (%s): %s", path, error)


@contextmanager
def computing(path: Path) -> Iterator[None]:
    """Held while an entry is looked up and, when missing, computed and written: a process that wants the
    same entry meanwhile waits and then reads it, instead of computing it alongside (the test suite's
    workers and the scripts they start share one cache). Without a lock file, nothing is waited for."""
    lock = _lock_file(path)
    if lock is None:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _lock_file(path: Path) -> IO[bytes] | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.with_name(path.name + ".lock").open("ab")
    except OSError as error:
        log.warning("computing without a lock (%s): %s", path, error)
        return None
