"""Files the user names (a dump, a config file): readable, or one UserError that says what the path is
instead. Without pyarrow, so that reading a config file stays light."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from knowref60k.core.errors import UserError


def check_readable_file(path: Path, kind: str) -> None:
    """Nothing when `path` is a regular file this process can open; else a UserError naming `kind`
    ("input file", "config file"), the path and what is wrong: missing, a symlink loop, a folder,
    something else than a file, or not readable."""
    try:
        mode = path.stat().st_mode  # follows symlinks, as opening does
    except OSError as error:
        raise UserError(_stat_problem(path, kind, error)) from None
    if stat.S_ISDIR(mode):
        raise UserError(f"{kind} is a folder, not a file: {path}")
    if not stat.S_ISREG(mode):
        # A FIFO or a device: opening one could wait forever or read without end.
        raise UserError(f"{kind} is not a regular file: {path}")
    try:
        with path.open("rb"):
            pass
    except PermissionError:
        raise UserError(f"{kind} is not readable (permission denied): {path}") from None
    except OSError as error:
        raise UserError(f"{kind} cannot be read: {path} ({error.strerror})") from None


def _stat_problem(path: Path, kind: str, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return f"{kind} is a symlink loop: {path}"
    if error.errno == errno.ENOENT and path.is_symlink():
        return f"{kind} not found: {path} is a symlink to {os.readlink(path)}, which does not exist"
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return f"{kind} not found: {path}"
    if error.errno == errno.EACCES:
        return f"{kind} is not readable (permission denied on a folder above it): {path}"
    return f"{kind} cannot be read: {path} ({error.strerror})"
