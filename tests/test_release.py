"""Agreement, splits and releases that load with pyarrow, pandas, DuckDB and datasets."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import knowref60k
from annotation.votes import VOTE_SCHEMA
from knowref60k.agreement import AgreementRule, agreement, decide, fleiss_kappa
from knowref60k.config import ExtractConfig, PrepareConfig
from knowref60k.errors import UserError
from knowref60k.extract import CandidateExtractor, Extractor
from knowref60k.prepare import Preparer
from knowref60k.release import build_release
from knowref60k.splits import split_of

RULE = AgreementRule()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def vote(
    annotator: int, choice: str, minute: int = 0, item: str = "i", simulated: bool = False
) -> dict[str, Any]:
    when = T0 + timedelta(minutes=minute)
    return {
        "item_id": item,
        "task_id": 1,
        "annotation_id": minute * 100 + annotator,
        "annotator_id": annotator,
        "choice": choice,
        "created_at": when,
        "updated_at": when,
        "lead_time": 3.0,
        "simulated": simulated,
    }


@pytest.mark.parametrize(
    ("choices", "status", "label", "strength"),
    [
        (["antecedent1"] * 4 + ["antecedent2"], "kept", "antecedent1", 4),
        (["antecedent2"] * 5, "kept", "antecedent2", 5),
        (["antecedent1"] * 4 + ["neither"], "kept", "antecedent1", 4),
        (["antecedent1"] * 3 + ["antecedent2"] * 2, "rejected_ambiguous", None, 3),
        (["neither"] * 3 + ["antecedent1"] * 2, "rejected_neither", None, 3),
        (["neither"] * 2 + ["antecedent1"] * 2 + ["antecedent2"], "rejected_ambiguous", None, 2),
        (["antecedent1"] * 4, "pending", None, 0),
    ],
)
def test_agreement_rule(choices: list[str], status: str, label: str | None, strength: int) -> None:
    decision = decide("i", [vote(n, c, n) for n, c in enumerate(choices)], RULE)
    assert (decision.status, decision.label, decision.strength) == (status, label, strength)


def test_a_person_voting_twice_counts_once_with_the_latest_vote() -> None:
    votes = [
        vote(1, "antecedent2", 0),
        vote(2, "antecedent1", 1),
        vote(3, "antecedent1", 2),
        vote(4, "antecedent1", 3),
        vote(1, "antecedent1", 9),
    ]
    assert decide("i", votes, RULE).status == "pending"  # 4 distinct people
    decision = decide("i", [*votes, vote(5, "antecedent1", 10)], RULE)
    assert (decision.status, decision.strength) == ("kept", 5)


def test_fleiss_kappa_against_hand_computed_examples() -> None:
    # Fleiss (1971) as tabulated on Wikipedia: 10 subjects, 14 raters, 5 categories, kappa = 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)
    # By hand: P_i = (9 + 4 - 5) / 20 = 0.4, P_e = 0.5, kappa = (0.4 - 0.5) / 0.5 = -0.2.
    assert fleiss_kappa([[3, 2, 0], [2, 3, 0]]) == pytest.approx(-0.2)
    assert fleiss_kappa([[5, 0, 0], [0, 5, 0]]) == pytest.approx(1.0)
    assert math.isnan(fleiss_kappa([]))


def test_agreement_statistics_and_flagged_annotators() -> None:
    votes = []
    for item in range(10):
        for annotator in range(5):
            wrong = annotator == 4 and item % 2 == 0  # annotator 4 disagrees half the time
            votes.append(vote(annotator, "antecedent2" if wrong else "antecedent1", annotator, f"i{item}"))
    report = agreement([f"i{n}" for n in range(11)], votes, RULE)
    assert report.status_counts == {"kept": 10, "pending": 1}
    assert report.annotators["4"] == {"items": 10, "agreement_with_majority": 0.5}
    assert report.flagged == ["4"] and report.neither_share == 0.0
    assert report.label_balance == {"antecedent1": 10}


def test_splits_group_threads_stay_stable_and_follow_the_proportions() -> None:
    items = [{"candidate_id": f"c{n}", "link_id": f"t3_{n // 3}"} for n in range(30_000)]
    splits = {item["candidate_id"]: split_of(item) for item in items}
    for n in range(0, 30_000, 3):
        assert splits[f"c{n}"] == splits[f"c{n + 1}"] == splits[f"c{n + 2}"]
    shares = {
        name: list(splits.values()).count(name) / len(splits) for name in ("train", "validation", "test")
    }
    assert shares["train"] == pytest.approx(0.8, abs=0.02) and shares["test"] == pytest.approx(0.1, abs=0.02)
    more = items + [{"candidate_id": f"new{n}", "link_id": f"t3_new{n}"} for n in range(1000)]
    assert all(split_of(item) == splits[item["candidate_id"]] for item in more[:30_000])
    lonely = [split_of({"candidate_id": f"solo{n}", "link_id": None}) for n in range(300)]
    assert len(set(lonely)) == 3  # no thread id: each item is its own group


SENTENCES = [
    "Roderick is painting a portrait of Madeline, but every pose exhausts her.",
    "Dan played tennis with Danny all afternoon because he was bored at home.",
    "Jessica tried to call Michael last night, but he never picked up the phone.",
    "Daniel Day-Lewis worked with Tony Parker for years, but he never liked it.",
    "Mark was a factor in the decision of Peyton Hillis, and that hurt his chances.",
    "Hillary was smarter than Obama because she did not play by the rules.",
]


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run folder: extraction and prepare of handmade comments, then synthetic votes."""
    run = tmp_path_factory.mktemp("run")
    dump = run / "RC_2099-01.ndjson"
    dump.write_bytes(
        b"".join(
            orjson.dumps(
                {
                    "id": f"c{i}",
                    "author": "secret_user_name",
                    "body": s,
                    "link_id": f"t3_{i % 4}",
                    "subreddit": "test",
                    "created_utc": 1_700_000_000 + i,
                }
            )
            + b"\n"
            for i, s in enumerate(SENTENCES)
        )
    )
    with Extractor(ExtractConfig(), workers=1) as extractor:
        report = extractor.extract_file(dump, run / "candidates")
    assert report.candidates == len(SENTENCES)
    with Preparer(PrepareConfig(), run / "dedup.sqlite") as preparer:
        prepared = preparer.prepare_file(report.candidates_path, run / "items")
    items = pq.read_table(prepared.items_path).to_pylist()
    patterns = [
        ["antecedent1"] * 5,
        ["antecedent2"] * 4 + ["neither"],
        ["antecedent1"] * 3 + ["antecedent2"] * 2,
        ["neither"] * 4 + ["antecedent1"],
        ["antecedent2"] * 5,
        ["antecedent1"] * 2,
    ]
    votes = [
        vote(a, c, a, item["candidate_id"], simulated=a == 0)
        for item, choices in zip(items, patterns, strict=True)
        for a, c in enumerate(choices)
    ]
    pq.write_table(pa.Table.from_pylist(votes, schema=VOTE_SCHEMA), run / "votes.parquet")
    return run


