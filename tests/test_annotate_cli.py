"""`knowref60k annotate push|users|collect|simulate` end to end against the real test Label Studio."""

from __future__ import annotations

import dataclasses
import re
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

import annotation.cli
from annotation.client import ITEM_COLUMNS, LabelStudioClient
from annotation.settings import Settings
from annotation.tasks import simulated_truth
from knowref60k.cli.app import app
from knowref60k.core.io import ITEM_SCHEMA
from tests.conftest import use_label_studio
from tests.test_annotation import item, log_in

ITEMS = 4
runner = CliRunner()


def write_items(path: Path, count: int = ITEMS) -> Path:
    """An items Parquet file of the shape `prepare` writes, holding item(0) .. item(count - 1)."""
    rows = []
    for number in range(count):
        row = item(number)
        sentence = row["perturbed_sentence"]
        rows.append(
            {
                **row,
                "name1_start": sentence.index(row["name1"]),
                "name1_end": sentence.index(row["name1"]) + len(row["name1"]),
                "name2_start": sentence.index(row["name2"]),
                "name2_end": sentence.index(row["name2"]) + len(row["name2"]),
                "perturbation_seed": number,
            }
        )
    schema = pa.schema([field for field in ITEM_SCHEMA if field.name in rows[0]])
    assert set(ITEM_COLUMNS) <= set(schema.names)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


