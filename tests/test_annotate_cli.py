"""`knowref60k annotate push|promote|users|collect|status|simulate` end to end against the real test Label
Studio."""

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

from knowref60k.cli.app import app
from knowref60k.core.io import ITEM_SCHEMA
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k_annotation.client import ITEM_COLUMNS, LabelStudioClient
from knowref60k_annotation.receiver import ReceiverProcess
from knowref60k_annotation.roster import load_accounts
from knowref60k_annotation.settings import Settings
from knowref60k_annotation.simulate import AnnotatorSession
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
    """A project of its own for each test; annotator logins saved under tmp_path, not the repo; no control
    items (a config file says so, as a user would)."""
    settings = dataclasses.replace(
        label_studio, project=f"cli {request.node.name}"[:38], state_dir=tmp_path / "state"
    )
    use_label_studio(monkeypatch, settings)
    # `annotate simulate` starts the vote receiver when none runs: stopped with the test.
    request.addfinalizer(ReceiverProcess(settings).stop)
    return settings


@pytest.fixture
def no_controls(tmp_path: Path) -> Path:
    config = tmp_path / "labelling.toml"
    config.write_text("[labelling]\ncontrol_share = 0.0\naudit_share = 0.0\n")
    return config


def annotate(*arguments: str) -> Result:
    return runner.invoke(app, ["annotate", *arguments])


def ok(*arguments: str) -> list[str]:
    result = annotate(*arguments)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout.splitlines()


@pytest.mark.integration
def test_push_twice_imports_every_item_once_with_its_controls(cli_settings: Settings, tmp_path: Path) -> None:
    items = write_items(tmp_path / "run.items.parquet", 40)
    # 5% of the tasks are controls: 2 of 42, drawn from the shipped screening controls.
    first = ok("push", str(items))
    assert first == ["screening: 42 tasks offered, 42 imported, 0 already there; 42 tasks in the project"]
    # Again: the items are there, and with them the controls they call for (none offered again).
    assert ok("push", str(items)) == [
        "screening: 40 tasks offered, 0 imported, 40 already there; 42 tasks in the project"
    ]
    with LabelStudioClient(cli_settings) as client:
        project = client.existing_project(SCREENING)
        exported = client.export(project)
        recorded = sorted(task.item_id for task in client.records.tasks_of(project).values())
    expected = [item(n)["candidate_id"] for n in range(40)]
    assert [i for i in recorded if not i.startswith("control:")] == expected
    assert sum(i.startswith("control:") for i in recorded) == 2
    # What Label Studio holds names no control as one: their ids are shaped like any candidate's.
    shown = {task["data"]["item_id"] for task in exported}
    disguised = shown - set(expected)
    assert len(disguised) == 2 and all(re.fullmatch(r"[0-9a-f]{20}", i) for i in disguised)


@pytest.mark.integration
def test_users_per_role_print_logins_that_work_and_keep_them_private(cli_settings: Settings) -> None:
    lines = ok("users", "--role", "screener", "--count", "2")
    assert lines[0] == f"Log in at {cli_settings.url}/user/login/ with (screeners):"
    saved = cli_settings.state_dir / "annotators.json"
    assert lines[-1] == f"(also saved to {saved}, readable only by you)"
    logins = [line.split() for line in lines[1:-1]]
    assert len(logins) == 2 and all(len(login) == 2 for login in logins)
    user_ids = []
    for email, password in logins:
        assert re.fullmatch(r"screener-\d+@knowref60k\.local", email)
        session = log_in(cli_settings, email, password)
        try:
            whoami = session.get("/api/current-user/whoami").json()
        finally:
            session.close()
        assert whoami["email"] == email
        user_ids.append(whoami["id"])
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert orjson.loads(saved.read_bytes()) == [
        {"email": email, "password": password, "user_id": user_id, "role": "screener"}
        for (email, password), user_id in zip(logins, user_ids, strict=True)
    ]
    refused = annotate("users", "--role", "resolver", "--email", logins[0][0])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == (
        f"error: {logins[0][0]} is a screener: an account screens or resolves, never both (someone who saw "
        "an original sentence must not resolve its renamed twin)\n"
    )
    assert annotate("users", "--role", "resolver").exit_code == 2  # neither --count nor --email


