"""Screening and resolution against a real Label Studio server started by the test suite: projects,
pushing, closing decided tasks, late votes, priority, roles, and collecting."""

from __future__ import annotations

import dataclasses
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import pyarrow.parquet as pq
import pytest

from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.costs import resolving
from knowref60k.labelling.decisions import KEPT, RESOLUTION, SCREENING, SCREENING_CHOICES, ResolutionRule
from knowref60k.labelling.referents import unclear_share
from knowref60k.labelling.separation import MALFORMED_RESULT, NOT_A_CHOICE, NOT_ITS_AUTHOR, explain
from knowref60k_annotation.accounts import create_accounts, enrol
from knowref60k_annotation.client import PRIORITY_MODEL, STAGE_PROJECTS, LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.roster import Account, load_accounts, roles
from knowref60k_annotation.settings import Settings
from knowref60k_annotation.simulate import (
    AnnotatorSession,
    Stream,
    account_accuracies,
    clicker,
    resolver,
    screener,
)
from knowref60k_annotation.tasks import (
    NEITHER,
    SCREENING_ANSWERS,
    names_first_is_name1,
    original_html,
    resolution_task,
    screening_task,
    sentence_html,
    simulated_truth,
)
from knowref60k_annotation.votes import votes_from_export

NAMES = [("Paul", "Mary"), ("Susan", "Linda"), ("James", "Robert"), ("Karen", "Betty")]
# No control items in these projects: the tests count every task.
CONFIG = LabellingConfig(controls=())


def item(number: int) -> dict[str, Any]:
    """An item of both shapes: the original sentence with its spans, and its renamed twin (here the same)."""
    name1, name2 = NAMES[number % len(NAMES)]
    pronoun = "he" if number % 2 == 0 and name1 in ("Paul", "James") else "she"
    sentence = f"{name1} called {name2} on day {number} because {pronoun} was bored."
    start = sentence.index(f" {pronoun} ") + 1
    second = sentence.index(name2)
    return {
        "candidate_id": f"item-{number:05d}",
        "source_file": "RC_2099-01.zst",
        "sentence": sentence,
        "antecedent1_start": 0,
        "antecedent1_end": len(name1),
        "antecedent2_start": second,
        "antecedent2_end": second + len(name2),
        "pronoun_start": start,
        "pronoun_end": start + len(pronoun),
        "perturbed_sentence": sentence,
        "name1": name1,
        "name2": name2,
        "perturbed_pronoun_start": start,
        "perturbed_pronoun_end": start + len(pronoun),
    }


def test_resolution_task_shows_the_renamed_sentence_and_shuffles_names_by_identity() -> None:
    shown_first = set()
    for number in range(40):
        data = resolution_task(item(number), seed=7)["data"]
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


def test_screening_task_shows_the_original_with_both_names_and_the_pronoun() -> None:
    original = {**item(2), "perturbed_sentence": "Carl called Otto on day 2 because he was bored."}
    data = screening_task(original, seed=7)["data"]
    assert data["sentence"] == item(2)["sentence"]  # the original, never the renamed twin
    assert original_html(original) == (
        '<div class="knowref-sentence"><span class="knowref-antecedent">James</span> called '
        '<span class="knowref-antecedent">Robert</span> on day 2 because '
        '<span class="knowref-pronoun">he</span> was bored.</div>'
    )
    assert [option["value"] for option in data["options"]] == list(SCREENING_ANSWERS.values())
    assert list(data["answer_identity"].values()) == list(SCREENING_CHOICES)


