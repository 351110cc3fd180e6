"""Hostile data around the completion marker, each test named after what it protects: two runs into one
folder, a dump that grows while it is read, same-named inputs from two folders, outputs damaged after a
run. Small synthetic inputs and in-process commands; a second run "at the same time" is started from
inside the first (a hook on its reading), which is what a lock must stop, without a clock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import Result

from knowref60k.core.config import ExtractConfig
from tests.test_hostile_io import candidates, cli, one_line_error

BODY = "Paul met Mary on the first day, but she left early."


def prepared(source: Path, out: Path, *options: str) -> Result:
    return cli("prepare", str(source), "--out", str(out), *options)


def report(path: Path) -> dict[str, Any]:
    return dict(orjson.loads(path.read_bytes()))


def fingerprint_of(parquet: Path) -> str:
    return pq.read_schema(parquet).metadata[b"knowref60k.fingerprint"].decode()


@pytest.fixture(scope="module")
def spacy_extractor() -> Iterator[Any]:
    """One in-process extractor for the integration tests here: the spaCy model loads once."""
    from knowref60k.extract.extractor import Extractor

    with Extractor(ExtractConfig(), workers=1) as extractor:
        extractor.load_here()
        yield extractor


def comments_dump(path: Path, lines: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = (orjson.dumps({"id": f"c{n}", "body": BODY, "created_utc": 1}) + b"\n" for n in range(lines))
    path.write_bytes(b"".join(rows))
    return path


# D1: two runs into one output folder ---------------------------------------------------------------


def test_a_second_prepare_into_the_same_out_fails_at_once_and_mixes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowref60k.prepare.preparer as preparer

    source, out = candidates(tmp_path), tmp_path / "items"
    second: list[Result] = []
    reading = preparer.read_candidates

    def read_while_another_starts(path: Path) -> Iterator[dict[str, Any]]:
        if not second:  # the first run is past its "already done?" check: a second one starts now
            second.append(prepared(source, out, "--seed", "7"))
        yield from reading(path)

    monkeypatch.setattr(preparer, "read_candidates", read_while_another_starts)
    out.mkdir()
    (out / ".RC_a.lock").write_text("99999\n")  # left by a killed run: its lock died with it
    first = prepared(source, out)
    assert first.exit_code == 0, first.output
    items = out / "RC_a.items.parquet"
    one_line_error(second[0], str(items), f"pid {os.getpid()}", "another run")
    marker = report(out / "RC_a.prepare.json")
    assert marker["items"] == 3 and marker["config"]["seed"] != 7
    assert marker["fingerprint"] == fingerprint_of(items)
    assert not list(out.glob(".RC_a.*"))  # neither a lock file nor a .partial left behind


@pytest.mark.integration
def test_a_second_extract_into_the_same_out_fails_at_once_and_mixes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spacy_extractor: Any
) -> None:
    import knowref60k.extract.extractor as extractor

    dump, out = comments_dump(tmp_path / "in" / "RC_f.ndjson", 5), tmp_path / "c"
    second: list[Result] = []
    chunks = extractor.iter_line_chunks

    def read_while_another_starts(*args: Any) -> Iterator[Any]:
        if not second:  # the brief's `extract ... & extract ... --max-connectives 3`, deterministic
            second.append(cli("extract", str(dump), "--out", str(out), "--max-connectives", "3"))
        yield from chunks(*args)

    monkeypatch.setattr(extractor, "iter_line_chunks", read_while_another_starts)
    first = spacy_extractor.extract_file(dump, out)
    parquet = out / "RC_f.candidates.parquet"
    one_line_error(second[0], str(parquet), f"pid {os.getpid()}")
    stats = report(out / "RC_f.stats.json")
    assert stats["config"]["max_connectives"] == spacy_extractor.config.max_connectives != 3
    assert stats["fingerprint"] == fingerprint_of(parquet) == spacy_extractor.fingerprint
    assert stats["candidates"] == first.rows == pq.read_metadata(parquet).num_rows
    assert not list(out.glob(".RC_f.*"))


# D2: an input that grows while it is read -------------------------------------------------------------


def test_candidates_file_replaced_while_prepared_is_not_marked_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowref60k.prepare.preparer as preparer

    source, out = candidates(tmp_path, 3), tmp_path / "items"
    reading = preparer.read_candidates

    def read_then_the_file_grows(path: Path) -> Iterator[dict[str, Any]]:
        yield from reading(path)
        candidates(tmp_path, 4)  # the extraction of a longer dump replaces it before the report

    monkeypatch.setattr(preparer, "read_candidates", read_then_the_file_grows)
    one_line_error(prepared(source, out), str(source), "changed while it was read", "not marked done")
    assert not (out / "RC_a.prepare.json").exists()
    monkeypatch.undo()
    rerun = prepared(source, out)
    assert rerun.exit_code == 0 and "already done" not in rerun.output, rerun.output
    assert report(out / "RC_a.prepare.json")["items"] == 4


@pytest.mark.integration
def test_dump_growing_while_extracted_is_not_marked_done_and_the_rerun_reads_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spacy_extractor: Any
) -> None:
    import knowref60k.extract.extractor as extractor
    from knowref60k.core.errors import UserError
    from knowref60k.core.io import file_sha256

    dump, out = comments_dump(tmp_path / "RC_g.ndjson", 4), tmp_path / "c"
    chunks = extractor.iter_line_chunks

    def a_line_arrives_during_the_read(*args: Any) -> Iterator[Any]:
        late = orjson.dumps({"id": "late", "body": BODY, "created_utc": 1}) + b"\n"
        for chunk in chunks(*args):
            yield chunk
            if late:  # a download still running adds one more line
                with dump.open("ab") as handle:
                    handle.write(late)
                late = b""

    monkeypatch.setattr(extractor, "iter_line_chunks", a_line_arrives_during_the_read)
    with pytest.raises(UserError, match=r"changed while it was read .*not marked done"):
        spacy_extractor.extract_file(dump, out)
    assert not list(out.glob("RC_g.*"))
    monkeypatch.undo()
    rerun = spacy_extractor.extract_file(dump, out)
    stats = report(out / "RC_g.stats.json")
    assert not rerun.skipped and stats["stats"]["stages"]["read"]["in"] == 5
    assert stats["source"]["size"] == dump.stat().st_size and stats["source_sha256"] == file_sha256(dump)


def test_watch_leaves_a_dump_that_is_still_growing_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging
    from types import SimpleNamespace

    import knowref60k.ingest.ledger
    import knowref60k_flows.watch

    dumps, out = tmp_path / "dumps", tmp_path / "run"
    complete, growing = comments_dump(dumps / "RC_a.ndjson", 2), comments_dump(dumps / "RC_b.ndjson", 2)
    handed_over: list[list[str]] = []

    def pipeline(inputs: list[str], out_dir: str, **_: Any) -> dict[str, Any]:
        handed_over.append([Path(name).name for name in inputs])
        stats = Path(out_dir) / "stats.json"
        stats.write_bytes(b'{"input": {"complete": "yes"}}')
        return {"extract": {"files": [{"stats_path": str(stats)}]}, "prepare": {"files": []}}

    def settle(seconds: float) -> None:  # RC_b is still being downloaded during the wait
        with growing.open("ab") as handle:
            handle.write(b"\n")

    monkeypatch.setattr(knowref60k_flows.watch, "get_run_logger", lambda: logging.getLogger("watch"))
    monkeypatch.setattr(knowref60k_flows.watch, "pipeline_flow", pipeline)
    monkeypatch.setattr(knowref60k.ingest.ledger, "time", SimpleNamespace(sleep=settle), raising=False)
    first = knowref60k_flows.watch.watch_flow.fn(str(dumps), str(out), push_items=False)
    assert (first["processed"], handed_over) == ({complete.name: "done"}, [[complete.name]])
    monkeypatch.setattr(
        knowref60k.ingest.ledger, "time", SimpleNamespace(sleep=lambda seconds: None), raising=False
    )
    second = knowref60k_flows.watch.watch_flow.fn(str(dumps), str(out), push_items=False)
    assert second["processed"] == {growing.name: "done"} and handed_over[-1] == [growing.name]


# D5: same-named inputs from two folders, one output folder ---------------------------------------------


def test_same_named_candidates_from_another_folder_do_not_replace_finished_items(tmp_path: Path) -> None:
    first, other, out = candidates(tmp_path / "a", 3), candidates(tmp_path / "b", 2), tmp_path / "items"
    assert prepared(first, out).exit_code == 0
    marker = out / "RC_a.prepare.json"
    one_line_error(prepared(other, out), str(first.resolve()), str(other.resolve()), str(marker))
    assert report(marker)["items"] == 3 and report(marker)["source_path"] == str(first.resolve())
    assert "already done" in prepared(first, out).output  # the same file: the normal rerun
    moved = tmp_path / "moved" / first.name  # the same file moved to another folder is still its source
    moved.parent.mkdir()
    first.rename(moved)
    assert "already done" in prepared(moved, out).output


def test_a_marker_without_the_source_path_is_trusted_as_before(tmp_path: Path) -> None:
    first, other, out = candidates(tmp_path / "a", 3), candidates(tmp_path / "b", 2), tmp_path / "items"
    assert prepared(first, out).exit_code == 0
    marker = out / "RC_a.prepare.json"
    older = {key: value for key, value in report(marker).items() if key != "source_path"}
    marker.write_bytes(orjson.dumps(older))  # an older run's report: whose outputs they are is unknown
    assert prepared(other, out).exit_code == 0
    assert report(marker)["items"] == 2 and report(marker)["source_path"] == str(other.resolve())


@pytest.mark.integration
def test_same_named_dump_from_another_folder_does_not_replace_finished_candidates(
    tmp_path: Path, spacy_extractor: Any
) -> None:
    first = comments_dump(tmp_path / "sa" / "a" / "RC_x.ndjson", 3)
    other = comments_dump(tmp_path / "sa" / "b" / "RC_x.ndjson", 2)
    out = tmp_path / "c"
    spacy_extractor.extract_file(first, out)
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    result = cli("extract", str(other), "--out", str(out))
    one_line_error(result, str(first.resolve()), str(other.resolve()))
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


# R22: outputs damaged after the marker was written; nothing fsynced ---------------------------------------


def zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def one_byte_changed(path: Path) -> None:
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0xFF
    path.write_bytes(bytes(content))


@pytest.mark.parametrize("damage", [zero_bytes, one_byte_changed])
@pytest.mark.parametrize("output", ["items.parquet", "invalid-candidates.jsonl", "below-threshold.parquet"])
def test_an_output_damaged_beside_an_intact_marker_is_redone_not_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, output: str, damage: Any
) -> None:
    from tests.test_hostile_io import broken_candidates

    source, out = broken_candidates(tmp_path), tmp_path / "items"  # one item, three quarantined rows
    assert prepared(source, out).exit_code == 0
    damaged, marker = out / f"RC_a.{output}", out / "RC_a.prepare.json"
    damage(damaged)
    rerun = prepared(source, out)
    assert rerun.exit_code == 0 and "already done" not in rerun.output, rerun.output
    assert f"{damaged.name} is" in caplog.text and "done again" in caplog.text
    assert report(marker)["items"] == pq.read_metadata(out / "RC_a.items.parquet").num_rows == 1
    assert len((out / "RC_a.invalid-candidates.jsonl").read_bytes().splitlines()) == 3


@pytest.mark.integration
def test_a_zero_byte_candidates_file_beside_its_stats_is_extracted_again(
    tmp_path: Path, spacy_extractor: Any
) -> None:
    dump, out = comments_dump(tmp_path / "RC_z.ndjson", 3), tmp_path / "c"
    first = spacy_extractor.extract_file(dump, out)
    zero_bytes(first.rows_path)  # a crash after the rename, before the data reached the disk
    rerun = spacy_extractor.extract_file(dump, out)
    assert not rerun.skipped and rerun.rows == first.rows == pq.read_metadata(first.rows_path).num_rows


def test_outputs_reach_the_disk_before_the_marker_vouches_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    def replace(source: Any, target: Any) -> None:
        events.append(("replace", str(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    source, out = candidates(tmp_path), (tmp_path / "items").resolve()
    assert prepared(source, out).exit_code == 0
    monkeypatch.undo()
    names = ["items.parquet", "invalid-candidates.jsonl", "below-threshold.parquet", "prepare.json"]
    renames = []
    for name in (f"RC_a.{name}" for name in names):
        at = events.index(("replace", str(out / name)))
        assert events[at - 1] == ("fsync", str(out / f".{name}.partial"))  # the data, then the rename
        assert events[at + 1] == ("fsync", str(out))  # the rename itself
        renames.append(at)
    assert renames[-1] > max(renames[:-1])  # the marker last
