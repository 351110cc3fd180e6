"""What an annotator account, or a damaged state folder, could do to the labelling loop's own secrets and
records: each case is refused or harmless."""

from __future__ import annotations

import dataclasses
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from knowref60k.cli.app import app
from knowref60k.core.errors import UserError
from knowref60k.labelling.labelstudio_table import database_problem
from knowref60k_annotation.accounts import MAX_NEW_ACCOUNTS, create_accounts
from knowref60k_annotation.database import database_environment
from knowref60k_annotation.receiver import Receiver, ReceiverProcess
from knowref60k_annotation.roster import load_accounts
from knowref60k_annotation.settings import Settings, webhook_secret
from tests.conftest import REPO


def settings_in(folder: Path) -> Settings:
    return Settings(url="http://127.0.0.1:9", username="u", password="p", api_key="k", state_dir=folder)


def test_processes_making_the_webhook_secret_at_once_all_read_the_same_whole_one(tmp_path: Path) -> None:
    for trial in range(300):
        settings = settings_in(tmp_path / str(trial))
        read: list[str] = []
        start = threading.Barrier(2)

        def make(into: list[str] = read, at: Settings = settings, barrier: threading.Barrier = start) -> None:
            barrier.wait()
            into.append(webhook_secret(at))

        threads = [threading.Thread(target=make) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(read) == 2 and read[0] == read[1] and len(read[0]) == 40, (trial, read)
        assert [p.name for p in settings.state_dir.iterdir()] == ["webhook-secret"]  # no temporary left
    assert stat.S_IMODE((tmp_path / "0" / "webhook-secret").stat().st_mode) == 0o600


@pytest.mark.parametrize("content", [b"", b"\n", b"short", b"\xff" * 40, b"g" * 40])
def test_an_empty_or_damaged_webhook_secret_is_refused_in_one_line(tmp_path: Path, content: bytes) -> None:
    settings = settings_in(tmp_path)
    (tmp_path / "webhook-secret").write_bytes(content)
    with pytest.raises(UserError, match="webhook-secret: the webhook secret") as refused:
        webhook_secret(settings)
    assert "\n" not in str(refused.value)


def test_a_receiver_without_a_secret_authorises_nothing() -> None:
    receiver = Receiver(None, "")  # type: ignore[arg-type]
    assert not receiver.authorised("") and not receiver.authorised(None) and not receiver.authorised("x")


@pytest.mark.parametrize("count", [-1, MAX_NEW_ACCOUNTS + 1, 99999999999999999999])
def test_a_count_of_accounts_out_of_bounds_is_refused_before_any_is_made(count: int) -> None:
    class NoServer:
        settings = settings_in(Path("/nonexistent"))

        def users(self) -> list[dict[str, object]]:
            raise AssertionError("asked the server, though the count was refused")

    with pytest.raises(UserError, match=f"--count {count}: accounts are made 0 to 1,000"):
        create_accounts(NoServer(), "screener", count)  # type: ignore[arg-type]


def test_each_account_is_on_record_before_the_next_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowref60k_annotation.accounts as accounts

    settings = settings_in(tmp_path)
    signed: list[str] = []
    granted: list[object] = []

    def sign_up(_: Settings, email: str, password: str, invite: str | None) -> None:
        assert invite == "invited"
        assert [a.email for a in load_accounts(settings)] == signed  # every earlier one is on record
        if len(signed) == 2:
            raise KeyboardInterrupt  # the run stopped while making the third
        signed.append(email)

    class Server:
        def __init__(self) -> None:
            self.settings = settings

        def users(self) -> list[dict[str, object]]:
            return []

        def user_id(self, email: str) -> int:
            return signed.index(email) + 1

        def invitation(self) -> str:
            return "invited"

        def grant_accounts(self, made: list[object]) -> None:
            granted.extend(made)

    monkeypatch.setattr(accounts, "sign_up", sign_up)
    with pytest.raises(KeyboardInterrupt):
        create_accounts(Server(), "screener", 5)  # type: ignore[arg-type]
    assert [(a.email, bool(a.password)) for a in load_accounts(settings)] == [(e, True) for e in signed]
    assert granted == load_accounts(settings)  # each granted its stage as it was made


def test_the_users_command_refuses_a_count_out_of_bounds_in_one_line() -> None:
    result = CliRunner().invoke(app, ["annotate", "users", "--role", "screener", "--count", "-1"])
    assert (
        result.exit_code == 2
        and result.stderr == "error: --count -1: accounts are made 0 to 1,000 at a time\n"
    )


def test_forgetting_a_project_of_no_stage_is_one_line() -> None:
    result = CliRunner().invoke(app, ["annotate", "forget-project", "reviews"])
    assert result.exit_code == 2
    assert result.stderr == "error: no stage 'reviews'; the stages are screening, resolution\n"


@pytest.mark.parametrize(
    "database",
    ["postgresql://team:S3cretPassw0rd@db.example:5432", "postgresql://team:S3cretPassw0rd@db:port/x"],
)
def test_a_database_url_that_cannot_be_used_is_named_without_its_password(database: str) -> None:
    problem = database_problem(database)
    assert problem is not None and "S3cretPassw0rd" not in problem and "team:***@db" in problem
    with pytest.raises(UserError) as refused:
        database_environment(database, Path("/nonexistent"), 8080)
    assert "S3cretPassw0rd" not in str(refused.value)


@pytest.mark.parametrize(
    ("command", "env_file"),
    [
        (["-m", "knowref60k", "labelstudio", "server", "start"], "missing-folder/.env"),
        (["-m", "knowref60k", "labelstudio", "receiver", "start"], "not-utf8.env"),
        (["-m", "knowref60k", "annotate", "collect", "--out", "unused"], "not-utf8.env"),
    ],
)
def test_a_settings_file_that_cannot_be_read_or_written_is_one_line(
    tmp_path: Path, command: list[str], env_file: str
) -> None:
    path = tmp_path / env_file
    if env_file == "not-utf8.env":
        path.write_bytes(b"\xff\xfeLABEL_STUDIO_URL=x\n")
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LABEL_STUDIO_")},
        "KNOWREF60K_ENV_FILE": str(path),
        "KNOWREF60K_LABELSTUDIO_DIR": str(tmp_path / "state"),
    }
    result = subprocess.run(
        [sys.executable, *command], cwd=REPO, env=environment, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: {path}: "), result.stderr


def test_a_second_start_never_overwrites_the_pid_of_one_that_runs(tmp_path: Path) -> None:
    """A receiver that runs but does not answer where asked (its port taken by another service, say):
    starting again is refused, and its pid stays on record for `stop`."""
    process = ReceiverProcess(settings_in(tmp_path))
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    running = process.spawn(sleeper, dict(os.environ))
    try:
        with pytest.raises(RuntimeError, match=rf"pid {running.pid}.* runs but does not answer here"):
            process.spawn(sleeper, dict(os.environ))
        assert process.pid() == running.pid
        # One that cannot start (it exits at once) leaves no pid behind.
        assert process.stop().endswith("stopped") and process.pid() is None
        with pytest.raises(RuntimeError, match="exited with code 3"):
            process.wait_healthy(process.spawn([sys.executable, "-c", "exit(3)"], {}), lambda: False, 60)
        assert not process.pid_file.exists()
    finally:
        running.kill()
        running.wait()


def test_quarantine_redacts_every_field_that_can_name_a_person(tmp_path: Path) -> None:
    """Moderators' and reporters' fields, author keys spelt with invisible or look-alike letters, and names
    inside a bad value: none reaches the quarantine file."""
    from knowref60k.core.stats import StageStats
    from knowref60k.ingest.readers import LineChunk, parse_chunk

    record = {
        "id": "x",
        "body": "A comment.",
        "created_utc": {"author": "secretuser13"},
        "banned_by": "secretmod1",
        "approved_by": "secretmod2",
        "mod_reason_by": "secretmod3",
        "mod_reports": [["spam", "secretmod4"]],
        "user_reports": [["rude", 1]],
        "au\u200bthor": "secretuser14",
        "\u0430uthor": "secretuser15",
        "subreddit": "books",
    }
    line = orjson.dumps(record) + b"\n"
    _, (quarantined,) = parse_chunk(LineChunk(1, line), "ndjson", StageStats("lines"))
    kept = orjson.dumps(dataclasses.asdict(quarantined)).decode()
    assert "secret" not in kept and "books" in kept and quarantined.reason == "bad_created_utc"


def test_quarantine_masks_usernames_written_in_the_text() -> None:
    from knowref60k.core.stats import StageStats
    from knowref60k.ingest.readers import LineChunk, parse_chunk

    record = {
        "id": "x",
        "body": "Thanks u/secretuser21, and /u/Secret-User22 too (see reddit.com/user/secretuser23).",
        "created_utc": "u/secretuser24",
        "subreddit": "u_secretuser25",
        "subreddit_name_prefixed": "u/secretuser25",
        "parent": {"body": "Ask r/u_secretuser26 or u/secret\\_user27."},
    }
    _, (quarantined,) = parse_chunk(LineChunk(1, orjson.dumps(record) + b"\n"), "ndjson", StageStats("lines"))
    kept = orjson.dumps(dataclasses.asdict(quarantined)).decode()
    assert "ecret" not in kept and kept.count("u/<redacted>") == 8 and "Thanks u/<redacted>," in kept
    assert '\\"subreddit\\":\\"u_<redacted>\\"' in kept