def test_simulated_annotators_are_pinned() -> None:
    truth = simulated_truth(3)
    assert [truth(f"item-{n:05d}") for n in range(6)] == [
        "antecedent1", "antecedent2", "antecedent2", "antecedent2", "antecedent1", "antecedent1"
    ]  # fmt: skip
    answer = resolver(truth, lambda _email: 0.8, 3)
    assert [answer("item-00000", index, "a") for index in range(1, 11)] == [
        "antecedent1", "antecedent1", "antecedent1", "antecedent1", "neither",
        "antecedent1", "antecedent2", "antecedent1", "antecedent1", "antecedent1",
    ]  # fmt: skip
    for user in range(50):
        assert resolver(truth, lambda _email: 1.0, 3)("item-00001", user, "a") == "antecedent2"
        assert resolver(truth, lambda _email: 0.0, 3)("item-00001", user, "a") in ("antecedent1", "neither")
        # A screener who errs lets an invalid item through, or gives a valid one a reason.
        assert screener(lambda _: "same_person", 0.0, 3)("x", user, "a") == "valid"
        assert screener(lambda _: "valid", 0.0, 3)("x", user, "a") != "valid"
        assert screener(lambda _: "same_person", 1.0, 3)("x", user, "a") == "same_person"


def test_simulated_resolvers_answer_the_truth_each_with_an_accuracy_of_its_own() -> None:
    emails = [f"simulated-resolver-{n}@x" for n in range(1, 6)]
    accuracies = account_accuracies(emails, 0.9, 0)
    assert abs(sum(accuracies.values()) / 5 - 0.9) < 1e-3 and len(set(accuracies.values())) == 5
    assert all(0.5 < value <= 1 for value in accuracies.values())
    assert account_accuracies(emails, 1.0, 0) == dict.fromkeys(emails, 1.0)
    truth = {f"clear-{n}": "antecedent2" for n in range(2000)} | {
        f"unclear-{n}": "unclear" for n in range(2000)
    }
    answer = resolver(truth.__getitem__, accuracies.__getitem__, 0)
    for email in (min(accuracies, key=accuracies.get), max(accuracies, key=accuracies.get)):
        clear = Counter(answer(f"clear-{n}", 0, email) for n in range(2000))
        # Right as often as the account's accuracy (within four standard deviations), wrong either way.
        assert abs(clear["antecedent2"] / 2000 - accuracies[email]) < 4 * (0.25 / 2000) ** 0.5
        assert clear["antecedent1"] > 0 and clear["neither"] > 0
        unclear = Counter(answer(f"unclear-{n}", 0, email) for n in range(2000))
        assert set(unclear) == {"antecedent1", "antecedent2"} and abs(unclear["antecedent1"] - 1000) < 200
    click = clicker(0)
    clicked = Counter(click(f"clear-{n}", 0, "simulated-resolver-6@x") for n in range(3000))
    assert all(abs(count - 1000) < 150 for count in clicked.values()) and len(clicked) == 3


def test_the_cost_model_expects_what_simulated_resolvers_spend() -> None:
    """The cost model's resolvers (one accuracy, the resolution gold's unclear share) against the simulated
    ones (an accuracy per account around that mean), five accounts voting on each item in a random order
    until the rule decides it: votes per item and the kept share agree within 3%."""
    rule, share = ResolutionRule(), unclear_share()
    emails = [f"simulated-resolver-{n}@x" for n in range(1, 6)]
    accuracies = account_accuracies(emails, 0.9, 7)
    coin = simulated_truth(7)
    truth = {f"i{n}": "unclear" if n % 1000 < share * 1000 else coin(f"i{n}") for n in range(6000)}
    answer = resolver(truth.__getitem__, accuracies.__getitem__, 7)
    order = random.Random(7)
    spent, kept = 0, 0
    for item_id in truth:
        choices: list[str] = []
        for index, email in enumerate(order.sample(emails, len(emails))):
            choices.append(answer(item_id, index, email))
            if (outcome := rule.outcome(choices)) is not None:
                break
        spent += len(choices)
        kept += outcome is not None and outcome[0] == KEPT
    expected = resolving(rule, 0.9, share)
    assert abs(spent / len(truth) / expected.votes_valid - 1) < 0.03
    assert abs(kept / len(truth) / expected.keep_valid - 1) < 0.03


