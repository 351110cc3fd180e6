"""Faults and hostile input, each test named after the failure it proves handled: a killed extraction, a
Label Studio that goes down in the middle of a push, lines that used to abort a whole file."""

from __future__ import annotations

import dataclasses
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.extract.extractor import Extractor
from knowref60k.ingest.readers import iter_line_chunks, open_input
from knowref60k.ingest.slicing import write_line_range
from knowref60k.labelling.decisions import RESOLUTION
from knowref60k.settings.effective import RunConfig
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.server import Server
from tests.conftest import REPO, shared_file, wait_for
from tests.test_annotation import item
from tests.test_extract import GOOD

# Candidates of the 120,000 comments with the default person detection, the score.
ROWS_120K = 51


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


@pytest.fixture(scope="module")
def dump_120k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120,000 real comments and 60 unparseable lines among them, read by the tests that stop an
    extraction half-way (they only read it)."""
    dump = tmp_path_factory.mktemp("dump") / "RC_sample_120k.ndjson"
    assert dump_with_bad_lines(dump, 120_000, every=2_000) == 60
    return dump


@pytest.mark.integration
def test_sigkill_in_the_middle_of_extraction_then_rerun_loses_and_duplicates_nothing(
    tmp_path: Path, dump_120k: Path
) -> None:
    dump = dump_120k
    with Extractor(ExtractConfig(), workers=2) as extractor:
        reference = extractor.extract_file(dump, tmp_path / "uninterrupted")
    assert reference.stats.quarantined == 60
    whole_quarantine = reference.quarantine_path.stat().st_size
    out = tmp_path / "killed"
    partial_quarantine = out / ".RC_sample_120k.quarantine.jsonl.partial"
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
    # Hidden files only: the .partial outputs, and the lock file of the killed run (its lock died with it).
    assert left and all(name.startswith(".") and name.endswith((".partial", ".lock")) for name in left), left
    with Extractor(ExtractConfig(), workers=2) as extractor:
        rerun = extractor.extract_file(dump, out)
    assert not rerun.skipped and rerun.rows == reference.rows == ROWS_120K
    assert rerun.rows_path.read_bytes() == reference.rows_path.read_bytes()
    assert rerun.quarantine_path.read_bytes() == reference.quarantine_path.read_bytes()
    assert not list(out.glob(".*"))


@pytest.mark.integration
def test_label_studio_stopped_during_a_push_then_resumed_without_duplicates(own_label_studio: Server) -> None:
    # Its SQLite database holds annotators' logins and work: only the owner may read the folder.
    assert stat.S_IMODE(own_label_studio.data_dir.stat().st_mode) == 0o700
    settings = dataclasses.replace(own_label_studio.settings, project="fault test")
    items = [item(n) for n in range(2_000)]
    failures: list[Exception] = []
    imported, stopped = threading.Event(), threading.Event()

    def push() -> None:
        try:
            with LabelStudioClient(settings) as client:
                import_batch = client.import_tasks

                def counted(project: int, stage: str, rows: list[Any], seed: int) -> int:
                    done = import_batch(project, stage, rows, seed)
                    imported.set()  # a batch is in: the next one meets the stopped server
                    stopped.wait(timeout=300)
                    return done

                client.import_tasks = counted  # type: ignore[method-assign]
                client.push(items, RESOLUTION, 5, seed=0, batch_size=100)
        except UserError as error:
            failures.append(error)

    with LabelStudioClient(settings) as client:
        client.ensure_project(RESOLUTION, 5)
    pusher = threading.Thread(target=push)
    pusher.start()
    assert imported.wait(timeout=300), "the push imported nothing"
    own_label_studio.stop()
    stopped.set()
    pusher.join(timeout=300)
    assert not pusher.is_alive() and failures and "not reachable" in str(failures[0])
    own_label_studio.start()
    with LabelStudioClient(settings) as client:
        before = len(client.export(client.existing_project(RESOLUTION)))
        assert 100 <= before < len(items)
        report = client.push(items, RESOLUTION, 5, seed=0, batch_size=1000)
        exported = client.export(client.existing_project(RESOLUTION))
    assert report.pushed == len(items) - before
    ids = [task["data"]["item_id"] for task in exported]
    assert len(ids) == len(set(ids)) == len(items)


def ndjson_line(body: str, created_utc: object, comment_id: str) -> bytes:
    return orjson.dumps({"id": comment_id, "author": "u", "body": body, "created_utc": created_utc})


@pytest.mark.integration
def test_created_utc_out_of_range_is_quarantined_not_fatal(tmp_path: Path) -> None:
    lines = [
        b'{"id": "inf", "body": "x", "created_utc": "inf"}',
        ndjson_line(GOOD, 1e20, "huge"),
        ndjson_line(GOOD, 2**63, "over"),
        ndjson_line(GOOD, "nan", "nan"),
        ndjson_line(GOOD, 1_500_000_000, "fine"),
    ]
    source = tmp_path / "RC_times.ndjson"
    source.write_bytes(b"\n".join(lines) + b"\n")
    with Extractor(ExtractConfig(), workers=1) as extractor:
        report = extractor.extract_file(source, tmp_path / "out")
    quarantined = [orjson.loads(line) for line in report.quarantine_path.read_bytes().splitlines()]
    assert [(q["line_number"], q["reason"]) for q in quarantined] == [
        (n, "bad_created_utc") for n in (1, 2, 3, 4)
    ]
    rows = pq.read_table(report.rows_path).to_pylist()
    assert [(row["comment_id"], row["created_utc"]) for row in rows] == [("fine", 1_500_000_000)]


@pytest.mark.integration
@pytest.mark.parametrize("input_format", ["ndjson", "text"])
def test_body_longer_than_spacy_max_length_is_read_in_pieces(tmp_path: Path, input_format: str) -> None:
    filler = "This sentence is only here to make the comment very long indeed. " * 16_000
    body = f"{filler}{GOOD} {filler}"
    assert len(body) > 2_000_000
    source = tmp_path / f"RC_long.{'ndjson' if input_format == 'ndjson' else 'txt'}"
    source.write_bytes(
        ndjson_line(body, 1, "long") + b"\n" if input_format == "ndjson" else body.encode() + b"\n"
    )
    with Extractor(ExtractConfig(), workers=1) as extractor:
        report = extractor.extract_file(source, tmp_path / "out", input_format)
    assert report.stats.quarantined == 0
    rows = pq.read_table(report.rows_path).to_pylist()
    assert [row["sentence"] for row in rows] == [GOOD]


@pytest.mark.integration
def test_utf8_byte_order_mark_does_not_quarantine_the_first_record(tmp_path: Path) -> None:
    source = tmp_path / "RC_bom.ndjson"
    source.write_bytes(
        b"\xef\xbb\xbf" + ndjson_line(GOOD, 1, "first") + b"\n" + ndjson_line("fine", 2, "x") + b"\n"
    )
    with Extractor(ExtractConfig(), workers=1) as extractor:
        report = extractor.extract_file(source, tmp_path / "out")
    assert report.stats.quarantined == 0
    assert [row["comment_id"] for row in pq.read_table(report.rows_path).to_pylist()] == ["first"]


@pytest.mark.integration
def test_nul_and_del_characters_never_reach_a_candidate(tmp_path: Path) -> None:
    body = GOOD.replace("portrait", "port\x00rait").replace("every", "ev\x7fery\x1b")
    source = tmp_path / "RC_control.ndjson"
    source.write_bytes(ndjson_line(body, 1, "ctl") + b"\n")
    with Extractor(ExtractConfig(), workers=1) as extractor:
        report = extractor.extract_file(source, tmp_path / "out")
    assert [row["sentence"] for row in pq.read_table(report.rows_path).to_pylist()] == [GOOD]


def test_two_inputs_with_the_same_file_name_are_refused_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    inputs = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        inputs.append(tmp_path / folder / "RC_same.ndjson")
        inputs[-1].write_bytes(ndjson_line(GOOD, 1, folder) + b"\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["extract", *map(str, inputs), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert "same output files" in result.output and "RC_same.*" in result.output
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize("name", ["RC_empty.zst", "RC_empty.ndjson.gz", "RC_empty.bz2", "RC_empty.xz"])
def test_zero_byte_compressed_dump_is_an_error_not_an_empty_dump(tmp_path: Path, name: str) -> None:
    empty = tmp_path / name
    empty.touch()
    with (
        pytest.raises(UserError, match="compressed file is empty"),
        Extractor(ExtractConfig(), workers=1) as extractor,
    ):
        extractor.extract_file(empty, tmp_path / "out")


def test_prepare_quarantines_candidates_whose_spans_do_not_fit_the_sentence(tmp_path: Path) -> None:
    from knowref60k.prepare.preparer import Preparer
    from tests.test_prepare import candidates_file, handmade

    sentence = "Paul met Mary on the first day, but she left early."
    good = handmade(sentence, "Paul", "Mary", "she", "female", "good")
    broken = {
        "past_the_end": ({"antecedent1_start": 60, "antecedent1_end": 64}, "span_outside_sentence"),
        "start_after_end": ({"antecedent1_start": 4, "antecedent1_end": 0}, "span_outside_sentence"),
        "negative": ({"antecedent2_start": -3}, "span_outside_sentence"),
        "pronoun_at_900": ({"pronoun_start": 900, "pronoun_end": 903}, "span_outside_sentence"),
        "overlap": (
            {"antecedent2": "Paul", "antecedent2_start": 0, "antecedent2_end": 4},
            "spans_out_of_order",
        ),
        "text_differs": ({"antecedent1": "Pete"}, "span_text_mismatch"),
        "other_gender": ({"pronoun_gender": "other"}, "pronoun_gender_mismatch"),
    }
    rows = [good, *({**good, **change, "candidate_id": name} for name, (change, _) in broken.items())]
    source = candidates_file(tmp_path / "c" / "RC_bad.candidates.parquet", rows)
    with Preparer(RunConfig.load().prepare, tmp_path / "index.sqlite") as preparer:
        report = preparer.prepare_file(source, tmp_path / "items")
    assert report.rows == 1 and report.stats.quarantined == len(broken)
    assert report.quarantine_path is not None
    quarantined = [orjson.loads(line) for line in report.quarantine_path.read_bytes().splitlines()]
    assert [(orjson.loads(q["raw"])["candidate_id"], q["reason"]) for q in quarantined] == [
        (name, reason) for name, (_, reason) in broken.items()
    ]
    assert [q["line_number"] for q in quarantined] == list(range(2, 2 + len(broken)))


def cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    return CliRunner().invoke(app, list(args))


def one_comment(tmp_path: Path) -> Path:
    source = tmp_path / "RC_one.ndjson"
    source.write_bytes(ndjson_line(GOOD, 1, "one") + b"\n")
    return source


def test_cli_reads_the_model_from_the_config_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "k.toml"
    config.write_text('[extract]\nmodel = "nope_from_file_sm"\n')
    source = one_comment(tmp_path)
    result = cli("extract", str(source), "--out", str(tmp_path / "o"), "--config", str(config))
    unwrapped = "".join(result.output.split())  # however the console wrapped the long path
    assert result.exit_code == 2 and f"in{config}:model'nope_from_file_sm'isnoinstalled" in unwrapped
    monkeypatch.setenv("KNOWREF60K_SPACY_MODEL", "nope_from_env_sm")
    result = cli("extract", str(source), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "'nope_from_env_sm' is not installed" in result.output


@pytest.mark.integration
def test_cli_reads_extract_and_prepare_settings_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "k.toml"
    config.write_text('[extract]\nmax_connectives = 2\nperson_detection = "names"\n\n[prepare]\nseed = 7\n')
    source = one_comment(tmp_path)
    out = tmp_path / "o"
    result = cli("extract", str(source), "--out", str(out), "--config", str(config), "--workers", "1")
    assert result.exit_code == 0, result.output
    stats = orjson.loads((out / "RC_one.stats.json").read_bytes())
    assert (stats["config"]["max_connectives"], stats["config"]["person_detection"]) == (2, "names")
    items = tmp_path / "items"
    candidates = str(out / "RC_one.candidates.parquet")
    result = cli("prepare", candidates, "--out", str(items), "--config", str(config))
    assert result.exit_code == 0, result.output
    assert orjson.loads((items / "RC_one.prepare.json").read_bytes())["config"]["seed"] == 7


def test_wrong_typed_settings_are_one_clear_line_each(tmp_path: Path) -> None:
    config = tmp_path / "k.toml"
    config.write_text(
        '[extract]\nmax_connectives = "two"\nperson_detection = 1\nmodel = 5\n'
        'min_spaces = "3"\nconnectives = 5\n'
    )
    result = cli("extract", str(one_comment(tmp_path)), "--out", str(tmp_path / "o"), "--config", str(config))
    assert result.exit_code == 2 and "Traceback" not in result.output
    for line in (
        "max_connectives must be a whole number, not 'two'",
        "person_detection must be a string, not 1",
        "model must be a string, not 5",
        "min_spaces must be a whole number, not '3'",
        "connectives must be a list of strings, not 5",
    ):
        assert line in result.output


def test_square_brackets_in_messages_paths_and_help_are_printed_as_they_are(tmp_path: Path) -> None:
    not_a_table = tmp_path / "nottable.toml"
    not_a_table.write_text("extract = 3\n")
    result = cli(
        "extract", str(one_comment(tmp_path)), "--out", str(tmp_path / "o"), "--config", str(not_a_table)
    )
    assert result.exit_code == 2 and "[extract] must be a table" in result.output
    folder = tmp_path / "[bold]dumps"
    folder.mkdir()
    result = cli("extract", str(folder / "RC_missing.zst"), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "[bold]dumps" in result.output.replace("\n", "")
    assert "this command reads its [extract] table" in " ".join(cli("extract", "--help").output.split())


@pytest.mark.integration
def test_quarantine_keeps_no_username(tmp_path: Path) -> None:
    source = tmp_path / "RC_authors.ndjson"
    source.write_bytes(
        b'{"id": "a", "author": "secret_user_1", "author_fullname": "t2_xyz", "created_utc": 1}\n'
        b'{"id": "b", "author": "secret_user_2", "body": "cut in the midd\n'
    )
    with Extractor(ExtractConfig(), workers=1) as extractor:
        report = extractor.extract_file(source, tmp_path / "out")
    text = report.quarantine_path.read_text()
    # The first line's two author fields redacted; the second, cut short, is not kept at all.
    assert report.stats.quarantined == 2 and text.count("<redacted>") == 2
    assert "secret_user" not in text and "t2_xyz" not in text


def test_private_folders_are_made_owner_only_even_when_they_exist(tmp_path: Path) -> None:
    from knowref60k.core.io import private_dir

    folder = tmp_path / "labelstudio" / "data"
    folder.mkdir(parents=True, mode=0o755)
    assert private_dir(folder) == folder and stat.S_IMODE(folder.stat().st_mode) == 0o700


def process_group(pgid: int) -> list[int]:
    """Live processes of a process group, from /proc (zombies aside)."""
    members = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat_file.parent.name))
    return members


def start_extraction(dump: Path, out: Path) -> subprocess.Popen[str]:
    cli_path = Path(sys.executable).parent / "knowref60k"
    return subprocess.Popen(
        [str(cli_path), "extract", str(dump), "--out", str(out), "--workers", "2"],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stopped_cleanly(process: subprocess.Popen[str], out: Path) -> str:
    """The process's output once it and every process it started have gone (the bounds only stop a
    hang)."""
    try:
        output, _ = process.communicate(timeout=300)
        wait_for(lambda: not process_group(process.pid), 120, "the workers to stop")
    finally:
        if process_group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0
    assert "Traceback" not in output, output
    assert not out.exists() or not [p.name for p in out.iterdir() if p.name.endswith(".partial")]
    return output


@pytest.mark.integration
def test_sigterm_in_the_middle_of_extraction_stops_the_workers_and_says_so(
    tmp_path: Path, dump_120k: Path
) -> None:
    dump = dump_120k
    out = tmp_path / "out"
    partial_quarantine = out / ".RC_sample_120k.quarantine.jsonl.partial"
    process = start_extraction(dump, out)
    try:
        # The first block the buffered quarantine file writes: 8 KB, about 33 of its 60 records (a line
        # that cannot be parsed is recorded without its text, in some 250 bytes).
        wait_for(
            lambda: partial_quarantine.exists() and partial_quarantine.stat().st_size >= 8_000,
            300,
            "extraction to be under way",
        )
        assert process.poll() is None and len(process_group(process.pid)) >= 3  # the parent and 2 workers
        os.kill(process.pid, signal.SIGTERM)  # to the main process only, as Prefect or Docker do
    finally:
        output = stopped_cleanly(process, out)
    assert "interrupted (SIGTERM)" in output
    with Extractor(ExtractConfig(), workers=2) as extractor:
        rerun = extractor.extract_file(dump, out)
    assert not rerun.skipped and rerun.stats.quarantined == 60


@pytest.mark.integration
def test_ctrl_c_while_the_workers_start_prints_no_traceback(tmp_path: Path) -> None:
    dump = tmp_path / "RC_small.ndjson"
    dump.write_bytes(ndjson_line(GOOD, 1, "one") + b"\n")
    process = start_extraction(dump, tmp_path / "out")
    try:
        # Both workers spawned, their model not yet loaded (no output file yet).
        wait_for(lambda: len(process_group(process.pid)) >= 3, 60, "the workers to start")
        os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group
    finally:
        output = stopped_cleanly(process, tmp_path / "out")
    assert "interrupted (SIGINT)" in output


def test_out_that_is_an_existing_file_is_a_clear_error(tmp_path: Path) -> None:
    a_file = tmp_path / "out.txt"
    a_file.write_text("not a folder")
    source = one_comment(tmp_path)
    prepare = ["prepare", str(tmp_path / "RC_one.candidates.parquet"), "--index", str(tmp_path / "i.sqlite")]
    for command in (["extract", str(source)], prepare):
        result = cli(*command, "--out", str(a_file))
        assert result.exit_code == 2, result.output
        assert "is a file, not a folder" in result.output and "Traceback" not in result.output


def test_config_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "latin1.toml"
    config.write_bytes("[extract]\n# café\nmax_connectives = 1\n".encode("latin-1"))
    result = cli("extract", str(one_comment(tmp_path)), "--out", str(tmp_path / "o"), "--config", str(config))
    assert result.exit_code == 2 and "not UTF-8 text" in result.output and "Traceback" not in result.output


def test_corrupt_dedup_index_is_a_clear_error(tmp_path: Path) -> None:
    from tests.test_prepare import candidates_file, handmade

    sentence = "Paul met Mary on the first day, but she left early."
    source = candidates_file(
        tmp_path / "RC_a.candidates.parquet", [handmade(sentence, "Paul", "Mary", "she", "female")]
    )
    index = tmp_path / "index.sqlite"
    index.write_bytes(b"this is not a database" * 100)
    result = cli("prepare", str(source), "--out", str(tmp_path / "items"), "--index", str(index))
    assert result.exit_code == 2 and "not a usable de-duplication index" in result.output
    assert "Traceback" not in result.output


def release_args(run: Path, votes: Path, out: Path) -> list[str]:
    return ["release", "--run", str(run), "--votes", str(votes), "--out", str(out), "--version", "v1"]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncated", "not a Parquet file"),
        ("choice", "not a votes file, missing columns choice"),
        ("simulated", "not a votes file, missing columns simulated"),
        ("stage", "not a votes file, missing columns stage"),
    ],
)
def test_unreadable_votes_are_a_clear_error(tmp_path: Path, damage: str, message: str) -> None:
    from tests.test_release import synthetic_run

    run = synthetic_run(tmp_path / "run", {"t3_a": 2})
    votes = run / "votes.parquet"
    if damage == "truncated":
        votes.write_bytes(votes.read_bytes()[:200])
    else:  # a column left out
        pq.write_table(pq.read_table(votes).drop_columns([damage]), votes)
    result = cli(*release_args(run, votes, tmp_path / "r"))
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_bad_votes_are_left_out_and_counted_by_reason(tmp_path: Path) -> None:
    import pyarrow as pa

    from knowref60k_annotation.votes import VOTE_SCHEMA
    from tests.test_release import synthetic_run

    run = synthetic_run(tmp_path / "run", {"t3_a": 2})
    votes = pq.read_table(run / "votes.parquet").to_pylist()
    extra = dict(votes[0], annotation_id=9_000)
    bad = [
        dict(extra, choice="maybe"),
        dict(extra, choice=None),
        dict(extra, annotator_id=None),
        dict(extra, updated_at=None),
        dict(extra, item_id="no-such-item"),
        dict(extra, stage="review"),
        dict(extra, stage="screening"),  # a resolution answer is no screening answer
    ]
    nullable = pa.schema([field.with_nullable(True) for field in VOTE_SCHEMA])
    pq.write_table(pa.Table.from_pylist(votes + bad, schema=nullable), run / "votes.parquet")
    result = cli(*release_args(run, run / "votes.parquet", tmp_path / "r"))
    assert result.exit_code == 0, result.output
    manifest = orjson.loads((tmp_path / "r" / "v1" / "manifest.json").read_bytes())
    assert manifest["rejected_votes"] == {
        "no_annotation_time_or_id": 1,
        "no_annotator": 1,
        "unknown_choice": 3,
        "unknown_item": 1,
        "unknown_stage": 1,
    }
    assert manifest["agreement"]["items"] == {"kept": 2}  # 5 good votes each; no sixth annotator
    assert "votes left out" in result.output


def test_no_votes_at_all_give_kappa_not_available_not_nan(tmp_path: Path) -> None:
    import pyarrow as pa

    from knowref60k_annotation.votes import VOTE_SCHEMA
    from tests.test_release import synthetic_run

    run = synthetic_run(tmp_path / "run", {"t3_a": 2})
    pq.write_table(pa.Table.from_pylist([], schema=VOTE_SCHEMA), run / "votes.parquet")
    result = cli(*release_args(run, run / "votes.parquet", tmp_path / "r"))
    assert result.exit_code == 0, result.output
    assert "kappa n/a" in result.output and "nan" not in result.output
    manifest = orjson.loads((tmp_path / "r" / "v1" / "manifest.json").read_bytes())
    assert manifest["agreement"]["fleiss_kappa"] is None


@pytest.mark.parametrize("content", [b"{not json", b'{"name": "knowref60k"}', b"[1, 2]"])
def test_malformed_release_manifest_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    from knowref60k.release.load import load_release

    (tmp_path / "manifest.json").write_bytes(content)
    result = cli("stats", str(tmp_path))
    assert result.exit_code == 2 and "manifest.json" in result.output and "Traceback" not in result.output
    with pytest.raises(UserError, match=r"manifest\.json"):
        load_release(tmp_path, "train")


def two_frame_dump(path: Path, first: list[bytes], second: list[bytes]) -> bytes:
    """A Pushshift-style .zst of two frames; returns the bytes of the first frame alone."""
    import zstandard

    compressor = zstandard.ZstdCompressor()
    frame_one = compressor.compress(b"".join(line + b"\n" for line in first))
    path.write_bytes(frame_one + compressor.compress(b"".join(line + b"\n" for line in second)))
    return frame_one


@pytest.mark.integration
def test_dump_completeness_is_reported_in_the_stats(tmp_path: Path) -> None:
    lines = [ndjson_line(f"Comment number {n} is here.", n, f"c{n}") for n in range(10)]
    whole = tmp_path / "RC_whole.zst"
    first_frame = two_frame_dump(whole, lines[:5], lines[5:])
    cut_between_frames = tmp_path / "RC_cut.zst"
    cut_between_frames.write_bytes(first_frame)
    cut_in_a_line = tmp_path / "RC_cut_line.ndjson"
    cut_in_a_line.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:20])
    with Extractor(ExtractConfig(), workers=1) as extractor:
        reports = {
            p.name: extractor.extract_file(p, tmp_path / "out")
            for p in (whole, cut_between_frames, cut_in_a_line)
        }
    inputs = {name: orjson.loads(r.report_path.read_bytes())["input"] for name, r in reports.items()}
    assert inputs["RC_whole.zst"]["zstd_frames"] == 2 and inputs["RC_whole.zst"]["lines"] == 10
    assert inputs["RC_whole.zst"]["complete"].startswith("probably: 2 whole zstd frames")
    assert inputs["RC_cut.zst"]["zstd_frames"] == 1 and inputs["RC_cut.zst"]["lines"] == 5
    line_cut = inputs["RC_cut_line.ndjson"]
    assert (line_cut["lines"], line_cut["ends_with_newline"]) == (4, False)
    assert line_cut["complete"].startswith("suspect")


def test_ledger_records_completeness_and_upgrades_an_old_ledger(tmp_path: Path) -> None:
    import sqlite3

    from knowref60k.ingest.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE dumps (file TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
        "sha256 TEXT NOT NULL, config_hash TEXT NOT NULL, started TEXT NOT NULL, finished TEXT, "
        "outcome TEXT NOT NULL, error TEXT, PRIMARY KEY (file, sha256, config_hash))"
    )
    old.commit()
    old.close()
    dump_file = tmp_path / "RC_x.ndjson"
    dump_file.write_bytes(b"{}\n")
    ledger = Ledger(path)
    dump = ledger.identify(dump_file)
    ledger.start(dump, "cfg")
    ledger.finish(dump, "cfg", input_check="suspect: the last line has no newline")
    [entry] = ledger.entries()
    ledger.close()
    assert (entry["outcome"], entry["input_check"]) == ("done", "suspect: the last line has no newline")