@pytest.mark.integration
def test_the_loop_from_the_command_line(cli_settings: Settings, no_controls: Path, tmp_path: Path) -> None:
    """push -> simulate screening -> collect -> promote -> simulate resolution -> collect -> status."""
    items = str(write_items(tmp_path / "run.items.parquet"))
    config = ["--config", str(no_controls)]
    out = tmp_path / "annotation"
    ok("push", items, *config)
    # Two screeners work at once: both may be handed the same task (overlap 1) and vote on it, and such a
    # vote after the deciding one is late, counted and never used: at most one late vote a task.
    simulated = ok("simulate", "--stage", "screening", "--annotators", "2", "--seed", "3", *config)
    screening_votes = int(simulated[0].split()[1])
    assert simulated == [f"screening: {screening_votes} simulated votes (2 annotators, accuracy 0.9)"]
    assert ITEMS <= screening_votes <= 2 * ITEMS
    collected = ok("collect", "--out", str(out), *config)
    assert collected[0].startswith(
        f"{screening_votes} votes {{'{SCREENING}': {screening_votes}}} ({screening_votes} new, 0 updated)"
    )
    promoted = ok("promote", items, "--out", str(out), *config)
    valid = int(promoted[0].split()[0])
    assert promoted == [
        f"{valid} items screened valid, {valid} newly pushed to resolution; "
        f"{valid} tasks in the resolution project"
    ]
    assert ok("promote", items, "--out", str(out), *config)[0].startswith(
        f"{valid} items screened valid, 0 newly"
    )
    ok("simulate", "--stage", "resolution", "--annotators", "5", "--accuracy", "1.0", *config)
    ok("collect", "--out", str(out), *config)
    report = orjson.loads((out / "collect.json").read_bytes())
    status = orjson.loads(annotate("status", "--out", str(out), "--json", *config).stdout)
    stages = status["stages"]
    assert stages[SCREENING]["late_votes"] == screening_votes - ITEMS
    # With every answer right, each screened-valid item is decided by exactly 4 resolvers; any vote
    # beyond those is late.
    resolution_votes = 4 * valid + stages[RESOLUTION]["late_votes"]
    assert report["votes_by_stage"] == {SCREENING: screening_votes, RESOLUTION: resolution_votes}
    assert stages[RESOLUTION]["outcomes"] == {"kept": valid}
    assert stages[RESOLUTION]["votes_per_decided_item"] == 4.0
    assert status["votes_per_kept_item"] == round((screening_votes + resolution_votes) / valid, 2)
    # Every account that voted has its row (a resolver Label Studio never served has none).
    voters = {
        report["emails"][str(v["annotator_id"])] for v in pq.read_table(out / "votes.parquet").to_pylist()
    }
    assert set(status["annotators"]) == voters and len(voters) >= 2 + 4
    table = ok("status", "--out", str(out), *config)
    assert table[0] == f"as of the collect made {report['collected_at']}"
    assert table[1].split()[:4] == ["stage", "items", "waiting", "in_progress"]
    assert any(line.startswith(f"kept {valid};") for line in table)