def annotation(
    annotator: int, label: str, when: str, cancelled: bool = False, number: int = 1
) -> dict[str, Any]:
    return {
        "id": number,
        "completed_by": annotator,
        "updated_by": annotator,
        "was_cancelled": cancelled,
        "lead_time": 3.5,
        "created_at": when,
        "updated_at": when,
        "result": [] if cancelled else [{"type": "choices", "value": {"choices": [label]}}],
    }


def test_simulated_annotators_stop_only_when_everyone_found_nothing_after_the_last_settle() -> None:
    """An annotator's "nothing to do" from before a settle is stale: the settle may open a slot that only
    they can take (the others voted on that task). So, once everyone is idle and all is settled, each asks
    once more; work served in between starts the check again; nothing ends while votes are unsettled."""
    settled = [False]
    stream = Stream(lambda cast: settled[0])
    assert not stream.out_of_work("a", 2) and not stream.out_of_work("b", 2)  # a vote is unsettled
    settled[0] = True
    assert not stream.out_of_work("a", 2)  # everyone idle and settled: not the end, everyone asks again
    assert not stream.out_of_work("b", 2)
    stream.working("a")  # the settle had opened a slot that a took
    assert not stream.out_of_work("a", 2)  # everyone idle again: once more
    assert not stream.out_of_work("b", 2) and not stream.finished.is_set()
    assert stream.out_of_work("a", 2) and stream.finished.is_set()


class FakeReceiver:
    """A receiver's health as the simulation reads it: events received so far, and whether all are settled."""

    def __init__(self) -> None:
        self.queued, self.idle = 3, True

    def health(self) -> dict[str, object]:
        return {"queued": self.queued, "idle": self.idle}

    def settled(self, received: int = 0) -> bool:
        return self.idle and self.queued >= received