@pytest.fixture
def cli_settings(
    label_studio: Settings, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Settings:
    """A project of its own for each test; annotator logins saved under tmp_path, not the repo."""
    settings = dataclasses.replace(label_studio, project=f"cli {request.node.name}"[:50])
    use_label_studio(monkeypatch, settings)
    monkeypatch.setattr(annotation.cli, "STATE_DIR", tmp_path / "state")
    return settings


def annotate(*arguments: str) -> Result:
    return runner.invoke(app, ["annotate", *arguments])


def ok(*arguments: str) -> list[str]:
    result = annotate(*arguments)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout.splitlines()


def collect_line(votes: int, new: int, updated: int, annotations: int) -> str:
    return (
        f"{votes} votes ({new} new, {updated} updated) from {annotations} annotations; "
        "0 repeated by the same person, 0 skipped, 0 without a choice"
    )


def changes(out: Path) -> tuple[int, int, int, int, int]:
    report = orjson.loads((out / "collect.json").read_bytes())
    return (
        report["votes"],
        report["new_votes"],
        report["updated_votes"],
        report["unchanged_votes"],
        report["withdrawn_votes"],
    )


@pytest.mark.integration
def test_push_twice_imports_every_item_once(cli_settings: Settings, tmp_path: Path) -> None:
    items = write_items(tmp_path / "run.items.parquet")
    assert ok("push", str(items)) == ["4 items: 4 imported, 0 already there; 4 tasks in the project"]
    assert ok("push", str(items)) == ["4 items: 0 imported, 4 already there; 4 tasks in the project"]
    with LabelStudioClient(cli_settings) as client:
        exported = client.export(client.existing_project())
    assert sorted(task["data"]["item_id"] for task in exported) == [item(n)["candidate_id"] for n in range(4)]


@pytest.mark.integration
def test_users_prints_logins_that_work_and_keeps_them_private(cli_settings: Settings, tmp_path: Path) -> None:
    lines = ok("users", "--count", "2")
    assert lines[0] == f"Log in at {cli_settings.url}/user/login/ with:"
    saved = tmp_path / "state" / "annotators.json"
    assert lines[-1] == f"(also saved to {saved}, readable only by you)"
    logins = [line.split() for line in lines[1:-1]]
    assert len(logins) == 2 and all(len(login) == 2 for login in logins)
    assert logins[0][0] != logins[1][0]
    user_ids = []
    for email, password in logins:
        assert re.fullmatch(r"annotator-\d+@knowref60k\.local", email)
        session = log_in(cli_settings, email, password)
        try:
            whoami = session.get("/api/current-user/whoami").json()
        finally:
            session.close()
        assert whoami["email"] == email
        user_ids.append(whoami["id"])
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert orjson.loads(saved.read_bytes()) == [
        {"email": email, "password": password, "user_id": user_id}
        for (email, password), user_id in zip(logins, user_ids, strict=True)
    ]


@pytest.mark.integration
def test_simulate_then_collect_counts_new_updated_unchanged_withdrawn(
    cli_settings: Settings, tmp_path: Path
) -> None:
    ok("push", str(write_items(tmp_path / "run.items.parquet")))
    assert ok("simulate", "--annotators", "5", "--accuracy", "1.0", "--seed", "3") == [
        "posted 20 simulated annotations (5 annotators, accuracy 1.0)"
    ]
    out = tmp_path / "annotation"
    assert ok("collect", "--out", str(out)) == [
        collect_line(20, 20, 0, 20),
        "NOTE: 20 of these votes are simulated",
        f"Votes in {(out / 'votes.parquet').resolve()}",
    ]
    assert changes(out) == (20, 20, 0, 0, 0)
    votes = pq.read_table(out / "votes.parquet").to_pylist()
    truth = simulated_truth(3)
    assert len(votes) == 20 and all(vote["simulated"] for vote in votes)
    assert [vote["choice"] for vote in votes] == [truth(vote["item_id"]) for vote in votes]
    assert sorted({vote["item_id"] for vote in votes}) == [item(n)["candidate_id"] for n in range(4)]
    assert len({vote["annotator_id"] for vote in votes}) == 5

    ok("collect", "--out", str(out))  # nothing changed on the server
    assert changes(out) == (20, 0, 0, 20, 0)

    with LabelStudioClient(cli_settings) as client:
        tasks = {task["id"]: task for task in client.export(client.existing_project())}
        first, second = votes[0], votes[-1]
        answers = {v: k for k, v in tasks[first["task_id"]]["data"]["answer_identity"].items()}
        client.sdk.annotations.update(
            id=first["annotation_id"],
            result=[
                {
                    "from_name": "referent",
                    "to_name": "sentence",
                    "type": "choices",
                    "value": {"choices": [answers["neither"]]},
                }
            ],
        )
    assert ok("collect", "--out", str(out))[0] == collect_line(20, 0, 1, 20)
    assert changes(out) == (20, 0, 1, 19, 0)
    after_update = pq.read_table(out / "votes.parquet").to_pylist()
    changed = [vote for vote in after_update if vote["annotation_id"] == first["annotation_id"]]
    assert [(vote["choice"], vote["annotator_id"]) for vote in changed] == [
        ("neither", first["annotator_id"])
    ]

    with LabelStudioClient(cli_settings) as client:
        client.sdk.annotations.delete(id=second["annotation_id"])
    assert ok("collect", "--out", str(out))[0] == collect_line(19, 0, 0, 19)
    assert changes(out) == (19, 0, 0, 19, 1)
    remaining = pq.read_table(out / "votes.parquet").to_pylist()
    assert second["annotation_id"] not in {vote["annotation_id"] for vote in remaining}


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound by the test but not listening: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.mark.integration
def test_every_command_fails_in_one_line_when_the_server_is_down(
    closed_port: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    use_label_studio(
        monkeypatch, Settings(url=url, username="admin", password="pw", api_key="0" * 40, project="down")
    )
    monkeypatch.setattr(annotation.cli, "STATE_DIR", tmp_path / "state")
    items = write_items(tmp_path / "run.items.parquet")
    out = tmp_path / "annotation"
    for command in (
        ["push", str(items)],
        ["users", "--count", "1"],
        ["collect", "--out", str(out)],
        ["simulate", "--annotators", "2"],
    ):
        result = annotate(*command)
        assert result.exit_code == 2, (command, result.output)
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (command, result.stderr)
        assert lines[0].startswith(f"error: Label Studio is not reachable at {url} ("), lines[0]
        assert "Traceback" not in result.output
    assert not out.exists() and not (tmp_path / "state").exists()