def test_release_is_complete_loadable_and_byte_identical(pipeline_run: Path, tmp_path: Path) -> None:
    first = build_release(pipeline_run, pipeline_run / "votes.parquet", "v1", tmp_path / "a")
    second = build_release(pipeline_run, pipeline_run / "votes.parquet", "v1", tmp_path / "b")
    files = sorted(p.relative_to(first.path) for p in first.path.rglob("*") if p.is_file())
    shards = [f"data/{s}-00000-of-00001.parquet" for s in ("test", "train", "validation") if first.splits[s]]
    listed = [
        "README.md",
        *shards,
        "funnel.png",
        "jsonl/test.jsonl",
        "jsonl/train.jsonl",
        "jsonl/validation.jsonl",
    ]
    assert [str(f) for f in files] == [*listed, "manifest.json"]
    for name in files:
        assert (first.path / name).read_bytes() == (second.path / name).read_bytes(), name
    assert first.report.status_counts == {
        "kept": 3,
        "pending": 1,
        "rejected_ambiguous": 1,
        "rejected_neither": 1,
    }
    assert sum(first.splits.values()) == 3
    with pytest.raises(UserError, match="never overwritten"):
        build_release(pipeline_run, pipeline_run / "votes.parquet", "v1", tmp_path / "a")

    card = (first.path / "README.md").read_text()
    assert card.splitlines()[1].startswith("# WARNING: built from SIMULATED votes")
    assert "WARNING: SIMULATED VOTES" in card and "secret_user_name" not in card
    manifest = orjson.loads((first.path / "manifest.json").read_bytes())
    assert next(iter(manifest)) == "warning"
    assert (
        manifest["sources"][0]["file"] == "RC_2099-01.ndjson" and len(manifest["sources"][0]["sha256"]) == 64
    )
    for entry in manifest["files"]:
        assert len(entry["sha256"]) == 64
    tables = {split: knowref60k.load_release(first.path, split) for split in ("train", "validation", "test")}
    rows = [row for table in tables.values() for row in table.to_pylist()]
    assert len(rows) == 3
    for row in rows:
        assert row["sentence"][row["pronoun_start"] : row["pronoun_end"]] == row["pronoun"]
        assert row["annotation_strength"] in (4, 5) and len(row["votes"]) == 5
        assert all(a.startswith("annotator-") for a in row["annotators"]) and row["simulated_votes"] == 1
        assert "author" not in row and "secret_user_name" not in str(row)
    jsonl = [
        orjson.loads(line)
        for split in ("train", "validation", "test")
        for line in (first.path / "jsonl" / f"{split}.jsonl").read_bytes().splitlines()
    ]
    assert {r["annotation_strength"] for r in jsonl} <= {"4", "5"}
    assert all(
        r["correct_candidate"] in (r["candidate0"], r["candidate1"]) and "[" in r["sentence_with_pronoun"]
        for r in jsonl
    )


