"""Hostile input and a hostile environment around files, each test named after what it protects: an
output folder that cannot be written, a full disk, candidate rows of the wrong type, corrupt reports and
archives, a file given twice, usernames in the quarantine. Small synthetic inputs, in-process commands."""

from __future__ import annotations

import errno
import hashlib
import re
import types
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from knowref60k.cli.app import app
from tests.test_prepare import candidates_file, handmade

SENTENCE = "Paul met Mary on the first day, but she left early."


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def one_line_error(result: Result, *wanted: str) -> str:
    """The single `error: ...` line of a command that failed as it should (exit code 2, no traceback),
    after checking that it says every one of `wanted`."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.output
    for text in wanted:
        assert text in errors[0], errors[0]
    return errors[0]


def candidates(tmp_path: Path, count: int = 3, name: str = "RC_a") -> Path:
    rows = [
        handmade(SENTENCE.replace("first", f"day {n} of the"), "Paul", "Mary", "she", "female", f"c{n}")
        for n in range(count)
    ]
    return candidates_file(tmp_path / "candidates" / f"{name}.candidates.parquet", rows)


def ndjson_dump(tmp_path: Path) -> Path:
    source = tmp_path / "RC_one.ndjson"
    source.write_bytes(b'{"id": "one", "body": "Just a line.", "created_utc": 1}\n')
    return source


# D8: an output folder that cannot be written ----------------------------------------------------------


def test_out_under_a_regular_file_is_one_line_for_extract_prepare_and_release(tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("a file, not a folder")
    out = a_file / "out"
    source = candidates(tmp_path)
    release = ["release", "--run", str(tmp_path), "--votes", str(tmp_path / "v.parquet"), "--version", "v1"]
    for command in (
        ["extract", str(ndjson_dump(tmp_path)), "--out", str(out)],
        ["prepare", str(source), "--out", str(out)],
        [*release, "--out", str(out)],
    ):
        line = one_line_error(cli(*command), str(out))
        assert "is a file" in line or "a part of the path is a file" in line, line
    index = a_file / "index.sqlite"
    result = cli("prepare", str(source), "--out", str(tmp_path / "items"), "--index", str(index))
    line = one_line_error(result, str(a_file))
    assert "is a file" in line or "a file of that name is in the way" in line, line


def test_a_file_to_write_that_is_a_folder_is_one_line_naming_it(tmp_path: Path) -> None:
    from knowref60k.core.errors import StorageError
    from knowref60k.core.io import atomic_path

    folder = tmp_path / "examples.jsonl"
    folder.mkdir()
    refused = pytest.raises(StorageError, match=rf"^cannot write {re.escape(str(folder))}: it is a folder")
    with refused, atomic_path(folder) as temporary:
        temporary.write_bytes(b"x")
    assert folder.is_dir() and list(tmp_path.iterdir()) == [folder]


def test_read_only_out_folder_is_one_line_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests may run as root, whom chmod does not stop: the folder reports itself read-only instead.
    import knowref60k.core.io

    out = tmp_path / "read-only"
    out.mkdir()
    writable = knowref60k.core.io.os.access

    def access(path: Any, mode: int) -> bool:
        return False if Path(path) == out and mode & knowref60k.core.io.os.W_OK else writable(path, mode)

    monkeypatch.setattr(knowref60k.core.io.os, "access", access)
    result = cli("prepare", str(candidates(tmp_path)), "--out", str(out), "--index", str(tmp_path / "i.db"))
    one_line_error(result, f"cannot write into {out}", "permission denied")
    assert list(out.iterdir()) == []


def test_permission_denied_while_writing_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What opening a file in a read-only folder raises for a user who is not root.
    import knowref60k.core.io

    def refused(path: Any, *_: Any, **__: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(knowref60k.core.io.pq, "ParquetWriter", refused)
    out = tmp_path / "items"
    result = cli("prepare", str(candidates(tmp_path)), "--out", str(out))
    one_line_error(result, f"cannot write {out / 'RC_a.items.parquet'}", "Permission denied")
    assert not list(out.glob("RC_a.*"))


# D9: a full disk ---------------------------------------------------------------------------------------


def no_space(path: object) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", str(path))


class FullDisk:
    """A file open for writing on a disk that is full: every write fails, and so does the flush on close
    (after closing the file, as Python's buffered files do)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def write(self, data: bytes) -> int:
        raise no_space(self.handle.name)

    def close(self) -> None:
        self.handle.close()
        raise no_space(self.handle.name)

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def fill_the_disk_for(monkeypatch: pytest.MonkeyPatch, name_part: str) -> None:
    """Files opened with `Path.open` for writing whose name contains `name_part` land on a full disk."""
    opened = Path.open

    def open_on_full_disk(path: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = opened(path, mode, *args, **kwargs)
        return FullDisk(handle) if "w" in mode and name_part in path.name else handle

    monkeypatch.setattr(Path, "open", open_on_full_disk)


def broken_candidates(tmp_path: Path) -> Path:
    """One good candidate and three whose spans do not fit (quarantined by prepare)."""
    good = handmade(SENTENCE, "Paul", "Mary", "she", "female", "good")
    broken = [{**good, "candidate_id": f"bad{n}", "antecedent1_start": 60 + n} for n in range(3)]
    return candidates_file(tmp_path / "candidates" / "RC_a.candidates.parquet", [good, *broken])


def prepared_items(tmp_path: Path, source: Path, out: Path) -> Result:
    return cli("prepare", str(source), "--out", str(out), "--index", str(tmp_path / "index.sqlite"))


def test_disk_full_while_quarantining_is_one_line_and_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, out = broken_candidates(tmp_path), tmp_path / "items"
    fill_the_disk_for(monkeypatch, "invalid-candidates")
    quarantine = out / "RC_a.invalid-candidates.jsonl"
    one_line_error(prepared_items(tmp_path, source, out), f"cannot write {quarantine}", "No space left")
    assert list(out.glob("RC_a.*")) == [] and list(out.glob(".*.partial")) == []
    monkeypatch.undo()  # space freed: the rerun does the file whole, its item not taken for a duplicate
    assert prepared_items(tmp_path, source, out).exit_code == 0
    assert len(quarantine.read_bytes().splitlines()) == 3
    assert orjson.loads((out / "RC_a.prepare.json").read_bytes())["items"] == 1


def test_disk_full_while_writing_items_mid_run_is_one_line_and_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowref60k.core.io

    real_writer = knowref60k.core.io.pq.ParquetWriter

    class FillsUp(real_writer):  # type: ignore[misc, valid-type]
        """Writes one row group, then the disk is full (the footer does not fit either)."""

        groups = 0

        def write_table(self, table: Any, *args: Any, **kwargs: Any) -> None:
            FillsUp.groups += 1
            if FillsUp.groups > 1:
                raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: No space left on device")
            super().write_table(table, *args, **kwargs)

        def close(self) -> None:
            super().close()
            if FillsUp.groups > 1:
                raise OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(knowref60k.core.io, "ROW_GROUP_SIZE", 1)
    monkeypatch.setattr(knowref60k.core.io.pq, "ParquetWriter", FillsUp)
    out = tmp_path / "items"
    result = prepared_items(tmp_path, candidates(tmp_path), out)
    one_line_error(result, f"cannot write {out / 'RC_a.items.parquet'}", "No space left")
    assert FillsUp.groups == 2 and list(out.glob("RC_a.*")) == [] and list(out.glob(".*.partial")) == []


def test_disk_full_in_the_dedup_index_is_one_line_and_forgets_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from knowref60k.prepare.dedup import DedupIndex

    def full(_: DedupIndex) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(DedupIndex, "commit", full)
    source, out = candidates(tmp_path), tmp_path / "items"
    index = tmp_path / "index.sqlite"
    one_line_error(prepared_items(tmp_path, source, out), f"de-duplication index {index}", "disk is full")
    assert list(out.glob("RC_a.prepare.json")) == []
    monkeypatch.undo()
    assert prepared_items(tmp_path, source, out).exit_code == 0
    assert orjson.loads((out / "RC_a.prepare.json").read_bytes())["items"] == 3  # none taken for copies


@pytest.mark.integration
def test_disk_full_while_extract_quarantines_is_one_line_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "RC_bad.ndjson"
    source.write_bytes(b'{"id": "a", "body": "fine.", "created_utc": 1}\n{"id": "cut\n' * 50)
    fill_the_disk_for(monkeypatch, "quarantine")
    out = tmp_path / "out"
    result = cli("extract", str(source), "--out", str(out), "--workers", "1")
    one_line_error(result, f"cannot write {out / 'RC_bad.quarantine.jsonl'}", "No space left")
    assert list(out.iterdir()) == []


def test_disk_full_while_marking_a_file_done_leaves_it_to_be_redone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = Path.write_bytes

    def marker_on_full_disk(path: Path, data: Any) -> int:
        if path.name.endswith(".prepare.json.partial"):
            raise no_space(path)
        return written(path, data)

    monkeypatch.setattr(Path, "write_bytes", marker_on_full_disk)
    source, out = candidates(tmp_path), tmp_path / "items"
    marker = out / "RC_a.prepare.json"
    one_line_error(prepared_items(tmp_path, source, out), f"cannot write {marker}", "No space left")
    assert not marker.exists() and list(out.glob(".*.partial")) == []
    monkeypatch.undo()
    rerun = prepared_items(tmp_path, source, out)
    assert rerun.exit_code == 0 and "already done" not in rerun.output
    assert orjson.loads(marker.read_bytes())["items"] == 3


# D10: candidate rows with a null or a value of the wrong type -------------------------------------------


def loose_candidates_file(path: Path, rows: list[dict[str, Any]], **column_types: Any) -> Path:
    """Candidate rows as another tool might write them: every column nullable, some of another type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from knowref60k.core.io import CANDIDATE_SCHEMA

    fields = [
        pa.field(column.name, column_types.get(column.name, column.type), nullable=True)
        for column in CANDIDATE_SCHEMA
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), path)
    return path


def quarantined_candidates(out: Path, stem: str) -> list[tuple[str, str, str]]:
    lines = (out / f"{stem}.invalid-candidates.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    return [(orjson.loads(q["raw"])["candidate_id"], q["reason"], q["detail"]) for q in records]


def full_rows(tmp_path: Path, count: int) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(candidates(tmp_path, count, "RC_model")).to_pylist()


def test_null_sentence_is_quarantined_and_counted_and_the_good_rows_kept(tmp_path: Path) -> None:
    rows = full_rows(tmp_path, 3)
    rows[1] = {**rows[1], "sentence": None}
    rows[2] = {**rows[2], "pronoun_gender": None}
    source = loose_candidates_file(tmp_path / "RC_null.candidates.parquet", rows)
    out = tmp_path / "items"
    result = prepared_items(tmp_path, source, out)
    assert result.exit_code == 0, result.output
    assert quarantined_candidates(out, "RC_null") == [
        ("c1", "missing_value", "sentence is null"),
        ("c2", "missing_value", "pronoun_gender is null"),
    ]
    report = orjson.loads((out / "RC_null.prepare.json").read_bytes())
    assert report["items"] == 1 and report["stats"]["quarantined"] == 2
    assert report["stats"]["stages"]["validate"]["dropped"] == {"missing_value": 2}


def test_string_line_number_is_quarantined_with_its_reason_not_a_crash(tmp_path: Path) -> None:
    import pyarrow as pa

    rows = [{**row, "line_number": str(row["line_number"])} for row in full_rows(tmp_path, 2)]
    rows[1]["line_number"] = "twelve"
    strings = loose_candidates_file(tmp_path / "RC_str.candidates.parquet", rows, line_number=pa.string())
    good = candidates(tmp_path, 1, "RC_good")
    out = tmp_path / "items"
    result = cli("prepare", str(strings), str(good), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert quarantined_candidates(out, "RC_str") == [
        ("c0", "wrong_type", "line_number is str '1', expected int64"),
        ("c1", "wrong_type", "line_number is str 'twelve', expected int64"),
    ]
    assert orjson.loads((out / "RC_good.prepare.json").read_bytes())["items"] == 1
    assert "wrong_type: 2" in result.output  # in the funnel


# D11: corrupt reports and items ----------------------------------------------------------------------


def damaged(report: Path, how: str) -> None:
    """Damage a finished file's report the way a crash, a hand edit or another tool does."""
    content = report.read_bytes()
    kept = {key: value for key, value in orjson.loads(content).items() if key != "stats"}
    report.write_bytes(
        {
            "cut short": content[: len(content) // 2],
            "not JSON": b"{not json",
            "a JSON list": b"[1, 2]",
            "no stats": orjson.dumps(kept),  # fingerprint and source still match
        }[how]
    )


@pytest.mark.parametrize("how", ["cut short", "not JSON", "a JSON list", "no stats"])
def test_corrupt_completion_marker_counts_as_not_done_and_the_file_is_redone(
    tmp_path: Path, how: str
) -> None:
    source, out = candidates(tmp_path), tmp_path / "items"
    assert prepared_items(tmp_path, source, out).exit_code == 0
    marker = out / "RC_a.prepare.json"
    damaged(marker, how)
    rerun = prepared_items(tmp_path, source, out)
    assert rerun.exit_code == 0, rerun.output
    assert "already done" not in rerun.output and "RC_a.candidates.parquet: 3 items" in rerun.output
    assert orjson.loads(marker.read_bytes())["items"] == 3


@pytest.mark.integration
def test_corrupt_stats_json_makes_extract_redo_the_file(tmp_path: Path) -> None:
    source, out = ndjson_dump(tmp_path), tmp_path / "out"
    assert cli("extract", str(source), "--out", str(out), "--workers", "1").exit_code == 0
    damaged(out / "RC_one.stats.json", "cut short")
    rerun = cli("extract", str(source), "--out", str(out), "--workers", "1")
    assert rerun.exit_code == 0 and "already done" not in rerun.output, rerun.output
    assert orjson.loads((out / "RC_one.stats.json").read_bytes())["stats"]["stages"]["read"]["in"] == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"a": 1}', "no 'stats'"),
        (b"[1, 2]", "a JSON list, not an object"),
        (b'{"stats": {"stages": 3}}', "'stats' are malformed"),
    ],
)
def test_corrupt_stats_json_is_one_line_naming_it_in_funnel(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    stats = tmp_path / "RC_x.stats.json"
    stats.write_bytes(content)
    one_line_error(cli("funnel", str(tmp_path)), str(stats), problem)


def release_run(tmp_path: Path) -> Path:
    from tests.test_release import synthetic_run

    return synthetic_run(tmp_path / "run", {"t3_a": 2})


def release(run: Path, tmp_path: Path) -> Result:
    votes = run / "votes.parquet"
    return cli(
        "release", "--run", str(run), "--votes", str(votes), "--out", str(tmp_path / "r"), "--version", "v1"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"a": 1}', "no 'source_file', 'source', 'candidates'"),
        (b'{"source_file": "x", "source": {"size": "big"}, "candidates": 1}', "not a number"),
    ],
)
def test_corrupt_stats_json_is_one_line_naming_it_in_release(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    run = release_run(tmp_path)
    stats = run / "candidates" / "RC_2099-01.stats.json"
    stats.write_bytes(content)
    one_line_error(release(run, tmp_path), str(stats), problem)
    assert not (tmp_path / "r" / "v1").exists()


def test_corrupt_items_parquet_is_one_line_naming_it_in_release(tmp_path: Path) -> None:
    run = release_run(tmp_path)
    items = run / "items" / "RC_2099-01.items.parquet"
    items.write_bytes(items.read_bytes()[:-100])  # cut short: the footer is gone
    one_line_error(release(run, tmp_path), str(items), "not a readable items file")
    assert not (tmp_path / "r" / "v1").exists()


# D16: where a damaged archive's lines end -------------------------------------------------------------


def numbered_lines(count: int) -> bytes:
    return b"".join(
        b'{"id": "c%d", "body": "comment number %d of the dump"}\n' % (n, n * 7) for n in range(count)
    )


def read_to_the_end(path: Path) -> None:
    from knowref60k.ingest.readers import iter_line_chunks, open_input

    with open_input(path) as (_raw, stream):
        for _ in iter_line_chunks(stream, path.name):
            pass


def decoded_prefix(suffix: str, compressed: bytes) -> bytes:
    """What one decompressor makes of the bytes: everything decodable, without the reader's logic."""
    import bz2
    import lzma
    import zlib

    import zstandard

    decoder: Any = {
        ".gz": lambda: zlib.decompressobj(wbits=zlib.MAX_WBITS | 16),
        ".bz2": bz2.BZ2Decompressor,
        ".xz": lzma.LZMADecompressor,
        ".zst": lambda: zstandard.ZstdDecompressor().decompressobj(),
    }[suffix]()
    return bytes(decoder.decompress(compressed))


def compressed(suffix: str, data: bytes) -> bytes:
    import bz2
    import gzip
    import lzma

    import zstandard

    compress = {
        ".gz": gzip.compress,
        ".bz2": bz2.compress,
        ".xz": lambda data: lzma.compress(data, preset=1),
        ".zst": zstandard.ZstdCompressor().compress,
    }[suffix]
    return bytes(compress(data))


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_truncated_archive_names_the_last_line_really_decoded(tmp_path: Path, suffix: str) -> None:
    from knowref60k.core.errors import UserError

    whole = compressed(suffix, numbered_lines(60_000))  # 3.5 MB of lines, less than one read
    cut = whole[: len(whole) * 7 // 10]
    decoded = decoded_prefix(suffix, cut).count(b"\n")
    assert 10_000 < decoded < 60_000
    path = tmp_path / f"RC_cut.ndjson{suffix}"
    path.write_bytes(cut)
    with pytest.raises(UserError) as caught:
        read_to_the_end(path)
    assert f"RC_cut.ndjson{suffix}: truncated after line {decoded}: the file ends inside" in str(caught.value)


def test_zstd_with_trailing_junk_says_so_after_its_last_line(tmp_path: Path) -> None:
    from knowref60k.core.errors import UserError

    path = tmp_path / "RC_junk.zst"
    path.write_bytes(compressed(".zst", numbered_lines(20_000)) + b"this is not a zstd frame\n" * 10)
    with pytest.raises(UserError) as caught:
        read_to_the_end(path)
    message = str(caught.value)
    assert (
        "RC_junk.zst: trailing data after line 20000: after zstd frame 1 come bytes that are not" in message
    )
    assert "truncated" not in message


# D19: one file given twice ------------------------------------------------------------------------------


def test_prepare_given_one_file_twice_prepares_and_counts_it_once(tmp_path: Path) -> None:
    source, out = candidates(tmp_path), tmp_path / "items"
    other_spelling = tmp_path / "candidates" / ".." / "candidates" / source.name
    result = cli("prepare", str(source), str(other_spelling), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "1 repeated candidates file(s) left out" in result.output
    assert "over 1 file(s)" in result.output and result.output.count("RC_a.candidates.parquet: 3 items") == 1
    assert re.search(r"perturb +│ items +│ +3 │ +3 │", result.output)  # 3 items in the funnel, not 6


def test_prepare_refuses_two_files_that_would_write_the_same_items(tmp_path: Path) -> None:
    first = candidates(tmp_path / "a")
    second = candidates(tmp_path / "b")
    out = tmp_path / "items"
    one_line_error(cli("prepare", str(first), str(second), "--out", str(out)), "RC_a.*", "same items files")
    assert not out.exists()


class RecordingClient:
    """A Label Studio that takes every item offered and holds none yet: what `push` counts without a
    server."""

    def __init__(self, *_: object) -> None:
        import tempfile

        from knowref60k_annotation.settings import Settings

        self.offered: dict[str, list[str]] = {}
        self.settings = Settings("http://127.0.0.1:9", "u", "p", "k", state_dir=Path(tempfile.mkdtemp()))
        self.records = types.SimpleNamespace(tasks_of=lambda _project: {})

    def ensure_project(self, *_: object) -> int:
        return 1

    def keyed(self, text: str) -> bytes:
        return hashlib.sha256(text.encode()).digest()

    def __enter__(self) -> RecordingClient:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def push(self, items: Any, stage: str, *_: object) -> Any:
        from knowref60k_annotation.client import PushReport

        ids = [item["candidate_id"] for item in items]
        self.offered[stage] = ids
        return PushReport(len(ids), 0, len(ids), len(ids))


def test_push_of_one_items_file_twice_offers_each_item_and_its_controls_once(tmp_path: Path) -> None:
    from knowref60k.labelling.config import LabellingConfig
    from knowref60k.labelling.quality import is_control
    from knowref60k_annotation.operations import push_new
    from tests.test_annotate_cli import write_items

    items = write_items(tmp_path / "RC_a.items.parquet", 40)
    link = tmp_path / "link.items.parquet"
    link.symlink_to(items)
    once, twice = RecordingClient(), RecordingClient()
    push_new(once, [items], LabellingConfig())
    push_new(twice, [items, items, link], LabellingConfig())
    assert twice.offered == once.offered
    [offered] = once.offered.values()
    assert len([item for item in offered if not is_control(item)]) == 40 < len(offered)


def test_annotate_push_of_one_file_twice_says_each_item_was_offered_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowref60k_annotation.cli
    import knowref60k_annotation.client
    from tests.test_annotate_cli import write_items

    monkeypatch.setattr(knowref60k_annotation.client, "LabelStudioClient", RecordingClient)
    monkeypatch.setattr(knowref60k_annotation.cli, "load_settings", lambda: None)
    config = tmp_path / "labelling.toml"
    config.write_text("[labelling]\ncontrol_share = 0.0\n")
    items = str(write_items(tmp_path / "RC_a.items.parquet", 40))
    result = cli("annotate", "push", items, items, "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "1 repeated items file(s) left out" in result.output
    assert "screening: 40 tasks offered, 40 imported, 0 already there" in result.output


# D21: no username in a quarantine file --------------------------------------------------------------------


def quarantine_file_of(lines: list[bytes], input_format: str = "ndjson") -> list[dict[str, Any]]:
    """What extraction writes to a quarantine file for these input lines, one record each."""
    import io

    from knowref60k.core.io import write_quarantine
    from knowref60k.core.stats import StageStats
    from knowref60k.ingest.readers import LineChunk, parse_chunk

    _, quarantined = parse_chunk(LineChunk(1, b"\n".join(lines) + b"\n"), input_format, StageStats())
    written = io.BytesIO()
    write_quarantine(written, "RC_x.ndjson", quarantined)
    assert b"secretuser" not in written.getvalue() and b"t2_secret" not in written.getvalue()
    return [orjson.loads(line) for line in written.getvalue().splitlines()]


def test_author_fields_of_any_shape_and_depth_are_redacted_in_the_quarantine() -> None:
    lines = [
        b'{"id": "a", "author": {"name": "secretuser8", "id": "t2_secret"}, "created_utc": 1}',
        b'{"id": "b", "author_fullname": "t2_secret", "author_flair_text": "secretuser8 fan", "body": 5}',
        b'{"id": "c", "Author": ["secretuser8"], "replies": [{"comment_author": "secretuser9"}], "x": 1}',
        b'{"id": "d", "author": "secretuser8", "body": "fine", "created_utc": "yesterday"}',
    ]
    records = quarantine_file_of(lines)
    assert [record["reason"] for record in records] == ["missing_body"] * 3 + ["bad_created_utc"]
    kept = [orjson.loads(record["raw"]) for record in records]
    assert kept[0] == {"id": "a", "author": "<redacted>", "created_utc": 1}
    assert (kept[1]["author_fullname"], kept[1]["author_flair_text"]) == ("<redacted>", "<redacted>")
    assert kept[2] == {
        "id": "c",
        "Author": "<redacted>",
        "replies": [{"comment_author": "<redacted>"}],
        "x": 1,
    }
    assert kept[3]["author"] == "<redacted>" and kept[3]["body"] == "fine"


def test_a_line_that_cannot_be_parsed_keeps_no_raw_text_only_its_size_and_hash() -> None:
    import hashlib

    lines = [
        b"{'author': 'secretuser8', 'body': 'single quotes are not JSON'}",
        b'{"id": "cut", "author": "secretuser8", "body": "cut in the midd',
        b'{"author": {"name": "secretuser8"}, "body": "caf\xe9"}',
        b'["secretuser8", "a list, not an object"]',
    ]
    records = quarantine_file_of(lines)
    assert [record["reason"] for record in records] == [
        "invalid_json",
        "invalid_json",
        "invalid_utf8",
        "not_an_object",
    ]
    for line, record in zip(lines, records, strict=True):
        assert record["raw"] is None and record["bytes"] == len(line)
        assert record["sha256"] == hashlib.sha256(line).hexdigest()


def test_a_text_line_that_is_not_utf8_keeps_no_raw_text() -> None:
    [record] = quarantine_file_of([b"secretuser8 wrote caf\xe9"], "text")
    assert (record["reason"], record["raw"], record["bytes"]) == ("invalid_utf8", None, 22)
