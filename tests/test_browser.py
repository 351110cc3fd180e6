"""The annotator's side in a real browser: headless Chromium (Debian's package) driven by Playwright."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from annotation.client import LabelStudioClient
from annotation.settings import Settings
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


@pytest.mark.integration
def test_annotator_labels_in_the_browser_and_collect_sees_the_vote(
    label_studio: Settings, tmp_path: Path
) -> None:
    if not Path(CHROMIUM).exists():
        missing_prerequisite("chromium missing: `make test` installs Debian's chromium (apt-get)")
    from playwright.sync_api import sync_playwright

    settings = dataclasses.replace(label_studio, project="browser test")
    task_item = item(2)  # "James called Robert on day 2 because he was bored."
    with LabelStudioClient(settings) as client:
        client.push([task_item], seed=0)
        project = client.existing_project()
        annotator = client.create_annotators(1, prefix="browser-annotator-")[0]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{settings.url}/user/login/")
        page.fill("input[name=email]", annotator.email)
        page.fill("input[name=password]", annotator.password)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        page.goto(f"{settings.url}/projects/{project}/data")
        page.get_by_text(task_item["perturbed_sentence"]).wait_for(timeout=60_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "labelstudio-task-list.png"))
        task_list = page.inner_text("body")
        assert "sentence" in task_list  # the sentence column, as text
        for raw in ("sentence_html", "knowref-sentence", "answer_identity", "item_id", "source_file"):
            assert raw not in task_list, raw
        page.goto(f"{settings.url}/projects/{project}/data?labeling=1")
        page.wait_for_selector(".knowref-pronoun", timeout=60_000)
        assert page.get_by_text("Labeling Instructions").is_visible()  # the guidelines open first
        page.keyboard.press("Escape")
        assert page.inner_text(".knowref-sentence") == task_item["perturbed_sentence"]
        assert page.inner_text(".knowref-pronoun") == "he"
        choices = page.locator("label")  # each choice is a label with the name and its hotkey
        for label in (task_item["name1"], task_item["name2"], "Neither / can't tell"):
            assert choices.filter(has_text=label).count() == 1, label
        page.screenshot(path=str(ARTIFACTS / "labelstudio-task.png"))
        choices.filter(has_text=task_item["name2"]).click()
        with page.expect_response(
            lambda response: response.request.method == "POST" and "/annotations" in response.url
        ) as submitted:
            page.get_by_test_id("bottombar-submit-button").click()
        assert submitted.value.status == 201  # the server stored the annotation
        browser.close()

    with LabelStudioClient(settings) as client:
        votes_path, report = client.collect(tmp_path)
    assert report["votes"] == 1
    (vote,) = pq.read_table(votes_path).to_pylist()
    assert (vote["item_id"], vote["annotator_id"], vote["choice"]) == (
        task_item["candidate_id"],
        annotator.user_id,
        "antecedent2",
    )
    assert not vote["simulated"] and vote["lead_time"] > 0