def test_release_loads_with_pandas_duckdb_and_datasets(pipeline_run: Path, tmp_path: Path) -> None:
    import duckdb
    import pandas as pd
    from datasets import load_dataset

    made = build_release(pipeline_run, pipeline_run / "votes.parquet", "v2", tmp_path)
    frames = [pd.read_parquet(p) for p in sorted((made.path / "data").glob("*.parquet"))]
    assert sum(len(f) for f in frames) == 3
    counted = duckdb.sql(f"SELECT count(*) FROM '{made.path}/data/*.parquet'").fetchall()[0]
    assert counted == (3,)
    dataset = load_dataset(str(made.path))
    assert sum(dataset[split].num_rows for split in dataset) == 3
    assert all(dataset[split].features["label"].names == ["name1", "name2"] for split in dataset)


def test_missing_inputs_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="run the pipeline first"):
        build_release(tmp_path, tmp_path / "votes.parquet", "v1", tmp_path / "releases")
    with pytest.raises(UserError, match=r"no manifest\.json"):
        knowref60k.load_release(tmp_path, "test")


def test_release_and_stats_commands(pipeline_run: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli import app

    runner = CliRunner()
    args = [
        "release",
        "--version",
        "v3",
        "--run",
        str(pipeline_run),
        "--votes",
        str(pipeline_run / "votes.parquet"),
    ]
    made = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert made.exit_code == 0, made.output
    assert "SIMULATED" in made.output and "Fleiss' kappa" in made.output
    again = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert again.exit_code == 2 and "never overwritten" in again.output
    summary = runner.invoke(app, ["stats", str(tmp_path / "v3")])
    assert summary.exit_code == 0 and "knowref60k v3" in summary.output and "sha256" in summary.output


def test_release_with_an_overlap_index_scores_items_and_reports_in_the_card(
    pipeline_run: Path, tmp_path: Path, extractor: CandidateExtractor
) -> None:
    from datasets import load_dataset

    from knowref60k.audit import OverlapAudit
    from knowref60k.overlap import OverlapIndex
    from tests.conftest import shared_file

    index_dir = tmp_path / "index"
    # The kept items' source sentences: renamed in the release, so the predicates match, the names not.
    OverlapIndex(index_dir, create=True).add([*SENTENCES, "I like turtles."])
    audit = OverlapAudit(index_dir, shared_file("data/benchmarks"), extractor.pipeline)
    first = build_release(pipeline_run, pipeline_run / "votes.parquet", "v1", tmp_path / "a", audit=audit)
    second = build_release(pipeline_run, pipeline_run / "votes.parquet", "v1", tmp_path / "b", audit=audit)
    for path in sorted(p for p in first.path.rglob("*") if p.is_file()):
        assert path.read_bytes() == (second.path / path.relative_to(first.path)).read_bytes(), path
    rows = [row for split in first.splits for row in knowref60k.load_release(first.path, split).to_pylist()]
    assert len(rows) == 3
    for row in rows:
        assert row["overlap_bm25"] > 0 and row["overlap_hit"] in SENTENCES
        assert row["overlap_hit"] != row["sentence"] and row["benchmark_overlap"] is None
    card = (first.path / "README.md").read_text()
    assert "## Overlap with pretraining text" in card and "![overlap](overlap.png)" in card
    assert "| all | 3 | 100.0% |" in card and "name: overlap_bm25\n    dtype: float64" in card
    manifest = orjson.loads((first.path / "manifest.json").read_bytes())
    assert manifest["overlap"]["groups"]["all"]["share_above_0"] == 1.0
    assert "overlap.png" in {entry["path"] for entry in manifest["files"]}
    assert (first.path / "overlap.png").read_bytes().startswith(b"\x89PNG")
    dataset = load_dataset(str(first.path))
    assert all(dataset[split].features["overlap_bm25"].dtype == "float64" for split in dataset)
