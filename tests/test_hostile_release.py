"""Hostile inputs and accidents around prepare, releases and worker processes, each test named after
what it protects: a candidates file given again under another name, a damaged release, a killed parent
with workers still running. Small synthetic inputs and in-process commands, except the SIGKILL tests."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from subprocess import DEVNULL

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

import knowref60k
from knowref60k.cli.app import app
from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import UserError
from knowref60k.ingest.readers import iter_line_chunks, iter_lines, open_input
from knowref60k.prepare.dedup import DedupIndex
from knowref60k.release.build import build_release
from tests.conftest import REPO, shared_file, wait_for
from tests.test_hostile_io import one_line_error
from tests.test_prepare import candidates_file, handmade
from tests.test_release import synthetic_run

SENTENCE = "Paul met Mary on the first day, but she left early."


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def candidates(path: Path, count: int = 3) -> Path:
    rows = [
        handmade(SENTENCE.replace("first", f"day {n} of the"), "Paul", "Mary", "she", "female", f"c{n}")
        for n in range(count)
    ]
    return candidates_file(path, rows)


def items_report(out: Path, stem: str) -> dict[str, object]:
    return dict(orjson.loads((out / f"{stem}.prepare.json").read_bytes()))


# D3: the same candidates under two file names ----------------------------------------------------------


def test_a_copy_of_a_candidates_file_under_another_name_gives_no_second_items(tmp_path: Path) -> None:
    first = candidates(tmp_path / "c" / "RC_a.candidates.parquet")
    copy = shutil.copy(first, tmp_path / "c" / "RC_b.candidates.parquet")
    out = tmp_path / "items"
    result = cli("prepare", str(first), str(copy), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert pq.read_table(out / "RC_a.items.parquet").num_rows == 3
    assert pq.read_table(out / "RC_b.items.parquet").num_rows == 0
    report = items_report(out, "RC_b")
    assert report["stats"]["stages"]["dedup"]["dropped"] == {"same_id_duplicate": 3}  # type: ignore[index]
    assert report["same_id_duplicates"] == {"RC_a": 3}
    with DedupIndex(out / "dedup-index.sqlite", PrepareConfig()) as index:
        assert index.repeats_of("c0") == [{"input_name": "RC_b", "kept_input": "RC_a"}]
    # The same file prepared again (its report gone, so it is not skipped) keeps its own items.
    (out / "RC_a.prepare.json").unlink()
    assert cli("prepare", str(first), "--out", str(out)).exit_code == 0
    assert pq.read_table(out / "RC_a.items.parquet").num_rows == 3
    assert items_report(out, "RC_a")["stats"]["stages"]["dedup"]["dropped"] == {}  # type: ignore[index]


def test_the_same_id_twice_in_one_candidates_file_is_one_item(tmp_path: Path) -> None:
    rows = [handmade(SENTENCE, "Paul", "Mary", "she", "female", "c0")] * 2
    source = candidates_file(tmp_path / "c" / "RC_a.candidates.parquet", rows)
    out = tmp_path / "items"
    assert cli("prepare", str(source), "--out", str(out)).exit_code == 0
    assert pq.read_table(out / "RC_a.items.parquet").column("candidate_id").to_pylist() == ["c0"]
    assert items_report(out, "RC_a")["same_id_duplicates"] == {"RC_a": 1}


def test_an_index_from_before_inputs_were_recorded_still_reruns_its_files(tmp_path: Path) -> None:
    source = candidates(tmp_path / "c" / "RC_a.candidates.parquet")
    out = tmp_path / "items"
    assert cli("prepare", str(source), "--out", str(out)).exit_code == 0
    with sqlite3.connect(out / "dedup-index.sqlite") as db:  # as an older index has it: no input column
        columns = {row[1] for row in db.execute("PRAGMA table_info(kept)")}
        if "input_name" in columns:
            db.execute("ALTER TABLE kept DROP COLUMN input_name")
    (out / "RC_a.prepare.json").unlink()
    copy = shutil.copy(source, tmp_path / "c" / "RC_b.candidates.parquet")
    assert cli("prepare", str(source), str(copy), "--out", str(out)).exit_code == 0
    assert pq.read_table(out / "RC_a.items.parquet").num_rows == 3
    assert pq.read_table(out / "RC_b.items.parquet").num_rows == 0


def test_release_counts_unique_items_by_id_when_two_items_files_hold_the_same(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "run", {"t3_a": 3})
    items = run / "items"
    shutil.copy(items / "RC_2099-01.items.parquet", items / "RC_2099-01-copy.items.parquet")
    for stem in ("RC_2099-01", "RC_2099-01-copy"):
        (items / f"{stem}.prepare.json").write_bytes(orjson.dumps({"items": 3}))
    result = cli(
        "release",
        "--run",
        str(run),
        "--votes",
        str(run / "votes.parquet"),
        "--out",
        str(tmp_path / "r"),
        "--version",
        "v1",
    )
    assert result.exit_code == 0, result.output
    manifest = orjson.loads((tmp_path / "r" / "v1" / "manifest.json").read_bytes())
    assert manifest["funnel"]["unique items"] == 3
    assert sum(manifest["splits"].values()) == 3


@pytest.mark.parametrize("merge", ["the same collect twice", "two servers' votes"])
def test_a_votes_file_holding_two_collects_is_refused_naming_the_row(tmp_path: Path, merge: str) -> None:
    """Twice the same votes would double the counts and the cost; two servers' votes collide on their
    annotators and annotation ids: one error line naming the file and the first repeated row."""
    run = synthetic_run(tmp_path / "run", {"t3_a": 3})
    path = run / "votes.parquet"
    votes = pq.read_table(path).to_pylist()
    if merge == "two servers' votes":  # another server's accounts, its annotation ids counted from 1 too
        other = [{**v, "annotator_id": v["annotator_id"] + 100} for v in votes]
    else:
        other = votes
    pq.write_table(pa.Table.from_pylist(votes + other, schema=pq.read_schema(path)), path)
    result = cli(
        "release", "--run", str(run), "--votes", str(path), "--out", str(tmp_path / "r"), "--version", "v1"
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    what = (
        "a vote of the same annotator on the same item"
        if merge == "the same collect twice"
        else "the same annotation"
    )
    assert len(lines) == 1 and str(path) in lines[0] and f"row {len(votes) + 1} repeats {what}" in lines[0], (
        lines
    )
    assert not (tmp_path / "r" / "v1").exists()


# D4: a damaged release -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small release with a shard in every split (30 threads of 2 items), built once."""
    folder = tmp_path_factory.mktemp("release")
    run = synthetic_run(folder / "run", {f"t3_{n}": 2 for n in range(30)})
    return build_release(run, run / "votes.parquet", "v1", folder / "releases").path


