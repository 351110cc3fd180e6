"""A new SQLite data folder starts from the Label Studio environment's migrated database."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest

from knowref60k_annotation.environment import label_studio_program
from knowref60k_annotation.labelstudio_app.labelstudio_contract import SQLITE_FILE
from knowref60k_annotation.migrated import copy_database, migrated_database, seed_database
from knowref60k_annotation.server import START_TIMEOUT, Server


def rows(database: Path, query: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as connection:
        return connection.execute(query).fetchall()


@pytest.mark.integration
def test_a_server_started_from_the_migrated_database_needs_no_migration_and_it_holds_no_account(
    label_studio_template: Server,
) -> None:
    migrated = migrated_database(label_studio_program(), START_TIMEOUT)
    started = label_studio_template.data_dir / SQLITE_FILE
    applied = "SELECT app, name, applied FROM django_migrations"
    # The server's database is the copy (the records keep the times the migrations were applied when the
    # environment's database was made), and `init` found nothing left to apply.
    assert set(rows(migrated, applied)) == set(rows(started, applied)) != set()
    for table in ("htx_user", "authtoken_token", "organization"):
        assert rows(migrated, f"SELECT count(*) FROM {table}") == [(0,)], table
        assert rows(started, f"SELECT count(*) FROM {table}") == [(1,)], table  # the admin, made by init


def test_without_a_migrated_database_a_new_folder_is_left_for_label_studio_to_migrate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with caplog.at_level(logging.WARNING):
        seed_database(tmp_path / "nowhere" / "bin" / "label-studio", data, START_TIMEOUT)
    assert list(data.iterdir()) == []
    assert "Label Studio migrates" in caplog.text and "no Label Studio installed" in caplog.text


def test_a_folder_that_has_a_database_keeps_it(tmp_path: Path) -> None:
    database = tmp_path / SQLITE_FILE
    database.write_bytes(b"kept")
    seed_database(tmp_path / "nowhere" / "bin" / "label-studio", tmp_path, START_TIMEOUT)
    assert database.read_bytes() == b"kept"


def test_a_copy_is_whole_wherever_the_database_lies(tmp_path: Path) -> None:
    """SQLite opens the source by a URI: a folder named with `?`, `#` or `%` must not cut it short."""
    folder = tmp_path / "a ?#% b"
    folder.mkdir()
    source, target = folder / "source.sqlite3", folder / "copy.sqlite3"
    with contextlib.closing(sqlite3.connect(source)) as connection:
        connection.executescript("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);")
        connection.commit()
    copy_database(source, target)
    assert rows(target, "SELECT x FROM t") == [(1,), (2,)]
