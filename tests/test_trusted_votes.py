"""What the pipeline trusts of a real Label Studio, whatever is done there: votes as first seen (changed,
re-assigned or deleted annotations change nothing and are reported), the task data and projects it
recorded (edited task data, a look-alike project, a deleted project change nothing and are reported).

The attacks are made with the admin's token: on a Label Studio the pipeline does not run, any account can
make them; the Label Studio the pipeline runs refuses them to annotators (test_access_gate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from knowref60k.core.errors import UserError
from knowref60k.labelling.decisions import RESOLUTION
from knowref60k.labelling.separation import CHANGED_AFTER_SEEN, TASK_DATA_CHANGED
from knowref60k_annotation.accounts import create_accounts
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.settings import Settings
from knowref60k_annotation.simulate import AnnotatorSession
from tests.test_annotation import CONFIG, item


def choose(session: AnnotatorSession, task_id: int, label: str) -> int:
    """An honest resolver's vote for the name `label`, as the labelling page posts it."""
    result = [
        {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
    ]
    posted = session.http.post(f"/api/tasks/{task_id}/annotations/", json={"result": result})
    assert posted.status_code == 201, posted.text[:300]
    return int(posted.json()["id"])


def votes(folder: Path) -> list[tuple[Any, ...]]:
    rows = pq.read_table(folder / "votes.parquet").to_pylist()
    return [(v["item_id"], v["annotator_id"], v["choice"], v["annotation_id"]) for v in rows]


def one_task(client: LabelStudioClient) -> tuple[int, int]:
    """The resolution project and its one task, of item 0."""
    client.push([item(0)], RESOLUTION, 5, seed=0)
    project = client.existing_project(RESOLUTION)
    (task_id,) = tasks_by_item(client, project).values()
    return project, task_id


def tasks_by_item(client: LabelStudioClient, project: int) -> dict[str, int]:
    return {task.item_id: task_id for task_id, task in client.records.tasks_of(project).items()}


@pytest.mark.integration
def test_votes_changed_reassigned_or_deleted_after_they_were_seen_count_as_first_seen(
    project_settings: Settings, tmp_path: Path
) -> None:
    with LabelStudioClient(project_settings) as client:
        _, task_id = one_task(client)
        accounts = create_accounts(client, "resolver", 4)
        sessions = [AnnotatorSession(project_settings, account) for account in accounts]
        ids = [choose(session, task_id, item(0)["name1"]) for session in sessions[:3]]
        first = collect(client, tmp_path / "a", CONFIG)
        assert first["votes"] == 3 and not first["refused_votes"]
        other = item(0)["name2"]
        changed = [
            {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [other]}}
        ]
        client.sdk.annotations.update(ids[0], result=changed)  # another choice
        client.sdk.annotations.update(ids[1], completed_by=accounts[3].user_id)  # another author
        client.sdk.annotations.delete(ids[2])
        second = collect(client, tmp_path / "b", CONFIG)
        for session in sessions:
            session.close()
    assert votes(tmp_path / "b") == votes(tmp_path / "a")
    assert second["refused_votes"] == {CHANGED_AFTER_SEEN: 2}
    assert second["differences"] == {"resolution.changed_after_seen": 2, "resolution.gone_after_seen": 1}
    from knowref60k.labelling.cost_model import CostConfig
    from knowref60k_annotation.status import read_status, render_status

    shown = read_status(tmp_path / "b", CONFIG, CostConfig())
    assert shown["label_studio"]["differences"] == second["differences"]
    assert "resolution.gone_after_seen" in render_status(shown)
    ledger = (project_settings.state_dir / "records" / "annotations.jsonl").read_bytes().splitlines()
    assert len(ledger) == 5  # three votes as first seen, two later versions


@pytest.mark.integration
def test_task_data_edited_in_label_studio_neither_crashes_nor_moves_a_vote(
    project_settings: Settings, tmp_path: Path
) -> None:
    """The answer mapping swapped, an item id repeated or made a list, the shown sentence rewritten:
    the mapping and the items come from the pipeline's records, the rewritten task's votes are refused."""
    with LabelStudioClient(project_settings) as client:
        client.push([item(n) for n in range(3)], RESOLUTION, 5, seed=0)
        project = client.existing_project(RESOLUTION)
        task_of = tasks_by_item(client, project)
        first, second, third = (task_of[item(n)["candidate_id"]] for n in range(3))
        stored = {tid: client.stored_task(tid)["data"] for tid in (first, second, third)}  # type: ignore[index]
        swapped = {
            label: {"antecedent1": "antecedent2", "antecedent2": "antecedent1"}.get(code, code)
            for label, code in stored[first]["answer_identity"].items()
        }
        client.sdk.tasks.update(str(first), data={**stored[first], "answer_identity": swapped})
        client.sdk.tasks.update(str(second), data={**stored[second], "item_id": item(0)["candidate_id"]})
        rewritten = {**stored[third], "item_id": [1], "sentence_html": "<b>something else</b>"}
        client.sdk.tasks.update(str(third), data=rewritten)
        (account,) = create_accounts(client, "resolver", 1)
        session = AnnotatorSession(project_settings, account)
        for number, task_id in enumerate((first, second, third)):
            choose(session, task_id, item(number)["name1"])
        session.close()
        report = collect(client, tmp_path, CONFIG)
    assert [(v[0], v[2]) for v in votes(tmp_path)] == [
        (item(0)["candidate_id"], "antecedent1"),
        (item(1)["candidate_id"], "antecedent1"),
    ]
    assert report["refused_votes"] == {TASK_DATA_CHANGED: 1}
    assert report["differences"] == {
        "resolution.task_data_changed": 1,
        "resolution.task_hidden_data_changed": 2,
    }
    tasks = pq.read_table(tmp_path / "tasks.parquet").to_pylist()
    assert sorted(task["item_id"] for task in tasks) == [item(n)["candidate_id"] for n in range(3)]


