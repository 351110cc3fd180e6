"""Hostile input and a hostile environment around files, each test named after what it protects: an
output folder that cannot be written, a full disk, candidate rows of the wrong type, corrupt reports and
archives, a file given twice, usernames in the quarantine. Small synthetic inputs, in-process commands."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from knowref60k.cli.app import app
from tests.test_prepare import candidates_file, handmade

SENTENCE = "Paul met Mary on the first day, but she left early."


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def one_line_error(result: Result, *wanted: str) -> str:
    """The single `error: ...` line of a command that failed as it should (exit code 2, no traceback),
    after checking that it says every one of `wanted`."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.output
    for text in wanted:
        assert text in errors[0], errors[0]
    return errors[0]


def candidates(tmp_path: Path, count: int = 3, name: str = "RC_a") -> Path:
    rows = [
        handmade(SENTENCE.replace("first", f"day {n} of the"), "Paul", "Mary", "she", "female", f"c{n}")
        for n in range(count)
    ]
    return candidates_file(tmp_path / "candidates" / f"{name}.candidates.parquet", rows)


def ndjson_dump(tmp_path: Path) -> Path:
    source = tmp_path / "RC_one.ndjson"
    source.write_bytes(b'{"id": "one", "body": "Just a line.", "created_utc": 1}\n')
    return source


# D8: an output folder that cannot be written ----------------------------------------------------------


def test_out_under_a_regular_file_is_one_line_for_extract_prepare_and_release(tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("a file, not a folder")
    out = a_file / "out"
    source = candidates(tmp_path)
    release = ["release", "--run", str(tmp_path), "--votes", str(tmp_path / "v.parquet"), "--version", "v1"]
    for command in (
        ["extract", str(ndjson_dump(tmp_path)), "--out", str(out)],
        ["prepare", str(source), "--out", str(out)],
        [*release, "--out", str(out)],
    ):
        one_line_error(cli(*command), str(out), "Not a directory", "a part of the path is a file")
    index = a_file / "index.sqlite"
    result = cli("prepare", str(source), "--out", str(tmp_path / "items"), "--index", str(index))
    one_line_error(result, str(a_file), "File exists")


def test_read_only_out_folder_is_one_line_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests may run as root, whom chmod does not stop: the folder reports itself read-only instead.
    import knowref60k.core.io

    out = tmp_path / "read-only"
    out.mkdir()
    writable = knowref60k.core.io.os.access

    def access(path: Any, mode: int) -> bool:
        return False if Path(path) == out and mode & knowref60k.core.io.os.W_OK else writable(path, mode)

    monkeypatch.setattr(knowref60k.core.io.os, "access", access)
    result = cli("prepare", str(candidates(tmp_path)), "--out", str(out), "--index", str(tmp_path / "i.db"))
    one_line_error(result, f"cannot write into {out}", "permission denied")
    assert list(out.iterdir()) == []


def test_permission_denied_while_writing_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What opening a file in a read-only folder raises for a user who is not root.
    import knowref60k.core.io

    def refused(path: Any, *_: Any, **__: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(knowref60k.core.io.pq, "ParquetWriter", refused)
    out = tmp_path / "items"
    result = cli("prepare", str(candidates(tmp_path)), "--out", str(out))
    one_line_error(result, f"cannot write {out / 'RC_a.items.parquet'}", "Permission denied")
    assert not list(out.glob("RC_a.*"))