def test_the_simulation_waits_for_each_votes_event_to_reach_the_receiver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A vote returns to its annotator before its webhook may have reached the receiver (Label Studio
    gives up on a webhook after a second while the receiver still takes it): an idle receiver short of the
    votes cast is not settled, unless the events stay missing for LOST_EVENT_SECONDS."""
    from knowref60k_annotation import operations

    receiver = FakeReceiver()
    settled = operations.received_and_settled(receiver)  # type: ignore[arg-type]
    assert settled(0)  # the 3 events it had before are not this simulation's
    assert not settled(2)  # two votes cast, neither event received yet
    receiver.queued = 5
    assert settled(2)
    receiver.idle = False
    assert not settled(2)  # received, not yet settled
    receiver.idle = True
    clock = [1000.0]
    monkeypatch.setattr(operations.time, "monotonic", lambda: clock[0])
    assert not settled(3)  # one event missing
    clock[0] += operations.LOST_EVENT_SECONDS + 1
    assert settled(3)  # lost for good: the sync settles that vote


def test_votes_keep_the_latest_per_person_and_count_skips() -> None:
    data = resolution_task(item(3), seed=0)["data"]
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
    read = votes_from_export([task], RESOLUTION, frozenset({2}))
    votes, counts = read.votes, read.counts
    assert [(v["stage"], v["annotator_id"], v["choice"], v["simulated"]) for v in votes] == [
        (RESOLUTION, 1, "antecedent2", False),
        (RESOLUTION, 2, "neither", True),
    ]
    assert (counts.annotations, counts.duplicate_annotations, counts.skipped, counts.votes) == (4, 1, 1, 2)
    # A screening answer is not a resolution answer: refused, with its reason.
    screening_data = screening_task(item(3), seed=0)["data"]
    label = SCREENING_ANSWERS["not_a_person"]
    answered = [
        {"id": 1, "data": screening_data, "annotations": [annotation(5, label, "2026-01-01T10:00:00Z")]}
    ]
    assert [v["choice"] for v in votes_from_export(answered, SCREENING, frozenset()).votes] == [
        "not_a_person"
    ]
    wrong = votes_from_export(answered, RESOLUTION, frozenset())
    assert wrong.votes == [] and [reason for _, reason in wrong.refused] == [NOT_A_CHOICE]


def test_a_vote_or_skip_another_account_wrote_is_refused_and_an_own_skip_is_a_skip() -> None:
    """Label Studio's `updated_by` is the account that last wrote the annotation: a vote written by
    another account than its `completed_by`, or with no writer recorded, is refused; so is a skip another
    account wrote over someone's vote (it would silence it); a skip by its author, or one stored without
    a writer, is a skip."""
    data = resolution_task(item(3), seed=0)["data"]
    at = "2026-01-01T10:00:00Z"
    annotations = [
        annotation(1, "Karen", at, number=1),
        {**annotation(2, "Karen", at, number=2), "updated_by": 7},  # posted by 7 in 2's name
        {**annotation(3, "Karen", at, number=3), "updated_by": None},
        {**annotation(4, "", at, cancelled=True, number=4), "updated_by": 7},  # 7 turned 4's vote into a skip
        annotation(5, "", at, cancelled=True, number=5),
        {**annotation(6, "", at, cancelled=True, number=6), "updated_by": None},
        {**annotation(8, "Karen", at, number=8), "updated_by": {"id": 8}},
    ]
    read = votes_from_export([{"id": 9, "data": data, "annotations": annotations}], RESOLUTION, frozenset())
    assert [v["annotator_id"] for v in read.votes] == [1, 8]
    refused = [(vote["annotator_id"], vote["written_by"], reason) for vote, reason in read.refused]
    assert refused == [(2, 7, NOT_ITS_AUTHOR), (3, None, NOT_ITS_AUTHOR), (4, 7, NOT_ITS_AUTHOR)]
    assert read.counts.skipped == 2
    line = explain(read.refused[0][0], NOT_ITS_AUTHOR, "resolver-2@x")
    assert line.endswith("item-00003: written by another account (7) than the one it names")


@pytest.mark.parametrize(
    "result",
    [
        [{"type": "choices", "value": {"choices": [["x"]]}}],
        [{"type": "choices", "value": {"choices": ["a", "b"]}}],
        [{"type": "choices", "value": {"choices": [{"x": 1}]}}],
        [{"type": "choices", "value": "x"}],
        ["a region that is a string"],
        {"not": "a list"},
    ],
)
def test_a_malformed_result_is_refused_with_its_reason_and_the_rest_still_count(result: Any) -> None:
    data = resolution_task(item(3), seed=0)["data"]
    malformed = {**annotation(7, "", "2026-01-01T09:00:00Z", number=8), "result": result}
    task = {"id": 9, "data": data, "annotations": [malformed, annotation(1, "Karen", "2026-01-01T10:00:00Z")]}
    read = votes_from_export([task], RESOLUTION, frozenset())
    assert [v["annotator_id"] for v in read.votes] == [1]
    assert [(vote["annotator_id"], reason) for vote, reason in read.refused] == [(7, MALFORMED_RESULT)]
    line = explain(read.refused[0][0], MALFORMED_RESULT, "screener-1@example.org")
    assert "screener-1@example.org" in line and "not one of the stage's choices" in line


@pytest.mark.integration
def test_a_project_per_stage_is_created_once(project_settings: Settings) -> None:
    with LabelStudioClient(project_settings) as client:
        first = client.ensure_project(RESOLUTION, 5)
        assert client.ensure_project(RESOLUTION, 5) == first
        screening = client.ensure_project(SCREENING, 3)
        assert screening != first
        resolution = client.sdk.projects.get(id=first)
        assert resolution.maximum_annotations == 5 and resolution.title == project_settings.project
        assert "Who does the highlighted word refer to?" in (resolution.expert_instruction or "")
        assert resolution.show_instruction and resolution.show_collab_predictions is False
        assert (resolution.sampling, resolution.model_version) == ("Uncertainty sampling", PRIORITY_MODEL)
        screen = client.sdk.projects.get(id=screening)
        assert screen.maximum_annotations == 3 and screen.title.endswith(STAGE_PROJECTS[SCREENING].suffix)
        assert "Is this a valid problem?" in (screen.expert_instruction or "")
        (view,) = client.sdk.views.list(project=first)  # one view, however often the project is ensured
        hidden = set(view.data["hiddenColumns"]["explore"])
        raw = {"tasks:data.sentence_html", "tasks:data.answer_identity", "tasks:annotations_results"}
        assert raw <= hidden
        assert "tasks:data.sentence" not in hidden
        # A project made with another overlap at creation keeps it (changing it would reopen every
        # task): the tasks imported into it get the rule's overlap one by one.
        assert client.ensure_project(SCREENING, 5) == screening
        assert client.overlap_at_import == {screening: 5}
        assert client.sdk.projects.get(id=screening).maximum_annotations == 3


@pytest.mark.integration
def test_push_200_items_twice_and_resume_after_an_interruption(project_settings: Settings) -> None:
    items = [item(n) for n in range(200)]
    with LabelStudioClient(project_settings) as client:
        partial = client.push(items[:80], RESOLUTION, 5, seed=0, batch_size=50)  # stopped after 80
        assert (partial.pushed, partial.tasks_in_project) == (80, 80)
        resumed = client.push(items, RESOLUTION, 5, seed=0, batch_size=50)
        assert (resumed.pushed, resumed.already_there, resumed.tasks_in_project) == (120, 80, 200)
        again = client.push(items, RESOLUTION, 5, seed=0)
        assert (again.pushed, again.tasks_in_project) == (0, 200)
        exported = client.export(client.existing_project(RESOLUTION))
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


def served(sessions: list[AnnotatorSession], project: int) -> dict[str, str | None]:
    """What the labelling stream serves each account next (and the data manager's next-task path)."""
    seen: dict[str, str | None] = {}
    for session in sessions:
        task = session.next_task(project)
        seen[session.account.email] = task["data"]["item_id"] if task else None
        dm = session.http.post(f"/api/dm/actions?id=next_task&project={project}", json={})
        if dm.status_code == 200 and dm.json().get("data"):
            seen[session.account.email + " (data manager)"] = dm.json()["data"]["item_id"]
    return seen


@pytest.mark.integration
def test_a_decided_task_leaves_every_queue_and_a_late_vote_is_collected(
    project_settings: Settings, tmp_path: Path
) -> None:
    """Four agreeing votes decide; after the collect closes the task, neither next-task path serves it
    to any resolver (the fifth included); a vote cast from a session that had it open still counts."""
    with LabelStudioClient(project_settings) as client:
        client.push([item(0)], RESOLUTION, 5, seed=0)
        project = client.existing_project(RESOLUTION)
        accounts = create_accounts(client, "resolver", 6)
        sessions = [AnnotatorSession(project_settings, account) for account in accounts]
        task = sessions[5].next_task(project)  # the sixth resolver opens it before it is decided
        assert task is not None
        for session in sessions[:4]:
            opened = session.next_task(project)
            assert opened is not None and opened["id"] == task["id"]
            session.vote(opened, "antecedent1", "referent")
        report = collect(client, tmp_path, CONFIG)
        assert report["closed_tasks"][RESOLUTION] == {"closed": 1, "reopened": 0, "overlap_set": 0}
        assert served(sessions, project) == dict.fromkeys(a.email for a in accounts)
        state = client.sdk.tasks.get(str(task["id"]))
        assert (state.is_labeled, state.overlap) == (True, 4)
        sessions[5].vote(task, "antecedent2", "referent")  # late
        again = collect(client, tmp_path, CONFIG)
        # The late vote is counted in the closed task's overlap; the task stays closed.
        assert again["closed_tasks"][RESOLUTION] == {"closed": 0, "reopened": 0, "overlap_set": 1}
        for session in sessions:
            session.close()
    votes = pq.read_table(tmp_path / "votes.parquet").to_pylist()
    assert (again["votes"], again["new_votes"]) == (5, 1)
    late = [v for v in votes if v["annotator_id"] == accounts[5].user_id]
    assert [v["choice"] for v in late] == ["antecedent2"]
    tasks = pq.read_table(tmp_path / "tasks.parquet").to_pylist()
    assert [(t["stage"], t["is_labeled"], t["annotators"]) for t in tasks] == [(RESOLUTION, True, 5)]


@pytest.mark.integration
def test_items_more_likely_valid_are_served_first(project_settings: Settings) -> None:
    scores = {0: 0.2, 1: 0.9, 2: 0.5, 3: None}
    items = [{**item(n), "validity_score": score} for n, score in scores.items()]
    with LabelStudioClient(project_settings) as client:
        client.push(items, SCREENING, 1, seed=0)
        project = client.existing_project(SCREENING)
        (account,) = create_accounts(client, "screener", 1)
        session = AnnotatorSession(project_settings, account)
        order = []
        while (task := session.next_task(project)) is not None:
            order.append(task["data"]["item_id"])
            assert not task.get("predictions")  # the score is never shown to the annotator
            session.vote(task, "valid", "screening")
        session.close()
    # Scored items best first; an item without a score after them.
    assert order == ["item-00001", "item-00002", "item-00000", "item-00003"]


@pytest.mark.integration
def test_an_account_is_a_screener_or_a_resolver_never_both(
    project_settings: Settings, tmp_path: Path
) -> None:
    with LabelStudioClient(project_settings) as client:
        (screener_account,) = create_accounts(client, "screener", 1)
        with pytest.raises(UserError, match="is a screener: an account screens or resolves, never both"):
            enrol(client, screener_account.email, "resolver")
        outsider = enrol(client, "outsider@example.org", "resolver")
        assert outsider.password and roles(project_settings)[outsider.email] == "resolver"
        assert {a.email for a in load_accounts(project_settings)} == {screener_account.email, outsider.email}

        # The screener tries the resolution project: the access gate refuses it.
        client.push([item(1)], SCREENING, 1, seed=0)
        client.push([item(1)], RESOLUTION, 5, seed=0)
        session = AnnotatorSession(project_settings, screener_account)
        screening_task_ = session.next_task(client.existing_project(SCREENING))
        assert screening_task_ is not None
        session.vote(screening_task_, "valid", "screening")
        resolution = client.existing_project(RESOLUTION)
        assert session.http.get(f"/api/projects/{resolution}/next").status_code == 403
        # Where nothing stops it (a Label Studio without the gate; here its vote is posted as its own by
        # the pipeline's token, which may), collect refuses a screener's vote in resolution.
        (task_id,) = client.records.tasks_of(resolution)
        result = [
            {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": ["x"]}}
        ]
        client.sdk.annotations.create(id=task_id, result=result, completed_by=screener_account.user_id)
        session.close()
        report = collect(client, tmp_path, CONFIG)
    assert report["votes_by_stage"] == {SCREENING: 1, RESOLUTION: 0}
    assert report["refused_votes"] == {"not_its_author": 1}
    refused = (tmp_path / "refused-votes.jsonl").read_text().splitlines()
    assert len(refused) == 1 and '"reason":"not_its_author"' in refused[0]


@pytest.mark.integration
def test_a_vote_posted_in_another_accounts_name_is_refused_and_its_own_counts(
    project_settings: Settings, tmp_path: Path
) -> None:
    """Four annotations naming four resolvers as `completed_by`, posted by another account (Label Studio
    takes them; the one the pipeline runs refuses them to annotators, so the pipeline's token posts them
    here), and a resolver's own vote: only its own counts; the four are refused, each with its reason,
    because Label Studio records their writer, not the named account."""
    with LabelStudioClient(project_settings) as client:
        client.push([item(0)], RESOLUTION, 5, seed=0)
        project = client.existing_project(RESOLUTION)
        voter, *victims = create_accounts(client, "resolver", 5)
        session = AnnotatorSession(project_settings, voter)
        task = session.next_task(project)
        assert task is not None
        label = next(k for k, v in task["data"]["answer_identity"].items() if v == "antecedent1")
        result = [
            {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
        ]
        writer = client.sdk.users.whoami().id
        for victim in victims:
            posted = client.sdk.annotations.create(id=task["id"], result=result, completed_by=victim.user_id)
            assert posted.completed_by == victim.user_id  # Label Studio took the name given
        session.vote(task, "antecedent1", "referent")
        session.close()
        report = collect(client, tmp_path, CONFIG)
    votes = pq.read_table(tmp_path / "votes.parquet").to_pylist()
    assert [(v["annotator_id"], v["choice"]) for v in votes] == [(voter.user_id, "antecedent1")]
    assert report["refused_votes"] == {NOT_ITS_AUTHOR: 4}
    refused = [orjson.loads(line) for line in (tmp_path / "refused-votes.jsonl").read_bytes().splitlines()]
    assert sorted(r["annotator_id"] for r in refused) == sorted(v.user_id for v in victims)
    assert {r["written_by"] for r in refused} == {writer}
    assert all(
        line.endswith(f"written by another account ({writer}) than the one it names")
        for line in report["refused_lines"]
    )


@pytest.mark.integration
def test_server_trouble_is_a_clear_error(project_settings: Settings, tmp_path: Path) -> None:
    with (
        LabelStudioClient(dataclasses.replace(project_settings, api_key="0" * 40)) as client,
        pytest.raises(UserError, match="refused the API token"),
    ):
        client.ensure_project(RESOLUTION, 5)
    with (
        LabelStudioClient(dataclasses.replace(project_settings, project="never pushed")) as client,
        pytest.raises(UserError, match=r"no knowref60k project .* named .never pushed.; push items first"),
    ):
        collect(client, tmp_path, CONFIG)
    down = dataclasses.replace(project_settings, url="http://127.0.0.1:9")
    with (
        LabelStudioClient(down) as client,
        pytest.raises(UserError, match=re.escape("not reachable at http://127.0.0.1:9")),
    ):
        client.push([item(1)], RESOLUTION, 5, seed=0)
    with pytest.raises(UserError, match="only accounts made here"):
        AnnotatorSession(project_settings, Account("x@y", None, 1, "resolver"))
    assert not (tmp_path / "votes.parquet").exists()


def _masked_ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    """Word n-grams with every capitalised word as NAME: a perturbed copy of a sentence still matches."""
    words = ["NAME" if w[0].isupper() else w.lower() for w in re.findall(r"[\w']+", text)]
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.integration
def test_no_guideline_example_is_a_real_item_or_a_benchmark_sentence() -> None:
    import orjson

    from knowref60k.overlap.benchmarks import read_benchmarks
    from knowref60k.overlap.contamination import benchmark_sentences
    from knowref60k.quality.gold import load_gold
    from tests.conftest import REPO, shared_file

    examples = []
    for stage in (SCREENING, RESOLUTION):
        guidelines = (REPO / "annotation" / f"{stage}_guidelines.html").read_text()
        examples += [re.sub(r"<[^>]+>", "", text) for text in re.findall(r"<i>(.*?)</i>", guidelines, re.S)]
    assert len(examples) >= 8
    reference = orjson.loads(shared_file("data/knowref2019/knowref2019_reddit_items.json").read_bytes())
    sentences = [s for item in reference for s in (*item["original_sentence"], item["sentence_with_pronoun"])]
    sentences += [s for _, s in benchmark_sentences(read_benchmarks(shared_file("data/benchmarks")))]
    sentences += [item.sentence for item in load_gold()]
    known = set().union(*(_masked_ngrams(s.replace("[", "").replace("]", "")) for s in sentences))
    for example in examples:
        assert not _masked_ngrams(example) & known, example
