"""The annotators' side in a real browser: headless Chromium (Debian's package) driven by Playwright. A
screener judges an original sentence; a resolver works through the labelling stream and is never served
the task that four others already decided."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k_annotation.accounts import create_accounts
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.roster import Account
from knowref60k_annotation.settings import Settings
from knowref60k_annotation.simulate import AnnotatorSession
from tests.conftest import REPO, missing_prerequisite
from tests.test_annotation import item

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "output" / "test-artifacts"
# Without the background-networking flags Chromium keeps trying hosts this closed network refuses.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CONFIG = LabellingConfig(controls=())


@pytest.fixture
def browser_page() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        missing_prerequisite("chromium missing: `make test` installs Debian's chromium (apt-get)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 800})
        finally:
            browser.close()


def log_in(page: Any, settings: Settings, account: Account) -> None:
    page.goto(f"{settings.url}/user/login/")
    page.fill("input[name=email]", account.email)
    page.fill("input[name=password]", account.password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


def submit(page: Any) -> None:
    with page.expect_response(
        lambda response: response.request.method == "POST" and "/annotations" in response.url
    ) as submitted:
        page.get_by_test_id("bottombar-submit-button").click()
    assert submitted.value.status == 201  # the server stored the annotation


@pytest.mark.integration
def test_a_screener_judges_the_original_sentence_in_the_browser(
    label_studio: Settings, browser_page: Any, tmp_path: Path
) -> None:
    settings = dataclasses.replace(label_studio, project="browser screening", state_dir=tmp_path)
    task_item = item(2)  # "James called Robert on day 2 because he was bored."
    with LabelStudioClient(settings) as client:
        client.push([task_item], SCREENING, 1, seed=0)
        project = client.existing_project(SCREENING)
        (screener,) = create_accounts(client, "screener", 1)
    page = browser_page
    log_in(page, settings, screener)
    page.goto(f"{settings.url}/projects/{project}/data")
    page.get_by_text(task_item["sentence"]).wait_for(timeout=60_000)
    task_list = page.inner_text("body")
    for raw in ("sentence_html", "knowref-sentence", "answer_identity", "item_id", "source_file"):
        assert raw not in task_list, raw
    page.goto(f"{settings.url}/projects/{project}/data?labeling=1")
    page.wait_for_selector(".knowref-antecedent", timeout=60_000)
    assert page.get_by_text("Labeling Instructions").is_visible()  # the guidelines open first
    page.keyboard.press("Escape")
    assert page.inner_text(".knowref-sentence") == task_item["sentence"]
    assert [page.inner_text(s) for s in (".knowref-antecedent >> nth=0", ".knowref-antecedent >> nth=1")] == [
        "James",
        "Robert",
    ]
    assert page.inner_text(".knowref-pronoun") == "he"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "labelstudio-screening.png"))
    page.locator("label").filter(has_text="Same person").click()
    submit(page)
    with LabelStudioClient(settings) as client:
        report = collect(client, tmp_path / "votes", CONFIG)
    assert report["votes_by_stage"] == {SCREENING: 1}
    (vote,) = pq.read_table(tmp_path / "votes" / "votes.parquet").to_pylist()
    assert (vote["item_id"], vote["annotator_id"], vote["choice"]) == (
        task_item["candidate_id"],
        screener.user_id,
        "same_person",
    )


@pytest.mark.integration
def test_a_resolver_is_never_served_a_decided_task_and_labels_the_other(
    label_studio: Settings, browser_page: Any, tmp_path: Path
) -> None:
    settings = dataclasses.replace(label_studio, project="browser resolution", state_dir=tmp_path)
    decided, open_item = item(0), item(2)
    with LabelStudioClient(settings) as client:
        client.push([decided, open_item], RESOLUTION, 5, seed=0)
        project = client.existing_project(RESOLUTION)
        accounts = create_accounts(client, "resolver", 5)
        for account in accounts[:4]:  # four agree on `decided`, through the API
            session = AnnotatorSession(settings, account)
            task = next(t for t in client.export(project) if t["data"]["item_id"] == decided["candidate_id"])
            session.vote(task, "antecedent1", "referent")
            session.close()
        assert collect(client, tmp_path / "votes", CONFIG)["closed_tasks"][RESOLUTION]["closed"] == 1
    page = browser_page
    log_in(page, settings, accounts[4])
    page.goto(f"{settings.url}/projects/{project}/data?labeling=1")
    page.wait_for_selector(".knowref-pronoun", timeout=60_000)
    page.keyboard.press("Escape")
    # The stream serves the open task, not the decided one (which has the most votes: breadth first
    # would have served it first, were it not closed).
    assert page.inner_text(".knowref-sentence") == open_item["perturbed_sentence"]
    choices = page.locator("label")  # each choice is a label with the name and its hotkey
    for label in (open_item["name1"], open_item["name2"], "Neither / can't tell"):
        assert choices.filter(has_text=label).count() == 1, label
    page.screenshot(path=str(ARTIFACTS / "labelstudio-task.png"))
    choices.filter(has_text=open_item["name2"]).click()
    submit(page)
    # Nothing left for this resolver: the decided task is not served after the open one either.
    page.wait_for_function(
        f"!document.body.innerText.includes({open_item['perturbed_sentence']!r})", timeout=60_000
    )
    assert decided["perturbed_sentence"] not in page.inner_text("body")
    page.screenshot(path=str(ARTIFACTS / "labelstudio-stream-done.png"))
    with LabelStudioClient(settings) as client:
        collect(client, tmp_path / "votes", CONFIG)
    votes = pq.read_table(tmp_path / "votes" / "votes.parquet").to_pylist()
    mine = [v for v in votes if v["annotator_id"] == accounts[4].user_id]
    assert [(v["item_id"], v["choice"], v["simulated"]) for v in mine] == [
        (open_item["candidate_id"], "antecedent2", False)
    ]
    assert mine[0]["lead_time"] > 0