@pytest.mark.integration
def test_a_random_clicker_among_five_honest_resolvers_is_paused_and_decides_nothing(
    cli_settings: Settings, tmp_path: Path
) -> None:
    """Six resolvers, one answering at random: the controls pause it after the configured number (any
    control wrong pauses here, and the honest ones are always right); its votes are set aside, every item
    is decided by the five others, and no vote is lost. Resumed, its votes count again. The clicker gets
    all six of its controls right one time in 729 (it is then paused later)."""
    items = write_items(tmp_path / "run.items.parquet", 20)
    # As many controls as items: each resolver sees about 14 of the 20, the clicker at least 6 but with
    # a chance below one in a thousand.
    settings = tmp_path / "labelling.toml"
    settings.write_text(
        "[labelling]\nscreening = false\ncontrol_share = 0.5\naudit_share = 0.0\n"
        "pause_after_controls = 6\npause_below_accuracy = 1.0\n"
    )
    config, out = ["--config", str(settings)], tmp_path / "annotation"
    ok("push", str(items), *config)
    simulated = ok(
        "simulate",
        "--stage",
        "resolution",
        "--annotators",
        "6",
        "--clickers",
        "1",
        "--accuracy",
        "1.0",
        *config,
    )
    cast = int(simulated[0].split()[1])
    # The clicker is the last of the six accounts (`annotate simulate --clickers`), by email.
    clicker = max(account.email for account in load_accounts(cli_settings) if account.role == "resolver")
    collected = annotate("collect", "--out", str(out), *config)
    assert collected.exit_code == 0
    # Each of its votes set aside is told in a line, and that it is paused.
    told = collected.stderr.splitlines()
    aside = [line for line in told if line.startswith(f"set aside the resolution vote of {clicker} ")]
    assert any(line.startswith(f"PAUSED {clicker} since ") for line in told)
    report = orjson.loads((out / "collect.json").read_bytes())
    assert list(report["paused_accounts"]) == [clicker]
    assert report["paused_accounts"][clicker]["controls"] <= 6
    votes = pq.read_table(out / "votes.parquet").to_pylist()
    refused = [orjson.loads(line) for line in (out / "refused-votes.jsonl").read_bytes().splitlines()]
    assert {row["email"] for row in refused} == {clicker} and {row["reason"] for row in refused} == {
        "account_paused"
    }
    assert clicker not in {report["emails"][str(vote["annotator_id"])] for vote in votes}
    assert len(votes) + len(refused) == cast and len(aside) == len(refused)  # nothing lost
    status = orjson.loads(annotate("status", "--out", str(out), "--json", *config).stdout)
    assert status["stages"][RESOLUTION]["outcomes"] == {"kept": 20}
    assert status["annotators"][clicker]["votes"] == 0
    assert status["annotators"][clicker]["paused"]["why"].endswith(
        "control items right (" + str(report["paused_accounts"][clicker]["control_accuracy"]) + ")"
    )
    # The access gate grants it nothing while it is paused, and its project again once resumed.
    account = next(a for a in load_accounts(cli_settings) if a.email == clicker)
    session = AnnotatorSession(cli_settings, account)
    try:
        assert session.http.get("/api/projects").json()["results"] == []
        assert ok("resume", clicker) == [f"{clicker} resumed: its votes count again at the next collect"]
        assert [p["id"] for p in session.http.get("/api/projects").json()["results"]] == [
            report["projects"][RESOLUTION]
        ]
    finally:
        session.close()
    assert annotate("collect", "--out", str(out), *config).exit_code == 0
    again = orjson.loads((out / "collect.json").read_bytes())
    assert again["paused_accounts"] == {} and again["votes"] == cast


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
    state = tmp_path / "state"
    settings = Settings(
        url=url, username="admin", password="pw", api_key="0" * 40, project="down", state_dir=state
    )
    use_label_studio(monkeypatch, settings)
    items = write_items(tmp_path / "run.items.parquet")
    out = tmp_path / "annotation"
    for command in (
        ["push", str(items)],
        ["promote", str(items), "--out", str(out)],
        ["users", "--role", "screener", "--count", "1"],
        ["collect", "--out", str(out)],
        ["simulate", "--stage", "resolution", "--annotators", "2"],
    ):
        result = annotate(*command)
        assert result.exit_code == 2, (command, result.output)
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (command, result.stderr)
        assert lines[0].startswith(f"error: Label Studio is not reachable at {url} ("), lines[0]
        assert "Traceback" not in result.output
    assert not out.exists() and not state.exists()
    status = annotate("status", "--out", str(out))
    assert status.exit_code == 2 and status.stderr.startswith(f"error: {out / 'collect.json'} not found")
