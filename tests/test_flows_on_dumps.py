"""The Prefect flows, for real, on the original dumps and a slice of real comments: the pipeline, the
watch over a dumps folder and its ledger, the overlap flow. (`test_flows.py`: the flows one by one on a
fixture dump, with Label Studio.)"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from knowref60k.core.io import CANDIDATE_SCHEMA, ITEM_SCHEMA
from knowref60k.extract.pipeline import CandidateExtractor
from knowref60k.extract.stages.connectives import ConnectiveFinder
from knowref60k.settings.effective import RunConfig
from knowref60k_flows.pipeline import pipeline_flow
from tests.conftest import shared_file

# The dumps of these tests are complete when the watch starts: a short settle period will do.
QUICK_WATCH = {"push_items": False, "settle_seconds": 0.1}
# The handmade sentence scores 0.86, below the default threshold, which the watch tests do not test.
SENT_AT_HALF = "[prepare]\nvalidity_threshold = 0.5\n"


def check_candidate(row: dict[str, object], extractor: CandidateExtractor) -> None:
    sentence = str(row["sentence"])
    for field in ("connective", "antecedent1", "antecedent2", "pronoun"):
        assert sentence[row[f"{field}_start"] : row[f"{field}_end"]] == row[field]  # type: ignore[misc]
    assert row["antecedent1_end"] <= row["antecedent2_start"]  # type: ignore[operator]
    assert row["antecedent2_end"] <= row["connective_start"] < row["pronoun_start"]  # type: ignore[operator]
    words = [token.lower_ for token in extractor.pipeline.split(sentence)]
    assert len(ConnectiveFinder(extractor.config.connectives).find(words[:-1])) == 1, sentence
    assert str(row["pronoun"]).lower() in {"he", "him", "his", "she", "her", "hers"}


def check_item(item: dict[str, object]) -> None:
    sentence = str(item["perturbed_sentence"])
    for field in ("name1", "name2"):
        assert sentence[item[f"{field}_start"] : item[f"{field}_end"]] == item[field]  # type: ignore[misc]
    assert sentence[item["perturbed_pronoun_start"] : item["perturbed_pronoun_end"]] == item["pronoun"]  # type: ignore[misc]


@pytest.mark.integration
def test_pipeline_extracts_prepares_then_skips_finished_files(
    tmp_path: Path, reddit_slice: Path, extractor: CandidateExtractor
) -> None:
    dumps = [
        shared_file("data/reddit/RC_2005-12.zst"),
        shared_file("data/reddit/RC_2006-01.zst"),
        reddit_slice,
    ]
    out = tmp_path / "out"
    # The rules' person detection: the counts below are theirs (the default's are in test_extract); every
    # candidate they find goes on, whatever its validity score.
    config = tmp_path / "rules.toml"
    config.write_text('[extract]\nperson_detection = "both"\n[prepare]\nvalidity_threshold = 0.0\n')
    run = pipeline_flow([str(p) for p in dumps], str(out), RunConfig.load(config))
    extracted, prepared = run["extract"], run["prepare"]
    assert [f["skipped"] for f in extracted["files"]] == [False, False, False]

    stats = {
        Path(f["source"]).name: orjson.loads(Path(f["stats_path"]).read_bytes()) for f in extracted["files"]
    }
    assert stats["RC_2005-12.zst"]["stats"]["stages"]["read"]["in"] == 1075
    assert stats["RC_2006-01.zst"]["stats"]["stages"]["read"]["in"] == 3666
    rows = []
    for report in extracted["files"]:
        table = pq.read_table(report["candidates_path"])
        assert table.schema.equals(CANDIDATE_SCHEMA, check_metadata=False)
        assert table.num_rows == report["candidates"]
        rows += table.to_pylist()
    # The two original dumps hold no candidate; the slice of real comments yields two.
    assert [report["candidates"] for report in extracted["files"]] == [0, 0, 2]
    assert len({row["candidate_id"] for row in rows}) == len(rows)
    for row in rows:
        check_candidate(row, extractor)

    stages = prepared["stats"]["stages"]
    assert stages["validate"]["in"] == len(rows) == stages["validate"]["out"]
    # One of the two sentences has a pronoun of the other gender, which perturbation would leave dangling.
    assert stages["pronoun_gender"]["dropped"] == {"other_gender_pronoun": 1}
    dedup = stages["dedup"]
    assert dedup["in"] == stages["pronoun_gender"]["out"] == dedup["out"] + sum(dedup["dropped"].values())
    items = []
    for report in prepared["files"]:
        table = pq.read_table(report["items_path"])
        assert table.schema.equals(ITEM_SCHEMA, check_metadata=False)
        items += table.to_pylist()
    assert len(items) == dedup["out"] == 1
    for item in items:
        check_item(item)

    def snapshot() -> dict[Path, bytes]:
        summaries = {"funnel.json", "prepare.json"}
        return {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name not in summaries}

    outputs = snapshot()
    again = pipeline_flow([str(p) for p in dumps], str(out), RunConfig.load(config))
    assert [f["skipped"] for f in again["extract"]["files"]] == [True, True, True]
    assert [f["skipped"] for f in again["prepare"]["files"]] == [True, True, True]
    assert snapshot() == outputs
    assert again["extract"]["stats"] == extracted["stats"]


def test_pipeline_reports_a_missing_input_clearly(tmp_path: Path) -> None:
    from knowref60k_flows.pipeline import main

    assert main([str(tmp_path / "RC_1999-01.zst")], str(tmp_path / "out"), None) == 2


@pytest.mark.integration
def test_watch_processes_new_and_changed_dumps_once(tmp_path: Path) -> None:
    from knowref60k_flows.watch import watch_flow

    dumps = tmp_path / "dumps"
    dumps.mkdir()
    body = "Roderick is painting a portrait of Madeline, but every pose exhausts her."
    for month in ("01", "02"):
        line = orjson.dumps({"id": f"c{month}", "body": body, "link_id": f"t3_{month}", "created_utc": 1})
        (dumps / f"RC_2099-{month}.ndjson").write_bytes(line + b"\n")
    out = tmp_path / "run"
    config = tmp_path / "k.toml"
    config.write_text(SENT_AT_HALF)
    first = watch_flow(str(dumps), str(out), str(config), **QUICK_WATCH)
    assert first["processed"] == {"RC_2099-01.ndjson": "done", "RC_2099-02.ndjson": "done"}
    assert watch_flow(str(dumps), str(out), str(config), **QUICK_WATCH)["processed"] == {}
    (dumps / "RC_2099-02.ndjson").write_bytes(b'{"id": "c9", "body": "Changed text."}\n')
    changed = watch_flow(str(dumps), str(out), str(config), **QUICK_WATCH)
    assert changed["processed"] == {"RC_2099-02.ndjson": "done"}
    items = sorted((out / "items").glob("*.items.parquet"))
    assert [p.name for p in items] == ["RC_2099-01.items.parquet", "RC_2099-02.items.parquet"]
    assert pq.read_table(items[0]).num_rows == 1


@pytest.mark.integration
def test_watch_redoes_a_dump_after_a_code_change_and_reads_the_config_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger keys on the library's fingerprint (settings, model, code, data): an edited stage makes
    `make serve` redo every dump, where a hash of the settings alone would call them done."""
    import knowref60k.extract.extractor as extractor
    import knowref60k.settings.effective as run_config
    from knowref60k_flows.watch import watch_flow

    dumps = tmp_path / "dumps"
    dumps.mkdir()
    body = "Roderick is painting a portrait of Madeline, but every pose exhausts her."
    comment = orjson.dumps({"id": "c1", "body": body, "created_utc": 1})
    (dumps / "RC_2099-01.ndjson").write_bytes(comment + b"\n")
    out = tmp_path / "run"
    config = str(tmp_path / "k.toml")
    Path(config).write_text(SENT_AT_HALF)
    assert watch_flow(str(dumps), str(out), config, **QUICK_WATCH)["processed"] == {
        "RC_2099-01.ndjson": "done"
    }
    assert watch_flow(str(dumps), str(out), config, **QUICK_WATCH)["processed"] == {}
    edited = extractor.code_fingerprint
    monkeypatch.setattr(extractor, "code_fingerprint", lambda *modules: edited(*modules) + "-edited")
    reads = []
    loaded = run_config.load_config
    monkeypatch.setattr(run_config, "load_config", lambda *a, **k: reads.append(a) or loaded(*a, **k))
    assert watch_flow(str(dumps), str(out), config, **QUICK_WATCH)["processed"] == {
        "RC_2099-01.ndjson": "done"
    }
    assert len(reads) == 1
    assert pq.read_table(out / "items" / "RC_2099-01.items.parquet").num_rows == 1


@pytest.mark.integration
def test_overlap_flow_indexes_once_and_scores_the_benchmarks(tmp_path: Path) -> None:
    from knowref60k.overlap.index import OverlapIndex
    from knowref60k_flows.overlap import overlap_flow

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "The trophy doesn't fit into the brown suitcase because it is too large.\nI like turtles.\n"
    )
    benchmarks = str(shared_file("data/benchmarks"))
    first = overlap_flow([str(corpus)], str(tmp_path / "ix"), str(tmp_path / "scores"), benchmarks)
    assert [f["indexed"] for f in first["files"]] == [2] and len(OverlapIndex(tmp_path / "ix")) == 2
    wsc = first["benchmarks"]["sets"]["wsc273"]
    assert (wsc["items"], wsc["share_above_0"]) == (273, round(1 / 273, 4))  # the trophy item alone
    again = overlap_flow([str(corpus)], str(tmp_path / "ix"))
    assert again["files"][0]["skipped"] and len(OverlapIndex(tmp_path / "ix")) == 2
