"""The access gate of the Label Studio the pipeline runs, against a real one started by the suite: an
annotator account opens only its stage's project, votes only as itself, changes or deletes only its own
votes, writes no task, project, webhook, view, member or grant, and nobody signs up uninvited.
(The same gate on PostgreSQL: test_receiver.py.)"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from knowref60k.core.errors import UserError
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k_annotation.accounts import create_accounts, sign_up
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.labelstudio_app.labelstudio_contract import GRANTS_PATH
from knowref60k_annotation.settings import Settings
from knowref60k_annotation.simulate import AnnotatorSession
from tests.test_annotation import CONFIG, item

REFUSED = 403


def result(label: str) -> list[dict[str, object]]:
    return [
        {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
    ]


@pytest.mark.integration
def test_an_annotator_opens_its_stage_and_writes_only_its_own_votes(
    project_settings: Settings, tmp_path: Path
) -> None:
    with LabelStudioClient(project_settings) as client:
        client.push([item(0)], SCREENING, 3, seed=0)
        client.push([item(0)], RESOLUTION, 5, seed=0)
        screening, resolution = client.existing_project(SCREENING), client.existing_project(RESOLUTION)
        (task_id,) = client.records.tasks_of(resolution)
        one, other = create_accounts(client, "resolver", 2)
        (screener,) = create_accounts(client, "screener", 1)
        a, b, s = (AnnotatorSession(project_settings, account) for account in (one, other, screener))
        label = item(0)["name1"]
        try:
            listed = a.http.get("/api/projects/").json()
            assert {project["id"] for project in listed["results"]} == {resolution}
            for path in (
                f"/api/projects/{screening}/",
                f"/api/projects/{screening}/next",
                f"/projects/{screening}/data",
            ):
                assert a.http.get(path).status_code == REFUSED, path
            assert s.http.get(f"/api/projects/{resolution}/").status_code == REFUSED
            assert s.http.get(f"/api/tasks/{task_id}").status_code == REFUSED

            votes = f"/api/tasks/{task_id}/annotations/"
            forged = a.http.post(votes, json={"result": result(label), "completed_by": other.user_id})
            assert forged.status_code == REFUSED and "its writer's own name" in forged.text
            own = a.http.post(votes, json={"result": result(label)})
            assert own.status_code == 201
            mine = own.json()["id"]
            theirs = b.http.post(votes, json={"result": result(label)}).json()["id"]
            assert (
                b.http.patch(f"/api/annotations/{mine}/", json={"result": result("x")}).status_code == REFUSED
            )
            assert b.http.delete(f"/api/annotations/{mine}/").status_code == REFUSED
            handed = b.http.patch(f"/api/annotations/{theirs}/", json={"completed_by": one.user_id})
            assert handed.status_code == REFUSED

            for method, path, body in [
                ("PATCH", f"/api/tasks/{task_id}/", {"data": {"item_id": "x"}}),
                ("DELETE", f"/api/tasks/{task_id}/", None),
                ("POST", "/api/projects/", {"title": client.title(RESOLUTION)}),
                ("PATCH", f"/api/projects/{resolution}/", {"title": "renamed"}),
                ("DELETE", f"/api/projects/{resolution}/", None),
                ("POST", f"/api/projects/{resolution}/import", [{"data": {"item_id": "x"}}]),
                ("GET", f"/api/projects/{resolution}/export?exportType=JSON", None),
                ("GET", "/api/webhooks/", None),
                ("POST", "/api/webhooks/", {"url": "http://127.0.0.1:1/", "project": resolution}),
                (
                    "POST",
                    f"/api/dm/actions?id=delete_tasks&project={resolution}",
                    {"selectedItems": {"all": True}},
                ),
                ("PATCH", f"/api/users/{other.user_id}/", {"first_name": "x"}),
                ("GET", GRANTS_PATH, None),
                ("POST", GRANTS_PATH, {"projects_of_user": {str(one.user_id): [screening]}}),
            ]:
                answer = a.http.request(method, path, json=body)
                assert answer.status_code == REFUSED, (method, path, answer.status_code, answer.text[:200])
            # Nor by another spelling of the token's keyword, a form instead of JSON, a move of a vote
            # to another task, or an email made the admin's in another case.
            token = a.http.headers["Authorization"].split(" ", 1)[1]
            for header in (f"token {token}", f"TOKEN {token}"):
                plain = httpx.post(
                    f"{project_settings.url}{votes}",
                    json={"result": result(label), "completed_by": other.user_id},
                    headers={"Authorization": header},
                )
                assert plain.status_code == REFUSED, header
            bearer = {"Authorization": "Bearer x"}
            unknown = httpx.post(f"{project_settings.url}{votes}", json={}, headers=bearer)
            assert unknown.status_code == 401 and "unknown credentials" in unknown.text
            as_form = a.http.post(votes, data={"result": "[]", "completed_by": str(other.user_id)})
            assert as_form.status_code == REFUSED and "JSON" in as_form.text
            (screening_task,) = client.records.tasks_of(screening)
            moved = a.http.patch(f"/api/annotations/{mine}/", json={"task": screening_task})
            assert moved.status_code == REFUSED
            admin_like = {"email": project_settings.username.upper()}
            assert a.http.patch(f"/api/users/{one.user_id}/", json=admin_like).status_code == REFUSED
            assert a.http.patch(f"/api/users/{one.user_id}/", json={"first_name": "Ann"}).status_code == 200
            assert (
                a.http.patch(f"/api/annotations/{mine}/", json={"result": result(label)}).status_code == 200
            )
        finally:
            for session in (a, b, s):
                session.close()
        report = collect(client, tmp_path / "votes", CONFIG)
    assert report["votes_by_stage"][RESOLUTION] == 2 and not report["refused_votes"]
    assert report["projects"] == {SCREENING: screening, RESOLUTION: resolution}


@pytest.mark.integration
def test_sign_up_is_by_the_pipelines_invitation_only(project_settings: Settings) -> None:
    with pytest.raises(UserError, match=r"signing up uninvited@example\.org failed: 403"):
        sign_up(project_settings, "uninvited@example.org", "a-long-password-1")
    with pytest.raises(UserError, match="failed: 403"):
        sign_up(project_settings, "guessed@example.org", "a-long-password-1", invite="guessed")
    with LabelStudioClient(project_settings) as client:
        invitation = client.invitation()
        assert invitation and client.invitation() == invitation  # made once
        sign_up(project_settings, "invited@example.org", "a-long-password-1", invite=invitation)
        assert "invited@example.org" in {user["email"] for user in client.users()}
    # Nor can a browser page the admin has open post grants: by API token only.
    with httpx.Client(base_url=project_settings.url) as anonymous:
        assert anonymous.post(GRANTS_PATH, json={}).status_code == 401
