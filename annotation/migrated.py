"""A new SQLite data folder starts from a copy of a database that has Label Studio's migrations applied and
nothing else, made once per Label Studio version in its environment (`knowref60k labelstudio setup`
makes it; a first start makes it when missing).

Applying Label Studio's migrations (396 in 1.23) to an empty SQLite database takes about a minute of CPU;
`init` on a copy finds nothing left to migrate and only makes the admin login, in seconds. The copy holds
what the same migrations write on any machine (content types, permissions, the migration records): no
account, organisation or token, and no secret (Label Studio keeps its secret key in the data folder's
`.env`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from .environment import QUIET_VARIABLES, installed_label_studio, own_environment
from .labelstudio_app.labelstudio_contract import MIGRATE_COMMAND, SQLITE_FILE

log = logging.getLogger(__name__)
# What making or copying the migrated database can fail with.
FAILURES = (OSError, sqlite3.Error, RuntimeError, subprocess.SubprocessError)

# Variables of this process that would send the migrations elsewhere: another database file, or SQLite's
# write-ahead log (which a read-only copy could not open).
FOREIGN_VARIABLES = ("DATABASE_NAME", "HEARTEX_DATABASE_NAME", "AZURE_MOUNT_FIX")
# What the migrations run with: SQLite, offline, silent.
MIGRATION_VARIABLES = {"DJANGO_DB": "sqlite", **QUIET_VARIABLES}


def seed_database(program: Path, data_dir: Path, timeout: float) -> None:
    """Put the migrated database of `program`'s environment in `data_dir` unless it has a database
    already. Nothing is seeded when the migrated one cannot be made or read (a read-only environment, say):
    `init` then migrates the data folder itself, as it always could, only slower."""
    target = data_dir / SQLITE_FILE
    if target.exists():
        return
    try:
        migrated = migrated_database(program, timeout)
        try:
            copy_database(migrated, target)
        except sqlite3.DatabaseError:
            migrated.unlink(missing_ok=True)  # unreadable: the next start makes it again
            raise
    except FAILURES as error:
        target.unlink(missing_ok=True)
        log.warning("Label Studio migrates %s itself (no migrated copy: %s)", data_dir, error)


def migrated_database(program: Path, timeout: float) -> Path:
    """The migrated database of the environment of `program` (its `label-studio` command), for its Label
    Studio version; made now when missing (one process makes it, the others wait and read it; the
    migrations' output goes to `migrated.log` beside it)."""
    version = installed_label_studio(program)
    if version is None:
        raise RuntimeError(f"no Label Studio installed beside {program}")
    program = program.absolute()
    folder = program.parent.parent / "share" / "knowref60k"
    path = folder / f"migrated-{version}.sqlite3"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "migrated.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            for left in folder.glob("migrating-*"):  # by a process killed while it held the lock
                shutil.rmtree(left, ignore_errors=True)
            migrate_into(path, program, timeout)
    return path


def migrate_into(path: Path, program: Path, timeout: float) -> None:
    """Label Studio's migrations applied to a new database in a scratch data folder, then copied to `path`
    whole or not at all."""
    scratch = Path(tempfile.mkdtemp(prefix="migrating-", dir=path.parent))
    try:
        variables = {
            **own_environment(excluding=FOREIGN_VARIABLES),
            **MIGRATION_VARIABLES,
            "LABEL_STUDIO_BASE_DATA_DIR": str(scratch),
            "LABEL_STUDIO_DATABASE_NAME": str(scratch / SQLITE_FILE),
        }
        with (path.parent / "migrated.log").open("ab") as output:
            done = subprocess.run(
                [str(program), *MIGRATE_COMMAND],
                env=variables,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=scratch,
                timeout=timeout,
            )
        if done.returncode:
            raise RuntimeError(
                f"label-studio {' '.join(MIGRATE_COMMAND)} exited with code {done.returncode}; "
                f"see {path.parent / 'migrated.log'}"
            )
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        copy_database(scratch / SQLITE_FILE, partial)
        partial.replace(path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy through SQLite's backup API (a plain file copy could miss pages still in its
    write-ahead log)."""
    if not source.is_file():
        raise RuntimeError(f"no database at {source}")
    reader = sqlite3.connect(f"{source.absolute().as_uri()}?mode=ro", uri=True)
    with contextlib.closing(reader), contextlib.closing(sqlite3.connect(target)) as writer:
        reader.backup(writer)
