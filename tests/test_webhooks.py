"""The projects' webhooks kept as the pipeline set them, and the SSRF guard that lets Label Studio reach
the vote receiver and no other private address: the review's decisions, then annotator accounts of a
real Label Studio trying to redirect and silence the pipeline."""

from __future__ import annotations

import dataclasses
import ipaddress
from pathlib import Path
from typing import Any

import httpx
import pytest

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k_annotation.accounts import create_accounts
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.receiver import ReceiverProcess
from knowref60k_annotation.settings import (
    SECRET_HEADER,
    WEBHOOK_ACTIONS,
    Settings,
    receiver_url,
    webhook_secret,
)
from knowref60k_annotation.simulate import AnnotatorSession
from knowref60k_annotation.webhooks import SPECIAL_PURPOSE_NETWORKS, WebhookSpec, banned_networks, review
from tests.test_annotation import item

SPEC = WebhookSpec("http://127.0.0.1:8090/", "s3cret")
CONFIG = LabellingConfig(controls=(), audit_share=0.0)
# An address outside every private range, written as an address so that nothing is looked up.
PUBLIC = "http://93.184.216.34/collect"


def hook(hook_id: int, project: int | None, url: str = SPEC.url, **changed: Any) -> dict[str, Any]:
    return {"id": hook_id, "project": project, "url": url, **SPEC.fields(), **changed}


def test_the_review_keeps_our_webhook_removes_any_other_and_restores_what_was_changed() -> None:
    hooks = [
        hook(1, 10),
        hook(2, 11, actions=[]),  # an annotator emptied its actions
        hook(3, 10),  # a second webhook of ours sends each vote twice
        hook(4, 10, url=PUBLIC),
        hook(5, None, url=PUBLIC),  # the organization's: fires for every project
        hook(6, 99, url=PUBLIC),  # another project on the same server
        hook(7, 11, headers={SECRET_HEADER: "guessed"}, is_active=False),
    ]
    found = review(hooks, [10, 11, 12], SPEC)
    assert found.remove == [3, 4, 5, 7] and found.restore == {2: ["actions"]} and found.create == [12]
    assert found.lines[0] == "restored webhook 2 of project 11: actions"
    assert "removed webhook 5 of the whole organization to 'http://93.184.216.34/collect'" in found.lines[3]
    assert review([hook(1, 10, actions=list(reversed(WEBHOOK_ACTIONS)))], [10], SPEC).lines == []


def test_the_guard_bans_every_special_purpose_network_but_the_receivers_address() -> None:
    banned = [ipaddress.ip_network(network) for network in banned_networks({"127.0.0.1"})]

    def is_banned(address: str) -> bool:
        return any(ipaddress.ip_address(address) in network for network in banned)

    assert not is_banned("127.0.0.1") and not is_banned("93.184.216.34")
    for address in ("127.0.0.2", "127.0.0.0", "127.255.255.255", "10.1.2.3", "169.254.169.254", "::1"):
        assert is_banned(address), address
    assert sorted(banned_networks(())) == sorted(SPECIAL_PURPOSE_NETWORKS)


def webhooks_as(http: httpx.Client, projects: list[int]) -> list[dict[str, Any]]:
    """The webhooks of `projects` (the server is shared with other tests' projects)."""
    listed: list[dict[str, Any]] = http.get("/api/webhooks/").json()
    return [hook for hook in listed if hook["project"] in projects]


@pytest.mark.integration
def test_annotators_can_neither_redirect_nor_silence_the_pipeline(
    label_studio: Settings, tmp_path: Path
) -> None:
    """On the Label Studio the pipeline runs an annotator can neither read nor write webhooks; where
    any account could (a Label Studio without the gate: here the admin's token plays it), the SSRF guard
    refuses private addresses and every sync puts the pipeline's webhooks back."""
    settings = dataclasses.replace(label_studio, project="webhook tampering", state_dir=tmp_path / "state")
    receiver = ReceiverProcess(settings)
    with LabelStudioClient(settings) as client:
        client.push([item(0)], RESOLUTION, CONFIG.initial_overlap(RESOLUTION), seed=0)
        client.push([item(1)], SCREENING, CONFIG.initial_overlap(SCREENING), seed=0)
        projects = sorted(client.existing_project(stage) for stage in (RESOLUTION, SCREENING))
        (account,) = create_accounts(client, "screener", 1)
        session = AnnotatorSession(settings, account)
        for method, body in (("GET", None), ("POST", {"project": projects[0], "url": PUBLIC})):
            gated = session.http.request(method, "/api/webhooks/", json=body)
            assert gated.status_code == 403 and "access gate" in gated.text, method
        session.close()
        http = httpx.Client(base_url=settings.url, headers={"Authorization": f"Token {settings.api_key}"})
        for private in ("http://127.0.0.2:18199/x", "http://169.254.169.254/latest/meta-data/"):
            refused = http.post("/api/webhooks/", json={"project": projects[0], "url": private})
            assert refused.status_code == 403 and "reserved network" in refused.text, private
        # The SSRF guard lets the receiver's host through on any port; the gate only on the receiver's.
        for elsewhere in ("http://127.0.0.1:18199/x", "http://localhost:18199/"):
            other_port = {"project": projects[0], "url": elsewhere, "send_for_all_actions": True}
            refused = http.post("/api/webhooks/", json=other_port)
            assert refused.status_code == 403 and "receiver's port only" in refused.text, elsewhere
        # A public address is let through: such a webhook lasts until the next sync.
        made = [http.post("/api/webhooks/", json={"project": p, "url": PUBLIC}) for p in projects]
        assert [r.status_code for r in made] == [201] * 2
        ours = [h for h in webhooks_as(http, projects) if h["url"] == receiver_url(settings)]
        assert sorted(h["project"] for h in ours) == projects
        emptied = {"is_active": True, "actions": []}
        silenced = http.patch(f"/api/webhooks/{ours[0]['id']}/", json=emptied)
        assert silenced.status_code == 200
        assert http.delete(f"/api/webhooks/{ours[1]['id']}/").status_code == 204
        report = collect(client, tmp_path / "votes", CONFIG)
        paused = http.patch(f"/api/webhooks/{ours[0]['id']}/", json={"is_active": False})
        assert paused.status_code == 200
        receiver.start(CONFIG, [])  # reviews them before it listens
        try:
            again = webhooks_as(http, projects)
        finally:
            receiver.stop()
            http.close()
    changes = report["webhook_changes"]
    assert sum(line.startswith("removed webhook") for line in changes) == 2
    assert f"restored webhook {ours[0]['id']} of project {projects[0]}: actions" in changes
    assert any(line.startswith(f"made the webhook of project {projects[1]}") for line in changes)
    assert [(h["project"], h["url"]) for h in again] == [(p, receiver_url(settings)) for p in projects]
    spec = WebhookSpec(receiver_url(settings), webhook_secret(settings))
    assert all(spec.differs(h) == [] for h in again)
