"""Paused accounts and control tasks, without a server: when an account's control votes pause it, what
a resume forgives, and how controls are drawn and dressed among items (a real Label Studio:
tests/test_annotate_cli.py)."""

from __future__ import annotations

import hashlib
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import RESOLUTION_CONTROLS, load_controls
from knowref60k.labelling.status import vote_seconds
from knowref60k_annotation.control_tasks import with_controls
from knowref60k_annotation.pauses import Pauses, control_tally
from knowref60k_annotation.records import RecordedTask
from knowref60k_annotation.settings import Settings

ANSWERS = {f"control:{n}": "antecedent1" for n in range(20)}
CONFIG = LabellingConfig(controls=(), pause_after_controls=4, pause_below_accuracy=0.5)
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def control_vote(n: int, right: bool, minute: int = 0) -> dict[str, Any]:
    return {
        "item_id": f"control:{n}",
        "choice": "antecedent1" if right else "neither",
        "annotator_id": 7,
        "created_at": T0 + timedelta(minutes=minute),
    }


@pytest.fixture
def pauses(tmp_path: Path) -> Pauses:
    return Pauses(Settings("http://127.0.0.1:9", "u", "p", "k", state_dir=tmp_path))


def test_an_account_is_paused_once_enough_of_its_control_votes_are_wrong(pauses: Pauses) -> None:
    three_wrong = [control_vote(n, right=False) for n in range(3)]
    # Three control votes are fewer than the four that may pause: not yet, however wrong.
    assert not pauses.pause_if_due("a@x", 7, three_wrong, ANSWERS, CONFIG)
    # Two of four right is not below one half; one of four is.
    half = [*three_wrong[:2], control_vote(3, True), control_vote(4, True)]
    assert not pauses.pause_if_due("a@x", 7, half, ANSWERS, CONFIG)
    assert pauses.pause_if_due("a@x", 7, [*three_wrong, control_vote(3, True)], ANSWERS, CONFIG)
    found = pauses.paused()["a@x"]
    assert (found["user_id"], found["controls"], found["control_accuracy"]) == (7, 4, 0.25)
    assert found["why"] == "1 of 4 control items right (0.25)"
    # Paused once: a second call changes nothing. Votes on items are no controls and never count.
    assert not pauses.pause_if_due("a@x", 7, [*three_wrong, control_vote(3, True)], ANSWERS, CONFIG)
    assert control_tally([{"item_id": "i", "choice": "neither"}], ANSWERS).controls == 0


def test_a_resume_forgives_the_control_votes_cast_before_it(pauses: Pauses) -> None:
    before = [control_vote(n, right=False) for n in range(4)]
    assert pauses.pause_if_due("a@x", 7, before, ANSWERS, CONFIG)
    assert pauses.resume("a@x") is not None and pauses.resume("a@x") is None
    assert pauses.paused() == {}
    # The same wrong votes again: they were cast before the resume.
    assert not pauses.pause_if_due("a@x", 7, before, ANSWERS, CONFIG)
    # Votes Label Studio dates without a zone are UTC.
    later = datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=1)
    after = [{**control_vote(n, right=False), "created_at": later.isoformat()} for n in range(4, 8)]
    assert pauses.pause_if_due("a@x", 7, before + after, ANSWERS, CONFIG)
    assert pauses.paused()["a@x"]["controls"] == 4


def test_a_lead_pauses_by_hand_and_never_pause_means_never(pauses: Pauses) -> None:
    assert pauses.pause("b@x", 8, "paused by the lead") and not pauses.pause("b@x", 8, "again")
    assert pauses.paused()["b@x"]["controls"] is None
    never = LabellingConfig(controls=(), pause_after_controls=0)
    wrong = [control_vote(n, right=False) for n in range(20)]
    assert not pauses.pause_if_due("c@x", 9, wrong, ANSWERS, never)
    with pytest.raises(UserError, match="pause_after_controls"):
        LabellingConfig(controls=(), pause_below_accuracy=1.5)


def fake_client(recorded: list[RecordedTask]) -> Any:
    return types.SimpleNamespace(
        records=types.SimpleNamespace(tasks_of=lambda _project: {t.task_id: t for t in recorded}),
        keyed=lambda text: hashlib.sha256(b"secret" + text.encode()).digest(),
    )


def test_controls_join_their_items_scored_like_one_and_never_share_an_items_sentence() -> None:
    controls = load_controls(RESOLUTION_CONTROLS)
    rows = [
        {"candidate_id": f"item{n}", "sentence": f"Sentence {n}.", "validity_score": 0.9 + n / 1000}
        for n in range(38)
    ]
    # One of the project's items (by a recorded sentence) is the first control's gold sentence.
    taken = RecordedTask(1, 1, "resolution", {"item_id": "old"}, None, controls[0]["sentence"])
    pushed = with_controls(fake_client([taken]), "resolution", 1, rows, controls, 0.05)
    added = pushed[len(rows) :]
    assert pushed[: len(rows)] == rows and len(added) == round(39 * 0.05 / 0.95)
    assert all(control["candidate_id"].startswith("control:") for control in added)
    assert all(control["sentence"] != controls[0]["sentence"] for control in added)
    assert {control["validity_score"] for control in added} <= {row["validity_score"] for row in rows}
    # Pushed again with the controls on record, nothing is added.
    recorded = [
        RecordedTask(n, 1, "resolution", {"item_id": row["candidate_id"]}, None, row["sentence"])
        for n, row in enumerate(pushed, start=2)
    ]
    assert with_controls(fake_client([taken, *recorded]), "resolution", 1, rows, controls, 0.05) == rows


def test_a_controls_line_without_its_stages_fields_is_one_error(tmp_path: Path) -> None:
    line = orjson.loads(RESOLUTION_CONTROLS.read_bytes().splitlines()[0])
    path = tmp_path / "controls.jsonl"
    path.write_bytes(orjson.dumps({k: v for k, v in line.items() if k != "name2"}) + b"\n")
    with pytest.raises(UserError, match=r"line 1: .*a resolution control needs name2"):
        load_controls(path)


def test_a_votes_seconds_are_held_within_an_hour() -> None:
    assert [vote_seconds({"lead_time": v}) for v in (12.5, -3, 1e12, None, "x", float("nan"))] == [
        12.5,
        0.0,
        3600.0,
        0.0,
        0.0,
        0.0,
    ]
