"""Faults: a killed extraction, and a Label Studio that goes down in the middle of a push."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from annotation.client import LabelStudioClient
from annotation.server import Server
from knowref60k.config import ExtractConfig
from knowref60k.errors import UserError
from knowref60k.extract import Extractor
from knowref60k.slicing import write_line_range
from tests.conftest import REPO, shared_file
from tests.test_annotation import item


@pytest.mark.integration
def test_sigkill_in_the_middle_of_extraction_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    dump = tmp_path / "RC_sample_300k.zst"
    write_line_range(shared_file("data/reddit/RC_sample_1M.zst"), dump, 400_000, 300_000)
    with Extractor(ExtractConfig(), workers=2) as extractor:
        reference = extractor.extract_file(dump, tmp_path / "uninterrupted")
    out = tmp_path / "killed"
    cli = Path(sys.executable).parent / "knowref60k"
    command = [str(cli), "extract", str(dump), "--out", str(out), "--workers", "2"]
    process = subprocess.Popen(
        command, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(6)
    assert process.poll() is None, "extraction finished before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (out / "RC_sample_300k.candidates.parquet").exists()  # nothing half-written is visible
    assert list(out.glob(".*.partial"))  # the kill left its partial files behind
    with Extractor(ExtractConfig(), workers=2) as extractor:
        rerun = extractor.extract_file(dump, out)
    assert not rerun.skipped and rerun.candidates == reference.candidates > 0
    assert rerun.candidates_path.read_bytes() == reference.candidates_path.read_bytes()
    assert not list(out.glob(".*.partial"))


@pytest.mark.integration
def test_label_studio_stopped_during_a_push_then_resumed_without_duplicates(
    label_studio_server: Server,
) -> None:
    settings = dataclasses.replace(label_studio_server.settings, project="fault test")
    items = [item(n) for n in range(20_000)]
    failures: list[Exception] = []

    def push() -> None:
        try:
            with LabelStudioClient(settings) as client:
                client.push(items, seed=0, batch_size=100)
        except UserError as error:
            failures.append(error)

    with LabelStudioClient(settings) as client:
        client.ensure_project()
    pusher = threading.Thread(target=push)
    pusher.start()
    time.sleep(2.5)
    label_studio_server.stop()
    pusher.join()
    assert failures and "not reachable" in str(failures[0])
    label_studio_server.start()
    with LabelStudioClient(settings) as client:
        before = len(client.export(client.existing_project()))
        assert 0 < before < len(items)
        report = client.push(items, seed=0, batch_size=1000)
        exported = client.export(client.existing_project())
    assert report.pushed == len(items) - before
    ids = [task["data"]["item_id"] for task in exported]
    assert len(ids) == len(set(ids)) == len(items)