@pytest.mark.integration
def test_a_look_alike_project_is_ignored_and_a_deleted_one_keeps_its_votes(
    project_settings: Settings, tmp_path: Path
) -> None:
    with LabelStudioClient(project_settings) as client:
        project, task_id = one_task(client)
        sessions = [AnnotatorSession(project_settings, a) for a in create_accounts(client, "resolver", 2)]
        for session in sessions:
            choose(session, task_id, item(0)["name1"])
            session.close()
        decoy = client.sdk.projects.create(
            title=client.title(RESOLUTION), label_config=client.sdk.projects.get(project).label_config
        )
        report = collect(client, tmp_path / "a", CONFIG)
        assert report["projects"] == {RESOLUTION: project} and report["votes"] == 2
        assert report["lookalike_projects"] == {RESOLUTION: [int(decoy.id)]}

        client.sdk.projects.delete(project)
        gone = collect(client, tmp_path / "b", CONFIG)
        assert votes(tmp_path / "b") == votes(tmp_path / "a")
        assert gone["projects_gone"] == {RESOLUTION: [project]}
        assert gone["differences"] == {"resolution.project_gone": 1}
        with pytest.raises(
            UserError, match=f"project the pipeline made .* \\(id {project}\\) is gone.*forget-project"
        ):
            client.push([item(1)], RESOLUTION, 5, seed=0)
        assert client.records.forget_project(client.title(RESOLUTION)) == project
        client.sdk.projects.delete(decoy.id)  # made with the pipeline's own token: it would be adopted
        client.push([item(1)], RESOLUTION, 5, seed=0)
        assert client.existing_project(RESOLUTION) not in (project, int(decoy.id))
        after = collect(client, tmp_path / "c", CONFIG)  # the retired project's votes still count
        assert after["projects_gone"] == {RESOLUTION: [project]} and votes(tmp_path / "c") == votes(
            tmp_path / "a"
        )


def test_the_ledger_keeps_first_versions_and_reports_later_ones(tmp_path: Path) -> None:
    """Without a server: a vote changed, then its task's export without it; the first version counts."""
    from knowref60k_annotation.ledger import VoteLedger
    from knowref60k_annotation.records import Records
    from knowref60k_annotation.trusted import trusted_votes

    settings = Settings("http://127.0.0.1:9", "u", "p", "k", state_dir=tmp_path)
    data = {"item_id": "i", "sentence_html": "h", "options": [], "answer_identity": {"A": "antecedent1"}}
    Records(settings).record_tasks(1, RESOLUTION, [(5, data, "i", None)])

    def annotation(annotation_id: int, author: int, label: str) -> dict[str, Any]:
        result = [{"type": "choices", "value": {"choices": [label]}}]
        time = "2026-01-01T00:00:00Z"
        return {
            "id": annotation_id,
            "completed_by": author,
            "updated_by": author,
            "result": result,
            "created_at": time,
            "updated_at": time,
        }

    def read(annotations: list[dict[str, Any]]) -> Any:
        export = [{"id": 5, "data": data, "annotations": annotations}]
        return trusted_votes(Records(settings), VoteLedger(settings), RESOLUTION, 1, export, frozenset())

    first = read([annotation(1, 2, "A"), annotation(2, 3, "A")])
    assert [v["choice"] for v in first.read.votes] == ["antecedent1"] * 2 and not first.differences
    later = read([annotation(1, 2, "B")])
    assert [v["choice"] for v in later.read.votes] == ["antecedent1"] * 2
    assert [reason for _, reason in later.read.refused] == [CHANGED_AFTER_SEEN]
    assert later.differences == {"changed_after_seen": 1, "gone_after_seen": 1}
    gone = trusted_votes(Records(settings), VoteLedger(settings), RESOLUTION, 1, None, frozenset())
    assert len(gone.read.votes) == 2 and gone.differences == {"project_gone": 1}


@pytest.mark.integration
def test_a_project_made_before_the_records_is_adopted_with_its_tasks(
    project_settings: Settings, tmp_path: Path
) -> None:
    """A project the pipeline's account made while nothing was recorded (an earlier version, or records
    lost): its tasks are recorded as found, so their votes count."""
    with LabelStudioClient(project_settings) as client:
        project, task_id = one_task(client)
        (account,) = create_accounts(client, "resolver", 1)
        session = AnnotatorSession(project_settings, account)
        choose(session, task_id, item(0)["name1"])
        session.close()
    lost = project_settings.state_dir / "records"
    for name in ("projects.json", "tasks.jsonl", "annotations.jsonl"):
        (lost / name).unlink(missing_ok=True)  # no collect has run: no annotations.jsonl yet
    with LabelStudioClient(project_settings) as client:
        report = collect(client, tmp_path / "votes", CONFIG)
        assert report["projects"] == {RESOLUTION: project} and not report["refused_votes"]
        assert [(v[0], v[2]) for v in votes(tmp_path / "votes")] == [(item(0)["candidate_id"], "antecedent1")]
        assert client.records.task(project, task_id) is not None