@pytest.fixture
def release(built_release: Path, tmp_path: Path) -> Path:
    """A copy of the built release, this test's to damage."""
    return Path(shutil.copytree(built_release, tmp_path / "v1"))


def shard(release: Path, split: str) -> Path:
    (path,) = (release / "data").glob(f"{split}-*.parquet")
    return path


def test_a_deleted_shard_is_an_error_naming_it_not_an_empty_split(release: Path) -> None:
    test_shard = shard(release, "test")
    assert knowref60k.load_release(release, "test").num_rows > 0
    test_shard.unlink()
    name = test_shard.relative_to(release).as_posix()
    with pytest.raises(UserError, match=rf"{re.escape(name)}: missing"):
        knowref60k.load_release(release, "test")
    result = cli("stats", str(release))
    line = one_line_error(result, name, "missing")
    assert "1 file(s)" in line
    assert f"{name}: " in result.output and "DAMAGED, missing" in result.output


def test_a_truncated_shard_is_an_error_naming_it(release: Path) -> None:
    train = shard(release, "train")
    train.write_bytes(train.read_bytes()[: train.stat().st_size // 2])
    name = train.relative_to(release).as_posix()
    with pytest.raises(UserError, match=rf"{re.escape(name)}: not a readable Parquet file"):
        knowref60k.load_release(release, "train")
    one_line_error(cli("stats", str(release)), name, "not a readable Parquet file")


def test_a_shard_with_fewer_rows_than_the_manifest_says_is_an_error(release: Path) -> None:
    train = shard(release, "train")
    table = pq.read_table(train)
    pq.write_table(table.slice(0, table.num_rows - 1), train)
    name = train.relative_to(release).as_posix()
    wanted = f"{name}: {table.num_rows - 1} rows where the manifest says {table.num_rows}"
    with pytest.raises(UserError, match=re.escape(wanted)):
        knowref60k.load_release(release, "train")
    one_line_error(cli("stats", str(release)), wanted)


def test_a_changed_shard_with_the_same_rows_fails_verification(release: Path) -> None:
    train = shard(release, "train")
    table = pq.read_table(train)
    flipped = table.set_column(
        table.schema.get_field_index("label"),
        table.schema.field("label"),
        pc.subtract(1, table.column("label")),
    )
    pq.write_table(flipped, train)
    name = train.relative_to(release).as_posix()
    assert knowref60k.load_release(release, "train").num_rows == table.num_rows  # rows only, by default
    with pytest.raises(UserError, match=rf"{re.escape(name)}: sha256 differs"):
        knowref60k.load_release(release, "train", verify=True)
    assert cli("stats", str(release)).exit_code == 0
    one_line_error(cli("stats", str(release), "--verify"), name, "sha256 differs")


def test_a_stray_shard_not_in_the_manifest_is_not_loaded_silently(release: Path) -> None:
    test_shard = shard(release, "test")
    shutil.copy(test_shard, release / "data" / "test-00001-of-00002.parquet")
    with pytest.raises(UserError, match=r"data/test-00001-of-00002\.parquet: not in the manifest"):
        knowref60k.load_release(release, "test")
    one_line_error(cli("stats", str(release)), "data/test-00001-of-00002.parquet", "not in the manifest")


def test_a_shard_whose_entry_left_the_manifest_fails_stats_as_it_fails_loading(release: Path) -> None:
    path = release / "manifest.json"
    manifest = orjson.loads(path.read_bytes())
    name = shard(release, "train").relative_to(release).as_posix()
    manifest["files"] = [entry for entry in manifest["files"] if entry["path"] != name]
    path.write_bytes(orjson.dumps(manifest))
    with pytest.raises(UserError, match=rf"{re.escape(name)}: not in the manifest"):
        knowref60k.load_release(release, "train", verify=True)
    one_line_error(cli("stats", str(release), "--verify"), name, "not in the manifest")


def test_stats_of_an_intact_release_checks_every_file(release: Path) -> None:
    result = cli("stats", str(release), "--verify")
    assert result.exit_code == 0, result.output
    manifest = orjson.loads((release / "manifest.json").read_bytes())
    assert f"files: {len(manifest['files'])} present, as the manifest says (rows and sha256)" in result.output
    assert "DAMAGED" not in result.output


# D14: a SIGKILLed parent leaves no worker behind ---------------------------------------------------------


def children(pid: int) -> list[int]:
    """The live child processes of `pid`, from /proc (every thread's list: a child belongs to the thread
    that started it)."""
    found = []
    for tasks in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):  # the thread or the process ended meanwhile
            found += [int(child) for child in tasks.read_text().split()]
    return found


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    pending = children(pid)
    while pending:
        child = pending.pop()
        found.add(child)
        pending += children(child)
    return found


def alive(pid: int) -> bool:
    """Running, or stopped, but neither gone nor a zombie (a dead process its new parent has not reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


def dump_with_bad_lines(path: Path, lines: int, every: int) -> Path:
    """Real comments, with an unparseable line after every `every`-th: the quarantine file is written as
    soon as the first results come back from the workers, so it shows their model is loaded."""
    source = shared_file("data/reddit/RC_sample_1M.zst")
    with open_input(source) as (_raw, stream), path.open("wb") as out:
        for chunk in iter_line_chunks(stream, source.name):
            for number, line in iter_lines(chunk):
                if number > lines:
                    return path
                out.write(line + b"\n")
                if number % every == 0:
                    out.write(b'{"id": "bad-%d", "body": "cut\n' % number)
    return path


@pytest.mark.integration
def test_sigkill_of_extract_leaves_no_worker_or_resource_tracker_running(tmp_path: Path) -> None:
    dump = dump_with_bad_lines(tmp_path / "RC_killed.ndjson", 60_000, every=50)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "knowref60k", "extract", str(dump), "--out", str(out), "--workers", "2"]
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        command, cwd=REPO, env=environment, start_new_session=True, stdout=DEVNULL, stderr=DEVNULL
    )
    try:
        quarantine = out / ".RC_killed.quarantine.jsonl.partial"
        # The first chunks are done: both workers have loaded the model and work on the next ones.
        wait_for(lambda: quarantine.exists() and quarantine.stat().st_size > 0, 300, "the first results")
        started = descendants(process.pid)  # two workers and multiprocessing's resource tracker
        assert process.poll() is None and len(started) >= 3, started
        os.kill(process.pid, signal.SIGKILL)  # the parent alone: nothing can tell the workers
        process.wait()
        wait_for(lambda: not [pid for pid in started if alive(pid)], 120, "the workers to end")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the group, by its id
    assert not [pid for pid in started if alive(pid)]


# Workers blocked in a task that never ends (an Event nobody sets): only their parent's death can stop them.
BLOCKED_POOL = """
import threading
from knowref60k.core.parallel import WorkerPool
with WorkerPool(2, threading.Event) as pool:
    for _ in pool.map("wait", [(600,)] * 4):
        pass
"""


def test_sigkill_of_a_worker_pools_parent_ends_its_workers_whatever_they_do(tmp_path: Path) -> None:
    """The pool of `extract` and `overlap index` without a model: fast enough for every test run."""
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_POOL], cwd=tmp_path, env=environment, start_new_session=True
    )
    try:
        # Both workers and the resource tracker exist; the workers may still be starting.
        started: set[int] = wait_for(
            lambda: found if len(found := descendants(process.pid)) >= 3 else None, 60, "the workers to start"
        )
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        wait_for(lambda: not [pid for pid in started if alive(pid)], 120, "the workers to end")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert not [pid for pid in started if alive(pid)]
