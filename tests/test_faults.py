"""Faults: a killed extraction, and a Label Studio that goes down in the middle of a push."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from annotation.client import LabelStudioClient
from annotation.server import Server
from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.extract.extractor import Extractor
from knowref60k.ingest.readers import iter_line_chunks, open_input
from knowref60k.ingest.slicing import write_line_range
from tests.conftest import REPO, shared_file, wait_for
from tests.test_annotation import item


def dump_with_bad_lines(path: Path, lines: int, every: int) -> int:
    """Real comments with an unparseable ~1 KB line after every `every`-th: the quarantine file then
    grows as extraction advances, which shows how far a run got. Returns the number of bad lines."""
    source = shared_file("data/reddit/RC_sample_1M.zst")
    comments = path.with_suffix(".slice.zst")
    write_line_range(source, comments, 400_000, lines)
    bad = 0
    with open_input(comments) as (_, stream), path.open("wb") as out:
        for chunk in iter_line_chunks(stream, comments.name):
            for number, line in enumerate(chunk.data.splitlines(keepends=True), start=chunk.first_line):
                out.write(line)
                if number % every == 0:
                    out.write(b'{"id": "bad-%d", "body": "%s\n' % (number, b"x" * 1000))
                    bad += 1
    comments.unlink()
    return bad


@pytest.mark.integration
def test_sigkill_in_the_middle_of_extraction_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    dump = tmp_path / "RC_sample_300k.ndjson"
    bad_lines = dump_with_bad_lines(dump, 300_000, every=5_000)
    with Extractor(ExtractConfig(), workers=2) as extractor:
        reference = extractor.extract_file(dump, tmp_path / "uninterrupted")
    assert reference.stats.quarantined == bad_lines == 60
    whole_quarantine = reference.quarantine_path.stat().st_size
    out = tmp_path / "killed"
    partial_quarantine = out / ".RC_sample_300k.quarantine.jsonl.partial"
    cli = Path(sys.executable).parent / "knowref60k"
    command = [str(cli), "extract", str(dump), "--out", str(out), "--workers", "2"]
    process = subprocess.Popen(
        command, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        # Kill once a third of the bad lines are quarantined: past model loading, well before the end.
        wait_for(
            lambda: (
                partial_quarantine.exists() and partial_quarantine.stat().st_size >= whole_quarantine // 3
            ),
            300,
            "extraction to pass a third of the file",
        )
        assert process.poll() is None, "extraction finished before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert whole_quarantine // 3 <= partial_quarantine.stat().st_size < whole_quarantine  # killed half-way
    left = sorted(p.name for p in out.iterdir())
    assert left and all(name.startswith(".") and name.endswith(".partial") for name in left), left
    with Extractor(ExtractConfig(), workers=2) as extractor:
        rerun = extractor.extract_file(dump, out)
    assert not rerun.skipped and rerun.rows == reference.rows == 45
    assert rerun.rows_path.read_bytes() == reference.rows_path.read_bytes()
    assert rerun.quarantine_path.read_bytes() == reference.quarantine_path.read_bytes()
    assert not list(out.glob(".*.partial"))


@pytest.mark.integration
def test_label_studio_stopped_during_a_push_then_resumed_without_duplicates(own_label_studio: Server) -> None:
    settings = dataclasses.replace(own_label_studio.settings, project="fault test")
    items = [item(n) for n in range(20_000)]
    failures: list[Exception] = []
    imported = threading.Event()

    def push() -> None:
        try:
            with LabelStudioClient(settings) as client:
                import_batch = client._import

                def counted(project: int, tasks: list[dict[str, object]]) -> int:
                    done = import_batch(project, tasks)
                    imported.set()  # at least one batch is in: stop the server now
                    return done

                client._import = counted  # type: ignore[method-assign]
                client.push(items, seed=0, batch_size=100)
        except UserError as error:
            failures.append(error)

    with LabelStudioClient(settings) as client:
        client.ensure_project()
    pusher = threading.Thread(target=push)
    pusher.start()
    assert imported.wait(timeout=300), "the push imported nothing"
    own_label_studio.stop()
    pusher.join(timeout=300)
    assert not pusher.is_alive() and failures and "not reachable" in str(failures[0])
    own_label_studio.start()
    with LabelStudioClient(settings) as client:
        before = len(client.export(client.existing_project()))
        assert 100 <= before < len(items)
        report = client.push(items, seed=0, batch_size=1000)
        exported = client.export(client.existing_project())
    assert report.pushed == len(items) - before
    ids = [task["data"]["item_id"] for task in exported]
    assert len(ids) == len(set(ids)) == len(items)
