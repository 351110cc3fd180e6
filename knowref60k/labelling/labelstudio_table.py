"""The `[labelstudio]` table of the TOML config: Label Studio's database and, on PostgreSQL, its
worker processes. The server that uses them lives in `annotation/`; the table is read with the others."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from knowref60k.core.config import load_section
from knowref60k.core.errors import UserError

SQLITE, POSTGRESQL = "sqlite", "postgresql"
# Label Studio's worker processes on PostgreSQL (docs/labelling-operations.md), and the most one server
# may start: each holds a whole Django application in memory.
DEFAULT_WORKERS = 3
MAX_WORKERS = 64


@dataclass(frozen=True)
class LabelStudioConfig:
    """Its database: sqlite (the embedded default), postgresql (a server of its own) or a
    postgresql:// URL; its worker processes on PostgreSQL (1: Label Studio's own single-process server)."""

    database: str = SQLITE
    workers: int = DEFAULT_WORKERS

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= MAX_WORKERS:
            raise UserError(
                f"[labelstudio] workers must be a whole number from 1 to {MAX_WORKERS}, not {self.workers}"
            )
        if problem := database_problem(self.database):
            raise UserError(problem)


def load_labelstudio_config(path: Path | None = None) -> LabelStudioConfig:
    """The config file's `[labelstudio]` table, each value checked (a bad one names the file or the
    environment variable)."""
    return load_section(LabelStudioConfig, path, "labelstudio", {})


def database_problem(database: str) -> str | None:
    """Why Label Studio cannot use `database` (None when it can)."""
    if database in (SQLITE, POSTGRESQL) or is_database_url(database):
        return None
    return (
        "Label Studio's database must be sqlite, postgresql or "
        f"postgresql://USER:PASSWORD@HOST:PORT/NAME, not {without_password(database)!r}"
    )


def is_database_url(database: str) -> bool:
    try:
        parts = urlsplit(database)
        _ = parts.port  # a port that is no number raises here
    except ValueError:
        return False
    return parts.scheme in ("postgresql", "postgres") and bool(parts.hostname) and bool(parts.path.strip("/"))


def without_password(url: str) -> str:
    """`url` as it may be printed: the password of its user part masked, up to the last '@' (a password
    may hold '/', ':' or '@' unescaped, which no URL parser reads as a password)."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://[^/:@]*:).*@", r"\1***@", url, flags=re.IGNORECASE | re.DOTALL)
