"""The Prefect flows not tested elsewhere, run for real on a handmade dump: extract, prepare, annotate
(push, collect), release, demo, scale (Dask workers reporting to a real Prefect server) and serve (the
scheduled deployments)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from knowref60k.core.io import CANDIDATE_SCHEMA, ITEM_SCHEMA
from knowref60k.core.parallel import YOUNG_GENERATION_THRESHOLD
from knowref60k.ingest.readers import open_input
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION, SCREENING, decide_stage
from knowref60k.release.load import load_release
from knowref60k.release.splits import SPLITS
from knowref60k.settings.effective import labelling_settings
from knowref60k_annotation.client import LabelStudioClient, read_items
from knowref60k_annotation.receiver import ReceiverProcess
from knowref60k_annotation.settings import RECEIVER_PORT_OFFSET, Settings, demo_settings, load_settings
from knowref60k_annotation.tasks import ORDER_SEED, simulated_truth
from knowref60k_flows.annotate import collect_flow, push_flow
from knowref60k_flows.extract import extract_flow
from knowref60k_flows.prepare import prepare_flow
from tests.conftest import REPO, free_port, use_label_studio, wait_for
from tests.test_release import SEND_ALL, SENTENCES, comment  # each sentence yields exactly one candidate

# 9 lines: 6 candidates, a comment without a pronoun, a deleted one, and a line that is not JSON.
DUMP_LINES = [
    *(comment(n, sentence) for n, sentence in enumerate(SENTENCES)),
    comment(6, "I like turtles."),
    comment(7, "[deleted]"),
    b'{"id": "c8", "body": \n',
]


# What each stage of the extraction does with them: (in, out, dropped by reason).
FUNNEL = {
    "read": (9, 8, {"quarantined:invalid_json": 1}),
    "triage": (8, 7, {"deleted": 1}),
    "screen": (7, 6, {"no_target_pronoun": 1}),
    "clean": (6, 6, {}),
    "prefilter": (6, 6, {}),
    "surface": (6, 6, {}),
    "split": (6, 6, {}),
    "shape": (6, 6, {}),
    "connective": (6, 6, {}),
    "antecedent": (6, 6, {}),
    "language": (6, 6, {}),
    "validity": (6, 6, {}),
}


# The seeded truth (simulated_truth(0)) of the six items is antecedent 1 for c0, c3 and c5; their threads
# (t3_0, t3_3, t3_1) fall in test, train, test.
KEPT_BY_TRUTH = 3
RELEASE_SPLITS = {"train": 1, "validation": 0, "test": 2}
# SEND_ALL as a config file: the loop's tests label all six handmade sentences.
SYNTHETIC_CONFIG = "[prepare]\nvalidity_threshold = 0.5\n"


def write_dump(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(DUMP_LINES))
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def knowref60k_command(*arguments: str) -> Result:
    """A `knowref60k` command line run in this process (its printed lines in `output`)."""
    from knowref60k.cli.app import app

    return CliRunner().invoke(app, list(arguments), prog_name="knowref60k")


def words(text: str) -> str:
    """Console output with its line wrapping undone."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dump(tmp_path_factory.mktemp("dumps") / "RC_2099-01.ndjson")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, dump: Path) -> dict[str, Any]:
    """extract_flow then prepare_flow over the dump and an exact copy under another month's name."""
    folder = tmp_path_factory.mktemp("run")
    copy = dump.parent / "RC_2099-02.ndjson"
    copy.write_bytes(dump.read_bytes())
    extracted = extract_flow([str(dump), str(copy)], str(folder / "candidates"), workers=1)
    candidates = [report["candidates_path"] for report in extracted["files"]]
    prepared = prepare_flow(candidates, str(folder / "items"), str(folder / "dedup-index.sqlite"), SEND_ALL)
    return {"dir": folder, "dumps": [dump, copy], "extract": extracted, "prepare": prepared}


def use_project(monkeypatch: pytest.MonkeyPatch, settings: Settings, project: str) -> Settings:
    chosen = dataclasses.replace(settings, project=project)
    use_label_studio(monkeypatch, chosen)
    return chosen


def item_ids(run: dict[str, Any]) -> list[str]:
    return item_ids_of([Path(report["items_path"]) for report in run["prepare"]["files"]])


def item_ids_of(paths: list[Path]) -> list[str]:
    return sorted(item["candidate_id"] for item in read_items(paths))


# ---- extract and prepare ----


