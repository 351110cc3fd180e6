"""Five-way labelling against a real Label Studio server started by the test suite."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from annotation.client import LabelStudioClient, _simulated_choice
from annotation.settings import Settings
from annotation.tasks import NEITHER, names_first_is_name1, sentence_html, simulated_truth, task_for
from annotation.votes import votes_from_export
from knowref60k.core.errors import UserError

NAMES = [("Paul", "Mary"), ("Susan", "Linda"), ("James", "Robert"), ("Karen", "Betty")]


def item(number: int) -> dict[str, Any]:
    name1, name2 = NAMES[number % len(NAMES)]
    pronoun = "he" if number % 2 == 0 and name1 in ("Paul", "James") else "she"
    sentence = f"{name1} called {name2} on day {number} because {pronoun} was bored."
    start = sentence.index(f" {pronoun} ") + 1
    return {
        "candidate_id": f"item-{number:05d}",
        "source_file": "RC_2099-01.zst",
        "perturbed_sentence": sentence,
        "name1": name1,
        "name2": name2,
        "perturbed_pronoun_start": start,
        "perturbed_pronoun_end": start + len(pronoun),
    }


def test_task_shows_the_sentence_highlighted_and_shuffles_names_by_identity() -> None:
    shown_first = set()
    for number in range(40):
        data = task_for(item(number), seed=7)["data"]
        assert data["options"][-1] == {"value": NEITHER}
        identity = data["answer_identity"]
        assert (
            identity[item(number)["name1"]] == "antecedent1"
            and identity[item(number)["name2"]] == "antecedent2"
        )
        shown_first.add(data["options"][0]["value"] == item(number)["name1"])
    assert shown_first == {True, False}
    # Pinned: the order shown for an item is the same on any machine and in any later push.
    assert [names_first_is_name1(f"item-{n:05d}", 7) for n in range(8)] == [
        False, True, False, True, False, False, False, False
    ]  # fmt: skip
    sentence = "A<b> & Paul called Mary because she left."
    start = sentence.index("she")
    html = sentence_html(
        {
            **item(1),
            "perturbed_sentence": sentence,
            "perturbed_pronoun_start": start,
            "perturbed_pronoun_end": start + 3,
        }
    )
    assert '<span class="knowref-pronoun">she</span>' in html and "A&lt;b&gt; &amp;" in html


def test_simulated_annotators_are_pinned() -> None:
    truth = simulated_truth(3)
    assert [truth(f"item-{n:05d}") for n in range(6)] == [
        "antecedent1", "antecedent2", "antecedent2", "antecedent2", "antecedent1", "antecedent1"
    ]  # fmt: skip
    choices = [_simulated_choice("item-00000", user, 0.8, 3, truth) for user in range(1, 11)]
    assert choices == [
        "antecedent1", "antecedent1", "antecedent1", "antecedent1", "neither",
        "antecedent1", "antecedent2", "antecedent1", "antecedent1", "antecedent1",
    ]  # fmt: skip
    for user in range(50):
        assert _simulated_choice("item-00001", user, 1.0, 3, truth) == "antecedent2"
        assert _simulated_choice("item-00001", user, 0.0, 3, truth) in ("antecedent1", "neither")


def annotation(
    annotator: int, label: str, when: str, cancelled: bool = False, number: int = 1
) -> dict[str, Any]:
    return {
        "id": number,
        "completed_by": annotator,
        "was_cancelled": cancelled,
        "lead_time": 3.5,
        "created_at": when,
        "updated_at": when,
        "result": [] if cancelled else [{"type": "choices", "value": {"choices": [label]}}],
    }


def test_votes_keep_the_latest_per_person_and_count_skips() -> None:
    data = task_for(item(3), seed=0)["data"]
    task = {
        "id": 9,
        "data": data,
        "annotations": [
            annotation(1, "Karen", "2026-01-01T10:00:00Z", number=1),
            annotation(1, "Betty", "2026-01-01T11:00:00Z", number=2),
            annotation(2, NEITHER, "2026-01-01T10:00:00Z", number=3),
            annotation(3, "", "2026-01-01T10:00:00Z", cancelled=True, number=4),
        ],
    }
    votes, counts = votes_from_export([task], frozenset({2}))
    assert [(v["annotator_id"], v["choice"], v["simulated"]) for v in votes] == [
        (1, "antecedent2", False),
        (2, "neither", True),
    ]
    assert (counts.annotations, counts.duplicate_annotations, counts.skipped, counts.votes) == (4, 1, 1, 2)


@pytest.fixture
def project_settings(label_studio: Settings, request: pytest.FixtureRequest) -> Settings:
    """A project of its own for each test, on the shared server."""
    return dataclasses.replace(label_studio, project=f"test {request.node.name}"[:50])


@pytest.mark.integration
def test_project_is_created_once_with_five_annotators_per_task(project_settings: Settings) -> None:
    with LabelStudioClient(project_settings) as client:
        first = client.ensure_project()
        assert client.ensure_project() == first
        project = client.sdk.projects.get(id=first)
        assert project.maximum_annotations == 5
        assert "Who does the highlighted word refer to?" in (project.expert_instruction or "")
        assert project.show_instruction
        (view,) = client.sdk.views.list(project=first)  # one view, however often the project is ensured
        hidden = set(view.data["hiddenColumns"]["explore"])
        raw = {"tasks:data.sentence_html", "tasks:data.answer_identity", "tasks:annotations_results"}
        assert raw <= hidden
        assert "tasks:data.sentence" not in hidden


@pytest.mark.integration
def test_push_200_items_twice_and_resume_after_an_interruption(project_settings: Settings) -> None:
    items = [item(n) for n in range(200)]
    with LabelStudioClient(project_settings) as client:
        partial = client.push(items[:80], seed=0, batch_size=50)  # a push that stopped after 80 items
        assert (partial.pushed, partial.tasks_in_project) == (80, 80)
        resumed = client.push(items, seed=0, batch_size=50)
        assert (resumed.pushed, resumed.already_there, resumed.tasks_in_project) == (120, 80, 200)
        again = client.push(items, seed=0)
        assert (again.pushed, again.tasks_in_project) == (0, 200)
        exported = client.export(client.existing_project())
        assert sorted(task["data"]["item_id"] for task in exported) == [i["candidate_id"] for i in items]


def log_in(settings: Settings, email: str, password: str) -> httpx.Client:
    session = httpx.Client(base_url=settings.url, timeout=60)
    session.get("/user/login/")
    response = session.post(
        "/user/login/",
        data={"email": email, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{settings.url}/user/login/"},
    )
    assert response.status_code == 302, response.text[:300]
    return session


@pytest.mark.integration
def test_simulated_annotators_repeated_annotation_and_collect(
    project_settings: Settings, tmp_path: Path
) -> None:
    items = [item(n) for n in range(12)]
    with LabelStudioClient(project_settings) as client:
        client.push(items, seed=0)
        truth = simulated_truth(3)
        assert client.simulate(5, 0.8, 3, truth) == 60
        assert client.simulate(5, 0.8, 3, truth) == 0  # nothing left to do for the same five
        votes_path, report = client.collect(tmp_path)
        assert (report["votes"], report["new_votes"], report["simulated_votes"]) == (60, 60, 60)

        # a real account signs up, logs in, labels one task twice through the web API
        human = client.create_annotators(1)[0]
        session = log_in(project_settings, human.email, human.password)
        whoami = session.get("/api/current-user/whoami").json()
        assert whoami["email"] == human.email
        task = next(
            t for t in client.export(client.existing_project()) if t["data"]["item_id"] == "item-00000"
        )
        labels = list(task["data"]["answer_identity"])
        headers = {"X-CSRFToken": session.cookies["csrftoken"], "Referer": project_settings.url}
        for label in (labels[0], labels[1]):
            result = [
                {
                    "from_name": "referent",
                    "to_name": "sentence",
                    "type": "choices",
                    "value": {"choices": [label]},
                }
            ]
            response = session.post(
                f"/api/tasks/{task['id']}/annotations", json={"result": result}, headers=headers
            )
            assert response.status_code == 201, response.text[:300]
        _, second = client.collect(tmp_path)

    assert (second["votes"], second["new_votes"], second["duplicate_annotations"]) == (61, 1, 1)
    votes = pq.read_table(votes_path).to_pylist()
    human_votes = [v for v in votes if v["annotator_id"] == human.user_id]
    assert len(human_votes) == 1 and not human_votes[0]["simulated"]
    assert human_votes[0]["choice"] == task["data"]["answer_identity"][labels[1]]
    for vote in votes:
        if vote["simulated"]:
            assert vote["choice"] == _simulated_choice(vote["item_id"], vote["annotator_id"], 0.8, 3, truth)
    assert {v["item_id"] for v in votes} == {i["candidate_id"] for i in items}
    assert all(v["updated_at"] >= v["created_at"] for v in votes)
    assert {v["lead_time"] for v in votes if v["simulated"]} == {5.0}


@pytest.mark.integration
def test_server_trouble_is_a_clear_error(project_settings: Settings, tmp_path: Path) -> None:
    with (
        LabelStudioClient(dataclasses.replace(project_settings, api_key="0" * 40)) as client,
        pytest.raises(UserError, match="refused the API token"),
    ):
        client.ensure_project()
    with (
        LabelStudioClient(dataclasses.replace(project_settings, project="never pushed")) as client,
        pytest.raises(UserError, match=r"not found .*deleted"),
    ):
        client.collect(tmp_path)
    down = dataclasses.replace(project_settings, url="http://127.0.0.1:9")
    with (
        LabelStudioClient(down) as client,
        pytest.raises(UserError, match=re.escape("not reachable at http://127.0.0.1:9")),
    ):
        client.push([item(1)], seed=0)
    assert not (tmp_path / "votes.parquet").exists()


def _masked_ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    """Word n-grams with every capitalised word as NAME: a perturbed copy of a sentence still matches."""
    words = ["NAME" if w[0].isupper() else w.lower() for w in re.findall(r"[\w']+", text)]
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.integration
def test_no_guideline_example_is_a_real_item_or_a_benchmark_sentence() -> None:
    import orjson

    from knowref60k.extract.gold import load_gold
    from knowref60k.overlap.benchmarks import read_benchmarks
    from knowref60k.overlap.contamination import benchmark_sentences
    from tests.conftest import REPO, shared_file

    guidelines = (REPO / "annotation" / "guidelines.html").read_text()
    examples = [re.sub(r"<[^>]+>", "", text) for text in re.findall(r"<i>(.*?)</i>", guidelines, re.S)]
    assert len(examples) >= 6
    reference = orjson.loads(shared_file("data/knowref2019/knowref2019_reddit_items.json").read_bytes())
    sentences = [s for item in reference for s in (*item["original_sentence"], item["sentence_with_pronoun"])]
    sentences += [s for _, s in benchmark_sentences(read_benchmarks(shared_file("data/benchmarks")))]
    sentences += [item.sentence for item in load_gold()]
    known = set().union(*(_masked_ngrams(s.replace("[", "").replace("]", "")) for s in sentences))
    for example in examples:
        assert not _masked_ngrams(example) & known, example
