"""Screening answers teach the score: decided screening tasks become judged examples that keep their
origin and reason, the command writes them, and the trees' fit takes them weighted without leaking a
held-out comment's answers into its own out-of-fold score."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from knowref60k.cli.app import app
from knowref60k.core.errors import UserError
from knowref60k.core.io import CANDIDATE_SCHEMA
from knowref60k.extract.scorer import CONTEXT_DIMENSIONS, FEATURES
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import SCREENING
from knowref60k.quality.gold import GoldItem
from knowref60k.quality.scorer_data import Example
from knowref60k.quality.screening_examples import ORIGIN, load_examples, screening_examples, write_examples
from knowref60k.quality.training import Supplement, fit, fit_with, out_of_fold
from knowref60k_annotation.votes import VOTE_SCHEMA
from tests.conftest import REPO

SENTENCE = "Roderick is painting a portrait of Madeline, but every pose exhausts her."
START = datetime(2026, 11, 1, tzinfo=UTC)


def item(candidate_id: str) -> dict[str, Any]:
    return {
        "candidate_id": candidate_id,
        "source_file": "RC_2099-01.zst",
        "line_number": 7,
        "comment_id": f"c-{candidate_id}",
        "link_id": None,
        "subreddit": "books",
        "created_utc": None,
        "sentence": SENTENCE,
        "connective": ", but",
        "connective_start": 43,
        "connective_end": 48,
        "antecedent1": "Roderick",
        "antecedent1_start": 0,
        "antecedent1_end": 8,
        "antecedent2": "Madeline",
        "antecedent2_start": 35,
        "antecedent2_end": 43,
        "pronoun": "her",
        "pronoun_start": 69,
        "pronoun_end": 72,
        "pronoun_gender": "female",
        "validity_score": 0.5,
    }


def vote(item_id: str, annotator: int, choice: str, minute: int, stage: str = SCREENING) -> dict[str, Any]:
    at = START + timedelta(minutes=minute)
    return {
        "stage": stage,
        "item_id": item_id,
        "task_id": minute,
        "annotation_id": 1000 + minute,
        "annotator_id": annotator,
        "choice": choice,
        "created_at": at,
        "updated_at": at,
        "lead_time": 3.0,
        "simulated": True,
    }


def test_each_decided_screening_task_is_an_example_with_its_origin_and_reason() -> None:
    items = {cid: item(cid) for cid in ("a", "b", "c")}
    config = LabellingConfig(screening_accept_at=2, screening_reject_at=2)
    votes = [
        vote("a", 1, "valid", 1),
        vote("a", 2, "valid", 2),
        vote("b", 1, "same_person", 3),
        vote("b", 2, "valid", 4),
        vote("b", 3, "same_person", 5),
        vote("c", 1, "valid", 6),  # one vote of two: undecided
        vote("gone", 1, "valid", 7),
        vote("gone", 2, "valid", 8),
        vote("a", 9, "antecedent1", 9, stage="resolution"),  # another stage's vote is no screening answer
    ]
    found, counts = screening_examples(votes, items, config)
    assert [(e["candidate_id"], e["label"], e["reason"], e["votes"]) for e in found] == [
        ("a", "valid", None, 2),
        ("b", "invalid", "same_person", 3),
    ]
    assert all(e["origin"] == ORIGIN and e["simulated"] for e in found)
    assert found[0]["antecedent2_start"] == 35 and found[0]["sentence"] == SENTENCE
    assert counts.to_dict() == {
        "examples": {"same_person": 1, "valid": 1},
        "left_out": {"not_in_the_items": 1, "undecided": 1},
    }


def test_screening_examples_load_as_tuning_items_of_their_origin(tmp_path: Path) -> None:
    votes = [vote("a", 1, "valid", 1), vote("b", 1, "not_a_person", 2)]
    items = {"a": item("a"), "b": item("b")}
    # Scored 0.5, below a careful-screening level of 0.6: one "valid" vote does not decide "a".
    careful, counts = screening_examples(votes, items, LabellingConfig(careful_screening_below=0.6))
    assert [e["candidate_id"] for e in careful] == ["b"] and counts.left_out == {"undecided": 1}
    found, _ = screening_examples(votes, items, LabellingConfig(careful_screening_below=0.0))
    path = tmp_path / "examples.jsonl"
    write_examples(found, path)
    loaded = load_examples(path)
    assert loaded == [
        GoldItem("a", SENTENCE, "tune", "valid", None, ((0, 8), (35, 43)), "c-a", "books", origin=ORIGIN),
        GoldItem("b", SENTENCE, "tune", "invalid", "not_a_person", None, "c-b", "books", origin=ORIGIN),
    ]
    lines = path.read_bytes().splitlines()
    path.write_bytes(lines[0] + b"\n" + lines[1].replace(b'"not_a_person"', b'"bored"') + b"\n")
    with pytest.raises(UserError, match=r"examples\.jsonl, line 2: label 'invalid' with reason 'bored'"):
        load_examples(path)
    path.write_bytes(lines[0].replace(b'"screening"', b'"gold"') + b"\n")
    with pytest.raises(UserError, match="line 1: origin must be 'screening'"):
        load_examples(path)
    path.write_bytes(lines[0].replace(b'"antecedent2_end":43', b'"antecedent2_end":4300') + b"\n")
    with pytest.raises(UserError, match=r"line 1: antecedent spans .* not in order inside the sentence"):
        load_examples(path)
    path.write_bytes(lines[0].replace(b'"sentence"', b'"text"') + b"\n")
    with pytest.raises(UserError, match="line 1: missing field 'sentence'"):
        load_examples(path)
    record = orjson.loads(lines[0])
    for name, value in (
        ("sentence", ["a", "list"]),
        ("comment_id", 7),
        ("candidate_id", ""),
        ("subreddit", 1),
    ):
        path.write_bytes(orjson.dumps({**record, name: value}) + b"\n")
        with pytest.raises(UserError, match=f"line 1: {name} must be a"):
            load_examples(path)
    path.write_bytes(b"")
    with pytest.raises(UserError, match=r"examples\.jsonl: no screening examples in the file"):
        load_examples(path)


@pytest.mark.parametrize("weight", ["-1", "0", "nan", "inf"])
def test_the_build_refuses_a_weight_that_is_no_positive_number_before_its_long_work(
    tmp_path: Path, weight: str
) -> None:
    out = tmp_path / "model.json"
    arguments = ["tools/scorer/build.py", "--screening-weight", weight, "--out", str(out)]
    done = subprocess.run([sys.executable, *arguments], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and not out.exists()
    assert done.stderr == f"error: --screening-weight {float(weight)}: must be a number above 0\n"


@pytest.mark.parametrize("content", [b"not json at all\n", b'{"origin": "martian"}\n', b"[1, 2]\n"])
def test_the_build_refuses_a_malformed_examples_file_in_one_line_before_its_long_work(
    tmp_path: Path, content: bytes
) -> None:
    examples = tmp_path / "examples.jsonl"
    examples.write_bytes(content)
    out = tmp_path / "model.json"
    arguments = ["tools/scorer/build.py", "--screening-examples", str(examples), "--out", str(out)]
    done = subprocess.run([sys.executable, *arguments], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.startswith(f"error: {examples}, line 1: ") and len(done.stderr.splitlines()) == 1


def test_the_command_writes_the_examples_of_the_collected_votes(tmp_path: Path) -> None:
    items = tmp_path / "run.items.parquet"
    pq.write_table(pa.Table.from_pylist([item("a"), item("b")], schema=CANDIDATE_SCHEMA), items)
    out = tmp_path / "annotation"
    out.mkdir()
    votes = [vote("a", 1, "valid", 1), vote("b", 2, "pronoun_refers_elsewhere", 2)]
    pq.write_table(pa.Table.from_pylist(votes, schema=VOTE_SCHEMA), out / "votes.parquet")
    result = CliRunner().invoke(app, ["annotate", "examples", str(items), "--out", str(out)])
    target = out / "screening-examples.jsonl"
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"2 screening-derived examples {{'pronoun_refers_elsewhere': 1, 'valid': 1}} -> {target}"
    ]
    written = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    assert [(e["candidate_id"], e["reason"], e["origin"]) for e in written] == [
        ("a", None, "screening"),
        ("b", "pronoun_refers_elsewhere", "screening"),
    ]
    missing = CliRunner().invoke(app, ["annotate", "examples", str(items), "--out", str(tmp_path / "none")])
    assert missing.exit_code == 2
    assert missing.stderr == f"error: votes file not found: {tmp_path / 'none' / 'votes.parquet'}\n"


@pytest.mark.parametrize("which", ["items", "votes"])
def test_the_command_refuses_to_write_over_its_own_input(tmp_path: Path, which: str) -> None:
    items = tmp_path / "run.items.parquet"
    pq.write_table(pa.Table.from_pylist([item("a")], schema=CANDIDATE_SCHEMA), items)
    out = tmp_path / "annotation"
    out.mkdir()
    pq.write_table(
        pa.Table.from_pylist([vote("a", 1, "valid", 1)], schema=VOTE_SCHEMA), out / "votes.parquet"
    )
    target = items if which == "items" else out / "votes.parquet"
    before = target.read_bytes()
    result = CliRunner().invoke(
        app, ["annotate", "examples", str(items), "--out", str(out), "--to", str(target)]
    )
    assert result.exit_code == 2 and target.read_bytes() == before
    assert result.stderr.startswith(f"error: --to {target} is an input of this command")


def synthetic(count: int, seed: int, comments: int) -> list[Example]:
    """Examples whose first feature says whether they are valid, noisily; each comment holds several.
    Few distinct values (features to one decimal, context vectors one of a few unit vectors, so each
    projected column takes few values): with fewer distinct values than bins, scikit-learn bins
    weighted examples without a weighted percentile per bin, which took a minute here and tests nothing
    of ours."""
    rng = np.random.default_rng(seed)
    made = []
    for number in range(count):
        valid = bool(rng.random() < 0.3)
        features = np.round(rng.normal(size=len(FEATURES) - 2 * CONTEXT_DIMENSIONS), 1).tolist()
        features[0] += 2.0 if valid else 0.0
        context = [np.eye(CONTEXT_DIMENSIONS + 2)[rng.integers(CONTEXT_DIMENSIONS + 2)] for _ in range(2)]
        gold = GoldItem(
            str(number), "s", "tune", "valid" if valid else "invalid", None, None, str(number % comments)
        )
        made.append(Example(gold, {}, features, context, None if valid else "place"))
    return made


def average_precision(data: list[Example], scores: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score

    return float(average_precision_score([e.valid for e in data], scores))


def test_a_supplement_is_fitted_weighted_and_never_leaks_a_held_out_comment() -> None:
    gold = synthetic(200, seed=1, comments=40)
    alone = out_of_fold(gold)
    quality_alone = average_precision(gold, alone)
    assert np.array_equal(out_of_fold(gold, supplement=Supplement([], 0.5, "none", "")), alone)
    more = Supplement(synthetic(600, seed=2, comments=120), 0.5, "more.jsonl", "0" * 64)
    assert average_precision(gold, out_of_fold(gold, supplement=more)) > quality_alone
    # The gold examples again, as screening answers of the same comments: a fold that saw the answers
    # of its own held-out comments would score them (nearly) perfectly.
    copies = Supplement(gold, 1.0, "copies.jsonl", "0" * 64)
    assert average_precision(gold, out_of_fold(gold, supplement=copies)) < (quality_alone + 1) / 2
    features = np.array([e.features for e in gold])
    labels = np.array([e.valid for e in gold], dtype=int)
    same = fit_with(features, labels, None).predict_proba(features)
    assert np.array_equal(same, fit(features, labels).predict_proba(features))
    weights = np.full(len(labels), 0.001)
    barely = fit_with(features, labels, (features, 1 - labels, weights)).predict_proba(features)
    assert np.abs(barely - same).max() > 0
    assert (
        np.abs(barely - same).max()
        < np.abs(
            fit_with(features, labels, (features, 1 - labels, weights * 1000)).predict_proba(features) - same
        ).max()
    )
    assert more.record() == {
        "file": "more.jsonl",
        "sha256": "0" * 64,
        "examples": 600,
        "valid": sum(e.valid for e in more.examples),
        "weight": 0.5,
    }