@pytest.mark.integration
def test_extract_flow_writes_candidates_and_stats_and_a_rerun_skips(run: dict[str, Any]) -> None:
    out = run["dir"] / "candidates"
    reports = run["extract"]["files"]
    for report, source in zip(reports, run["dumps"], strict=True):
        stem = source.name.split(".")[0]
        assert report == {
            "source": str(source),
            "candidates": 6,
            "candidates_path": str(out / f"{stem}.candidates.parquet"),
            "stats_path": str(out / f"{stem}.stats.json"),
            "quarantine_path": str(out / f"{stem}.quarantine.jsonl"),
            "quarantined": 1,
            "skipped": False,
        }
        table = pq.read_table(report["candidates_path"])
        assert table.schema.equals(CANDIDATE_SCHEMA, check_metadata=False)
        rows = table.to_pylist()
        assert [row["sentence"] for row in rows] == SENTENCES
        assert [row["comment_id"] for row in rows] == [f"c{n}" for n in range(6)]
        assert all(row["source_file"] == source.name for row in rows)
        stages = orjson.loads(Path(report["stats_path"]).read_bytes())["stats"]["stages"]
        assert {name: (s["in"], s["out"], s["dropped"]) for name, s in stages.items()} == FUNNEL
        quarantine = Path(report["quarantine_path"]).read_bytes().splitlines()
        assert [orjson.loads(line)["line_number"] for line in quarantine] == [9]
    funnel = orjson.loads((out / "funnel.json").read_bytes())
    assert funnel["inputs"] == [str(p) for p in run["dumps"]]
    assert funnel["stats"] == run["extract"]["stats"]
    merged = funnel["stats"]["stages"]
    assert {name: (s["in"], s["out"]) for name, s in merged.items()} == {
        name: (2 * n_in, 2 * n_out) for name, (n_in, n_out, _) in FUNNEL.items()
    }

    before = snapshot(out)
    again = extract_flow([str(p) for p in run["dumps"]], str(out), workers=1)
    assert [(r["skipped"], r["candidates"], r["quarantined"]) for r in again["files"]] == [(True, 6, 1)] * 2
    assert again["stats"] == run["extract"]["stats"]
    assert snapshot(out) == before


@pytest.mark.integration
def test_prepare_flow_writes_items_drops_the_copy_and_a_rerun_skips(run: dict[str, Any]) -> None:
    out = run["dir"] / "items"
    first, copy = run["prepare"]["files"]
    assert (first["items"], first["skipped"]) == (6, False)
    assert (copy["items"], copy["skipped"]) == (0, False)  # every item is an exact duplicate of one before
    assert first["items_path"] == str(out / "RC_2099-01.items.parquet")
    assert copy["items_path"] == str(out / "RC_2099-02.items.parquet")
    candidates = pq.read_table(run["extract"]["files"][0]["candidates_path"]).to_pylist()
    table = pq.read_table(first["items_path"])
    assert table.schema.equals(ITEM_SCHEMA, check_metadata=False)
    items = table.to_pylist()
    assert [i["candidate_id"] for i in items] == [c["candidate_id"] for c in candidates]
    for item in items:
        sentence = item["perturbed_sentence"]
        assert item["name1"] != item["name2"]
        assert sentence[item["name1_start"] : item["name1_end"]] == item["name1"]
        assert sentence[item["name2_start"] : item["name2_end"]] == item["name2"]
        assert sentence[item["perturbed_pronoun_start"] : item["perturbed_pronoun_end"]] == item["pronoun"]
    assert pq.read_table(copy["items_path"]).num_rows == 0
    dedup = run["prepare"]["stats"]["stages"]["dedup"]
    assert (dedup["in"], dedup["out"], sum(dedup["dropped"].values())) == (12, 6, 6)
    summary = orjson.loads((out / "prepare.json").read_bytes())
    assert summary["inputs"] == [r["candidates_path"] for r in run["extract"]["files"]]
    assert summary["index"] == str(run["dir"] / "dedup-index.sqlite")

    before = snapshot(out)
    index = run["dir"] / "dedup-index.sqlite"
    index_before = index.read_bytes()
    candidates = [r["candidates_path"] for r in run["extract"]["files"]]
    again = prepare_flow(candidates, str(out), str(index), SEND_ALL)
    assert [(r["skipped"], r["items"]) for r in again["files"]] == [(True, 6), (True, 0)]
    assert snapshot(out) == before and index.read_bytes() == index_before


# ---- Label Studio: push, collect, release ----


