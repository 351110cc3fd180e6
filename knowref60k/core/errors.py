"""Errors caused by the user's input or environment: reported as one clear line, never a traceback.

Their kind decides what a Prefect task does with them: a `UserError` fails at once (a missing file does
not appear by retrying), a `ServiceUnavailable` is retried (a server restarting comes back).
"""

from __future__ import annotations

import errno
from pathlib import Path

# What a bare system message does not say about the path it names.
_HINTS = {
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EEXIST: "a file of that name is in the way",
    errno.ENOSPC: "free some space and run again",
    errno.EDQUOT: "free some space and run again",
    errno.EROFS: "the file system is mounted read-only",
}


class UserError(Exception):
    """A mistake the user can fix: a missing file, a wrong format, no spaCy model, a server not running."""


class ServiceUnavailable(UserError):
    """A server that could not be reached or answered with a server error: worth another try."""


class StorageError(UserError):
    """The file system refused: no space left, permission denied, a read-only disk, a folder that is a
    file. Not worth another try either: a full disk does not empty itself."""


def storage_error(
    error: OSError, path: Path | str | None = None, doing: str | None = "write"
) -> StorageError:
    """The OSError as one line naming the file and the problem, e.g. `cannot write out/x.parquet: No
    space left on device (free some space ...)`. The file is `path`, else the one the error names;
    without `doing` (what was being done is not known) the line starts with the file."""
    problem = error.strerror or str(error)
    hint = _HINTS.get(error.errno) if error.errno is not None else None
    if hint is None and "No space left" in str(error):  # pyarrow's errors carry no errno
        hint = _HINTS[errno.ENOSPC]
    problem += f" ({hint})" if hint else ""
    named = path if path is not None else error.filename
    if doing is None:
        return StorageError(f"{named}: {problem}" if named is not None else problem)
    inner = "" if error.filename is None or str(error.filename) == str(named) else f"{error.filename}: "
    return StorageError(f"cannot {doing} {named}: {inner}{problem}")