@pytest.mark.integration
def test_push_flow_imports_each_item_once(
    run: dict[str, Any],
    label_studio: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = use_project(monkeypatch, label_studio, "knowref60k test_flows push")
    items = [report["items_path"] for report in run["prepare"]["files"]]
    # Items the validity model is sure of go to resolution unscreened; the fixture has both kinds.
    config = labelling_settings()
    scores = {i["candidate_id"]: i["validity_score"] for i in read_items(map(Path, items))}
    sure = sorted(item for item, score in scores.items() if config.skips_screening(score))
    assert 0 < len(sure) < 6
    screened = 6 - len(sure)
    # Six items: 5% of controls would be a third of one task, so none.
    expected = {"stage": SCREENING, "pushed": screened, "already_there": 0, "tasks": screened}
    assert push_flow(items) == {**expected, "unscreened": len(sure)}
    pushed = knowref60k_command("flow", "annotate", "push", *items)
    assert pushed.exit_code == 0, pushed.output
    assert f"screening: 0 imported, {screened} already there" in words(pushed.output)
    with LabelStudioClient(settings) as client:
        screening = client.export(client.existing_project(SCREENING))
        resolution = client.export(client.existing_project(RESOLUTION))
    assert sorted(task["data"]["item_id"] for task in resolution) == sure
    assert sorted(task["data"]["item_id"] for task in screening + resolution) == item_ids(run)


def vote_all(settings: Settings, stage: str, role: str, count: int, answer: Any, prefix: str = "") -> int:
    """`count` accounts of `role` each vote on every task of the stage (no receiver runs: no task is
    settled in between)."""
    from knowref60k_annotation.accounts import ensure_accounts
    from knowref60k_annotation.client import STAGE_PROJECTS
    from knowref60k_annotation.simulate import AnnotatorSession, work_through

    with LabelStudioClient(settings) as client:
        accounts = ensure_accounts(client, role, count, prefix)
        sessions = [AnnotatorSession(settings, account) for account in accounts]
        project = client.existing_project(stage)
        work = work_through(sessions, project, STAGE_PROJECTS[stage].from_name, answer, lambda cast: True)
        for session in sessions:
            session.close()
    return work.total


def screened_and_pushed(run: dict[str, Any], settings: Settings) -> None:
    """Every item in both projects, each screened valid by one screener."""
    paths = [Path(report["items_path"]) for report in run["prepare"]["files"]]
    with LabelStudioClient(settings) as client:
        assert client.push(read_items(paths), SCREENING, 1, ORDER_SEED).pushed == 6
        assert client.push(read_items(paths), RESOLUTION, 5, ORDER_SEED).pushed == 6
    assert vote_all(settings, SCREENING, "screener", 1, lambda _item, _index, _email: "valid") == 6


@pytest.mark.integration
def test_collect_flow_writes_every_vote(
    run: dict[str, Any], label_studio: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = use_project(monkeypatch, label_studio, "knowref60k test_flows collect")
    screened_and_pushed(run, settings)
    truth = simulated_truth(0)
    assert (
        vote_all(settings, RESOLUTION, "resolver", 5, lambda item, _index, _email: truth(item), "simulated-")
        == 30
    )
    out = tmp_path / "annotation"
    report = collect_flow(str(out))
    assert report["votes_path"] == str(out / "votes.parquet")
    ignored = ("votes_path", "projects", "emails", "refused_lines", "closed_tasks", "collected_at")
    counts = {key: report[key] for key in report if key not in ignored}
    assert (counts.pop("projects_gone"), counts.pop("lookalike_projects"), counts.pop("differences")) == (
        {},
        {},
        {},
    )
    assert counts == {
        "annotations": 36,
        "votes": 36,
        "votes_by_stage": {SCREENING: 6, RESOLUTION: 30},
        "duplicate_annotations": 0,
        "skipped": 0,
        "without_choice": 0,
        "refused_votes": {},
        "new_votes": 36,
        "updated_votes": 0,
        "unchanged_votes": 0,
        "withdrawn_votes": 0,
        "simulated_votes": 30,
        "webhook_changes": [],
        "paused_accounts": {},
    }
    # Every task got all its votes (nothing settled them in between): Label Studio closed them itself,
    # except, on SQLite, one whose last two votes were saved at once (each counted the other's task
    # state): the sync closes those. After it every task is closed.
    assert report["closed_tasks"][SCREENING] == {"closed": 0, "reopened": 0, "overlap_set": 0}
    assert (
        report["closed_tasks"][RESOLUTION]["reopened"]
        == report["closed_tasks"][RESOLUTION]["overlap_set"]
        == 0
    )
    assert all(task["is_labeled"] for task in pq.read_table(out / "tasks.parquet").to_pylist())
    assert orjson.loads((out / "collect.json").read_bytes()) == {
        key: value for key, value in report.items() if key not in ("votes_path", "refused_lines")
    }
    votes = [v for v in pq.read_table(out / "votes.parquet").to_pylist() if v["stage"] == RESOLUTION]
    per_item = Counter(vote["item_id"] for vote in votes)
    assert sorted(per_item) == item_ids(run) and set(per_item.values()) == {5}
    assert all(vote["choice"] == truth(vote["item_id"]) and vote["simulated"] for vote in votes)
    assert len({vote["annotator_id"] for vote in votes}) == 5

    again = collect_flow(str(out))
    assert (again["votes"], again["new_votes"], again["unchanged_votes"]) == (36, 0, 36)
    assert again["closed_tasks"][RESOLUTION] == {"closed": 0, "reopened": 0, "overlap_set": 0}


@pytest.mark.integration
def test_release_flow_cuts_a_release_then_refuses_the_same_version(
    run: dict[str, Any],
    label_studio: Settings,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from knowref60k_flows.release import release_flow

    settings = use_project(monkeypatch, label_studio, "knowref60k test_flows release")
    screened_and_pushed(run, settings)
    truth = simulated_truth(0)
    # Three resolvers give the seeded truth, two always say antecedent 1: an item whose truth is
    # antecedent 1 is decided at its fourth equal vote (kept), the others three against two (ambiguous).
    assert vote_all(settings, RESOLUTION, "resolver", 3, lambda item, _index, _email: truth(item)) == 18
    assert vote_all(settings, RESOLUTION, "resolver", 5, lambda _item, _index, _email: "antecedent1") == 12
    kept = [item for item in item_ids(run) if truth(item) == "antecedent1"]
    assert len(kept) == KEPT_BY_TRUTH

    votes_dir, releases = tmp_path / "annotation", tmp_path / "releases"
    # Every item was screened here: no score lets one skip screening (push and the demo test that).
    config = tmp_path / "screen-all.toml"
    config.write_text("[labelling]\nskip_screening_above = 2.0\n")
    made = release_flow("v1", str(run["dir"]), str(votes_dir), str(releases), config_path=str(config))
    release = releases / "v1"
    assert made["path"] == str(release) and made["simulated"] is False
    assert made["agreement"]["items"] == {"kept": len(kept), "rejected_ambiguous": 6 - len(kept)}
    assert made["labelling"]["screening"] == {
        "items": 6,
        "screened_carefully": 0,
        "screened_valid": 6,
        "screened_out": {},
        "pending": 0,
        "skipped_by_score": 0,
    }
    assert made["splits"] == RELEASE_SPLITS and sum(made["splits"].values()) == len(kept)
    assert pq.read_table(votes_dir / "votes.parquet").num_rows == 36
    files = sorted(str(p.relative_to(release)) for p in release.rglob("*") if p.is_file())
    shards = [f"data/{split}-00000-of-00001.parquet" for split in sorted(SPLITS) if RELEASE_SPLITS[split]]
    jsonl = [f"jsonl/{split}.jsonl" for split in sorted(SPLITS)]
    lm_eval = ["lm_eval/knowref60k.yaml", "lm_eval/utils.py"]
    assert files == ["README.md", *shards, "funnel.png", *jsonl, *lm_eval, "manifest.json"]
    rows = [row for split in SPLITS for row in load_release(release, split).to_pylist()]
    assert sorted(row["id"] for row in rows) == kept
    assert all(
        row["label"] == 0 and row["annotation_strength"] == 4 and row["late_votes"] == 1 for row in rows
    )
    manifest = orjson.loads((release / "manifest.json").read_bytes())
    assert manifest["version"] == "v1" and manifest["splits"] == RELEASE_SPLITS
    assert manifest["labelling"]["votes"] == {
        "screening": 6,
        "resolution": 30,
        "screening_controls": 0,
        "resolution_controls": 0,
    }

    refuses_the_same_version_and_aflite_on_too_few(release, run, votes_dir)


def refuses_the_same_version_and_aflite_on_too_few(
    release: Path, run: dict[str, Any], votes_dir: Path
) -> None:
    """Through the command line: an existing version is refused and left as it was; `--debias` reaches
    the release, which is too small for AFLite and says so."""
    before = snapshot(release)
    argv = ["--version", "v1", "--run", str(run["dir"]), "--votes-dir", str(votes_dir)]
    argv += ["--out", str(release.parent)]
    refused = knowref60k_command("flow", "release", *argv)
    assert refused.exit_code == 2
    printed = words(refused.output)
    assert "error: release v1 exists at" in printed and "never overwritten, pick a new version" in printed
    assert snapshot(release) == before
    too_few = knowref60k_command("flow", "release", *argv[:1], "v2", *argv[2:], "--debias", "ngrams")
    assert too_few.exit_code == 2
    printed = words(too_few.output)
    assert "AFLite cannot run" in printed and not (release.parent / "v2").exists()


# ---- the demo: the whole loop with simulated annotators ----


def check_the_loop(result: dict[str, Any], config: LabellingConfig) -> tuple[list[str], int]:
    """The demo's two stages: items the validity model is sure of skip screening, the rest are screened
    (carefully where they score low); the screened valid ones and the skipped ones are resolved. Returns
    the resolved items and how many the 4-of-5 rule keeps, counted here from the resolution votes."""
    items = [Path(f["items_path"]) for f in result["pipeline"]["prepare"]["files"]]
    sure = sorted(i["candidate_id"] for i in read_items(items) if config.skips_screening(i["validity_score"]))
    first = 6 - len(sure)
    pushed = {
        "stage": SCREENING,
        "pushed": first,
        "already_there": 0,
        "tasks": first,
        "unscreened": len(sure),
    }
    assert result["pushed"] == pushed
    votes = result["votes"]
    # The handmade sentences are not in the gold set: screeners call them valid unless they err.
    all_votes = pq.read_table(votes["votes_path"]).to_pylist()
    screened = {v["item_id"]: v["choice"] for v in all_votes if v["stage"] == SCREENING}
    assert sorted(screened) == sorted(set(item_ids_of(items)) - set(sure))
    # One vote decides a screening task, two "valid" ones a task screened carefully (a low score);
    # screeners working at once on SQLite may, rarely, both get one.
    assert result["votes_cast"][SCREENING] >= first
    careful = config.screening_rules({i["candidate_id"]: i["validity_score"] for i in read_items(items)})
    decided = decide_stage(all_votes, SCREENING, config.screening_rule, rules=careful)
    screened_valid = sorted(item for item, d in decided.items() if d.status == "screened_valid")
    promoted = len(screened_valid)
    # The vote receiver promoted each screened-valid item as its vote came; the sync's promotion after the
    # screening found them all there.
    assert result["promoted"] == {"screened_valid": promoted, "pushed": 0, "tasks": promoted + len(sure)}
    assert votes["votes_by_stage"] == result["votes_cast"]
    assert votes["simulated_votes"] == votes["votes"] and votes["refused_votes"] == {}
    by_item: dict[str, list[str]] = {}
    for vote in sorted(all_votes, key=lambda v: v["created_at"]):
        if vote["stage"] == RESOLUTION:
            by_item.setdefault(vote["item_id"], []).append(vote["choice"])
    assert sorted(by_item) == sorted([*screened_valid, *sure])
    resolved = decide_stage(all_votes, RESOLUTION, config.resolution_rule)
    kept = sum(1 for decision in resolved.values() if decision.status == "kept")
    return sorted(by_item), kept


@pytest.mark.integration
def test_demo_flow_runs_the_whole_loop_and_a_rerun_reuses_the_release(
    label_studio: Settings,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    import knowref60k_flows.demo

    use_project(monkeypatch, label_studio, "unused: the demo names its own project")
    # The demo's own Label Studio is, here, the session's server; its default is checked in test_settings.
    monkeypatch.setenv("KNOWREF60K_DEMO_LABEL_STUDIO_URL", label_studio.url)
    monkeypatch.setenv("KNOWREF60K_DEMO_LABELSTUDIO_DIR", str(tmp_path / "demo-state"))
    from knowref60k_annotation.settings import env_file_path

    env_file = env_file_path()
    env_file_before = env_file.read_bytes() if env_file.exists() else None
    dump = write_dump(tmp_path / "dumps" / "RC_2099-03.ndjson")
    out = tmp_path / "demo"
    receiver = ReceiverProcess(demo_settings(load_settings()))
    request.addfinalizer(receiver.stop)  # the demo's receiver, beside the session's server
    config = tmp_path / "knowref60k.toml"
    config.write_text(SYNTHETIC_CONFIG)
    result = knowref60k_flows.demo.demo_flow([str(dump)], str(out), config_path=str(config))
    # Every vote went through the receiver, which settled each one.
    health = receiver.health()
    assert health is not None and health["queued"] == sum(result["votes_cast"].values())
    assert "left_to_sync" not in health
    # every setting came from the environment: the repo's .env is neither written nor changed
    assert (env_file.read_bytes() if env_file.exists() else None) == env_file_before
    assert result["pipeline"]["extract"]["files"][0]["candidates"] == 6
    valid, expected = check_the_loop(result, labelling_settings(config))

    release = Path(result["release"]["path"])
    assert release.parent == out / "releases" and release.name.startswith("demo-")
    agreement = result["release"]["agreement"]
    assert sum(agreement["items"].values()) == len(valid) and "pending" not in agreement["items"]
    assert agreement["items"].get("kept", 0) == expected
    assert sum(load_release(release, split).num_rows for split in SPLITS) == expected
    card = (release / "README.md").read_text()
    assert "SIMULATED" in card.splitlines()[1] and "WARNING: SIMULATED VOTES" in card
    assert next(iter(orjson.loads((release / "manifest.json").read_bytes()))) == "warning"
    # The card's cost section: the levels, what they were expected to cost, the votes spent.
    by_stage = result["votes"]["votes_by_stage"]
    flat = words(card)
    assert "## Cost" in card and "- Levels: validity threshold 0.5 (candidates scoring below it" in flat
    spent = f"{by_stage[SCREENING]} screening and {by_stage[RESOLUTION]} resolution votes"
    assert f"- Spent (control tasks included): {spent}" in flat
    assert "- Expected at these levels" in flat and "- Held back: 0 candidates" in flat

    # Again through the command line: nothing new to do, and the same release is reused.
    before = snapshot(out / "releases")
    again = knowref60k_command("demo", str(dump), "--out", str(out), "--config", str(config))
    assert again.exit_code == 0, again.output
    printed = words(again.output)
    assert "simulated votes cast {'screening': 0, 'resolution': 0}" in printed
    assert f"Release (SIMULATED votes): {release}" in printed
    assert f"Demo projects in their own Label Studio at {label_studio.url}" in printed
    assert snapshot(out / "releases") == before


# ---- Dask and the Prefect server ----


def processes() -> list[tuple[int, int, int, str, bytes]]:
    """(pid, parent, process group, state, command line) of every process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, parent, group = stat.rsplit(")", 1)[1].split()[:3]
        found.append((int(entry.name), int(parent), int(group), state, command))
    return found


def group_alive(group: int) -> bool:
    return any(g == group and state != "Z" for _, _, g, state, _ in processes())


def stop_group(group: int, first: signal.Signals = signal.SIGTERM, timeout: float = 30) -> bool:
    """Signal a process group, wait (bounded) until it is gone, then SIGKILL what is left.
    True when it went on the first signal."""
    try:
        os.killpg(group, first)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not group_alive(group):
        return True
    with suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    wait_for(lambda: not group_alive(group), 120, f"process group {group} to die")
    return False


@contextmanager
def process_group(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A command in its own process group (its children too), stopped however the test ends."""
    with log.open("wb") as handle:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        stop_group(process.pid)
        process.wait(timeout=120)


def prefect_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_API_")}
    env.update(
        PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_LOGGING_LEVEL="WARNING"
    )
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


def healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=3) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def api_post(api_url: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{api_url}{path}", data=orjson.dumps(body), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return orjson.loads(response.read())


def api_get(api_url: str, path: str) -> Any:
    with urllib.request.urlopen(f"{api_url}{path}", timeout=10) as response:
        return orjson.loads(response.read())


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


@pytest.mark.integration
def test_scale_flow_shards_a_dump_and_extracts_it_on_dask(
    tmp_path: Path, dump: Path, run: dict[str, Any]
) -> None:
    """`knowref60k flow scale` with one local Dask worker, reporting to a Prefect server of its own."""
    api_url = f"http://127.0.0.1:{free_port()}/api"
    port = api_url.rsplit(":", 1)[1].split("/")[0]
    server = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", port]
    server_log, scale_log = tmp_path / "server.log", tmp_path / "scale.log"
    out = tmp_path / "scale"
    home = tmp_path / "prefect-home"
    with process_group(server, prefect_env(home), server_log) as process:
        wait_for(lambda: healthy(api_url) or process.poll() is not None, 120, "the Prefect server")
        assert process.poll() is None, tail(server_log)
        command = [
            sys.executable,
            "-m",
            "knowref60k",
            "flow",
            "scale",
            str(dump),
            "--shards",
            "2",
            "--workers",
            "1",
        ]
        with process_group([*command, "--out", str(out)], prefect_env(home, api_url), scale_log) as scale:
            wait_for(lambda: scale.poll() is not None, 300, "knowref60k flow scale")
        assert scale.returncode == 0, tail(scale_log)
        runs = api_post(api_url, "/flow_runs/filter", {})
        assert [r["state_type"] for r in runs] == ["COMPLETED"]
        task_runs = api_post(api_url, "/task_runs/filter", {})
        assert sorted(r["name"] for r in task_runs) == [
            f"extract shard {out}/shards/RC_2099-01.part-0000{n}-of-00002.zst" for n in range(2)
        ]

    shards = sorted((out / "shards").iterdir())
    assert [p.name for p in shards] == [f"RC_2099-01.part-0000{n}-of-00002.zst" for n in range(2)]
    lines = []
    for shard in shards:
        with open_input(shard) as (_raw, stream):
            lines.append(stream.read().splitlines(keepends=True))
    assert [len(part) for part in lines] == [5, 4]
    assert lines[0] + lines[1] == DUMP_LINES  # every line once, in order

    candidates = sorted((out / "candidates").glob("*.candidates.parquet"))
    assert len(candidates) == 2
    sharded = [row for path in candidates for row in pq.read_table(path).to_pylist()]
    whole = pq.read_table(run["extract"]["files"][0]["candidates_path"]).to_pylist()
    assert len(sharded) == len(whole) == 6
    fields = ("sentence", "comment_id", "antecedent1", "antecedent2", "pronoun")
    assert sorted(tuple(r[f] for f in fields) for r in sharded) == sorted(
        tuple(r[f] for f in fields) for r in whole
    )
    stats = [
        orjson.loads(p.read_bytes())["stats"]["stages"]
        for p in sorted((out / "candidates").glob("*.stats.json"))
    ]
    assert [s["read"]["in"] for s in stats] == [5, 4]
    assert sum(s["language"]["out"] for s in stats) == 6


def check_deployments(api_url: str, found: dict[str, dict[str, Any]], dumps: Path, out: Path) -> None:
    """The three deployments of `make serve`: their flows, parameters and schedules."""
    assert sorted(found) == ["labelling-sync", "monthly-release-candidate", "watch-dumps"]
    flows = {d["name"]: api_get(api_url, f"/flows/{d['flow_id']}")["name"] for d in found.values()}
    assert flows == {
        "watch-dumps": "watch-dumps",
        "labelling-sync": "labelling-sync",
        "monthly-release-candidate": "release-candidate",
    }
    watch, monthly, sync = found["watch-dumps"], found["monthly-release-candidate"], found["labelling-sync"]
    assert sync["parameters"] == {"items_dir": str(out / "items")}
    assert [s["schedule"]["interval"] for s in sync["schedules"]] == [120.0]
    assert watch["parameters"] == {"dumps_dir": str(dumps), "out_dir": str(out)}
    assert monthly["parameters"] == {"run_dir": str(out)}
    assert [s["schedule"]["interval"] for s in watch["schedules"]] == [3600.0]
    assert [s["schedule"]["cron"] for s in monthly["schedules"]] == ["0 6 2 * *"]
    # No timezone given: the server computes cron dates in UTC, as the docs say (06:00 UTC).
    assert monthly["schedules"][0]["schedule"]["timezone"] in (None, "UTC")
    assert all(s["active"] for s in [*watch["schedules"], *monthly["schedules"]])


def free_label_studio_port() -> int:
    """A free port whose vote receiver's port (RECEIVER_PORT_OFFSET above it) is free as well."""
    import socket

    while True:
        port = free_port()
        with socket.socket() as sock, suppress(OSError):
            sock.bind(("127.0.0.1", port + RECEIVER_PORT_OFFSET))
            return port


@pytest.mark.integration
def test_serve_starts_a_server_and_registers_the_scheduled_deployments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The serve flow has no option for its port (4200, fixed): the test sets the module's PORT and API to a
    free port before running `knowref60k serve`, in a subprocess with its own PREFECT_HOME. Its Label Studio
    settings (and so the vote receiver it starts) live in the test's folder, on ports of their own."""
    for key in ("USERNAME", "PASSWORD", "API_KEY"):
        monkeypatch.delenv(f"LABEL_STUDIO_{key}", raising=False)
    monkeypatch.delenv("KNOWREF60K_PROJECT", raising=False)
    env_file = tmp_path / "labelstudio.env"
    monkeypatch.setenv("KNOWREF60K_ENV_FILE", str(env_file))
    monkeypatch.setenv("KNOWREF60K_LABELSTUDIO_DIR", str(tmp_path / "labelstudio"))
    monkeypatch.setenv("LABEL_STUDIO_URL", f"http://127.0.0.1:{free_label_studio_port()}")
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    dumps, out = tmp_path / "dumps", tmp_path / "run"
    dumps.mkdir()
    script = (
        "import sys, knowref60k_flows.serve as serve; "
        f"serve.PORT = {port}; serve.API = {api_url!r}; "
        "from knowref60k.cli.app import app; "
        "app(['serve', *sys.argv[1:]], prog_name='knowref60k')"
    )
    command = [sys.executable, "-c", script, "--dumps", str(dumps), "--out", str(out)]
    log = tmp_path / "serve.log"
    home = tmp_path / "prefect-home"
    servers: list[int] = []

    def prefect_servers() -> list[int]:
        marker = b"\x00".join(
            [b"server", b"start", b"--host", b"127.0.0.1", b"--port", str(port).encode(), b""]
        )
        return [pid for pid, _, group, _, cmd in processes() if marker in cmd and pid == group]

    try:
        with process_group(command, prefect_env(home), log) as process:

            def deployments() -> list[dict[str, Any]]:
                assert process.poll() is None, tail(log)
                if not healthy(api_url):
                    return []
                servers[:] = servers or prefect_servers()
                found = api_post(api_url, "/deployments/filter", {})
                return found if len(found) == 3 else []

            found = {d["name"]: d for d in wait_for(deployments, 180, "three deployments")}
            check_deployments(api_url, found, dumps, out)
            assert f"Prefect UI: http://127.0.0.1:{port}" in log.read_text()
            # Ctrl-C: serving stops, and with it the server it started (in a session of its own).
            assert stop_group(process.pid, signal.SIGINT), "knowref60k_flows.serve did not stop on SIGINT"
            process.wait(timeout=120)
            assert servers and not healthy(api_url)
            wait_for(lambda: not any(alive(server) for server in servers), 30, "the Prefect server to stop")
            # The vote receiver outlives serving, as the Prefect server does; it has this test's settings.
            receiver = ReceiverProcess(load_settings(env_file))
            assert receiver.healthy() and receiver.pid() is not None
    finally:
        for server in servers or prefect_servers():
            stop_group(server)
        if env_file.exists():
            ReceiverProcess(load_settings(env_file)).stop()
    assert not healthy(api_url)
    assert not ReceiverProcess(load_settings(env_file)).healthy()


@pytest.mark.integration
def test_a_dask_worker_loads_its_extractor_once_and_settles_its_collector() -> None:
    """In a process of its own (the check changes the process's collector), as a Dask worker is; it loads
    the spaCy pipeline there."""
    probe = (
        "import gc\n"
        "from knowref60k_flows.scale import worker_extractor\n"
        "from knowref60k.core.config import ExtractConfig\n"
        "before = len(gc.get_objects())\n"
        "extractor = worker_extractor(ExtractConfig())\n"
        "assert worker_extractor(ExtractConfig()) is extractor\n"
        "print(gc.get_threshold()[0], gc.get_freeze_count() - before)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    threshold, frozen = map(int, result.stdout.split())
    assert threshold == YOUNG_GENERATION_THRESHOLD
    # Frozen after the model and word lists were built: the objects they added (about 11,000) are among them.
    assert frozen >= 5_000


def test_a_batch_cluster_gives_every_worker_the_batch_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers of the scale flow's local cluster run without Dask's statistical profiler and without
    the malloc trim threshold Dask's nannies set, and this process's environment is left alone."""
    from distributed import Client

    from knowref60k_flows.scale import batch_cluster, local_cluster_kwargs

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)

    def settings() -> tuple[bool, str | None]:
        import os

        import dask

        return bool(dask.config.get("distributed.worker.profile.enabled")), os.environ.get(
            "MALLOC_TRIM_THRESHOLD_"
        )

    assert settings() == (True, None)  # Dask's default profiler, in this process
    with (
        batch_cluster(**local_cluster_kwargs(2), dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        answers = client.run(settings)
    assert list(answers.values()) == [(False, None), (False, None)]
    assert settings() == (True, None)


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for child, parent, *_ in processes():
        children.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    return any(found == pid and state != "Z" for found, _, _, state, _ in processes())


@pytest.mark.integration
def test_sigterm_to_knowref60k_run_stops_its_prefect_server_and_nothing_reaches_the_users_home(
    tmp_path: Path,
) -> None:
    """`knowref60k run` against Prefect's temporary server, from an empty folder, with no Prefect
    setting of its own: its home is the folder's `.prefect` (not ~/.prefect); SIGTERM to the command
    alone, as a supervisor sends it, stops the server it started too."""
    from tests.test_faults import GOOD, ndjson_line

    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    dump = work / "RC_2099-01.ndjson"
    dump.write_bytes(ndjson_line(GOOD, 1, "one") + b"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_") and k != "DO_NOT_TRACK"}
    env["HOME"] = str(home)
    command = [sys.executable, "-m", "knowref60k", "run", str(dump), "--out", str(work / "out")]
    with (work / "log").open("wb") as log:
        process = subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        server = wait_for(
            lambda: next((p for p in descendants(process.pid) if b"uvicorn" in command_of(p)), None),
            120,
            "Prefect's temporary server to start",
        )
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=60) != 0
        wait_for(lambda: not alive(server), 30, "the Prefect server to stop with the command")
    finally:
        if process.poll() is None:
            stop_group(process.pid, signal.SIGKILL)
    assert (work / ".prefect").is_dir() and not (home / ".prefect").exists()


def command_of(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
