"""Hostile input to the command line: each test names the mistake it proves refused in one line
`error: ...` with exit code 2, never a traceback nor a silent default."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from knowref60k.cli.app import app
from knowref60k.core.errors import UserError

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def assert_one_line_error(result: Result, *fragments: str) -> str:
    """The command ended with exit code 2 and one line `error: ...` holding every fragment."""
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def one_comment(tmp_path: Path) -> Path:
    source = tmp_path / "RC_one.ndjson"
    source.write_text('{"id": "one", "body": "Anna met Beth, but she left.", "created_utc": 1}\n')
    return source


def extract_with(tmp_path: Path, *options: str) -> Result:
    """`extract` of one comment; a model that is not installed ends it before any spaCy work, should the
    options be accepted."""
    source = one_comment(tmp_path)
    return cli("extract", str(source), "--out", str(tmp_path / "o"), "--model", "nope_sm", *options)


# D6: a misspelt table, or settings above every table header, used to be ignored (defaults, exit 0).
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[Extract]\nmax_connectives = 2\n", "unknown table [Extract] (line 1; did you mean [extract]?)"),
        ("# mine\n\n[extrakt]\nmax_connectives = 2\n", "unknown table [extrakt] (line 3;"),
        ("max_connectives = 2\n", "setting max_connectives (line 1) is outside any table"),
        (
            "[extract]\nmax_connectives = 2\n\n[[labeling]]\nvotes_per_item = 3\n",
            "unknown table [labeling] (line 4; did you mean [labelling]?)",
        ),
    ],
)
def test_misspelt_config_table_or_key_outside_a_table_is_refused(
    tmp_path: Path, text: str, problem: str
) -> None:
    config = tmp_path / "k.toml"
    config.write_text(text)
    assert_one_line_error(
        extract_with(tmp_path, "--config", str(config)),
        f"{config}: {problem}",
        "known tables: [extract], [prepare], [labelling], [cost], [labelstudio]",
    )


def _with_labelstudio_config(path: Path) -> Any:
    from knowref60k_annotation.settings import Settings, with_config

    return with_config(Settings("http://127.0.0.1:1", "u", "p", "k"), path)


def _loaders() -> list[Callable[[Path], Any]]:
    from knowref60k.core.config import load_config, load_prepare_config
    from knowref60k.labelling.config import load_labelling_config

    return [load_config, load_prepare_config, load_labelling_config, _with_labelstudio_config]


@pytest.mark.parametrize("loader", range(4), ids=["extract", "prepare", "labelling", "labelstudio"])
def test_every_config_loader_refuses_an_unknown_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: int
) -> None:
    monkeypatch.delenv("KNOWREF60K_LABELSTUDIO_DATABASE", raising=False)
    config = tmp_path / "k.toml"
    config.write_text("[extract]\n[prepare]\n[labelling]\n[labelstudio]\n[overlap]\n")
    with pytest.raises(UserError, match=r"k\.toml: unknown table \[overlap\] \(line 5\)"):
        _loaders()[loader](config)


def test_the_one_list_of_config_tables_is_the_example_configs_tables() -> None:
    from knowref60k.core.config import CONFIG_TABLES

    example = REPO / "config.example.toml"
    assert set(tomllib.loads(example.read_text())) == set(CONFIG_TABLES)
    for load in _loaders():
        load(example)  # no table of the documented example is refused


def release_into(tmp_path: Path, out: Path, *options: str) -> Result:
    """`release` of a synthetic pipeline folder (two items of one thread, five votes each) into OUT."""
    from tests.test_release import synthetic_run

    run = tmp_path / "run"
    if not run.exists():
        synthetic_run(run, {"t3_a": 2})
    return cli(
        "release", "--run", str(run), "--votes", str(run / "votes.parquet"), "--out", str(out), *options
    )


# D7: the version names a folder inside --out, and used to be able to name any other folder.
@pytest.mark.parametrize("version", ["../../escape", "{tmp}/escape", "a/b", "", ".hidden", "v1\n"])
def test_release_version_that_is_not_a_plain_name_is_refused_and_writes_nothing(
    tmp_path: Path, version: str
) -> None:
    from knowref60k.release.build import check_version

    version = version.format(tmp=tmp_path)  # an absolute path, inside this test's folder
    out = tmp_path / "deep" / "releases"
    result = release_into(tmp_path, out, "--version", version)
    assert_one_line_error(result, f"release version {version!r} is not a plain name")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]
    assert check_version("v2026.11-rc_1") == "v2026.11-rc_1"  # letters, digits, '.', '_', '-' are plain


# D12: an existing file given as the output folder used to end in NotADirectoryError or FileExistsError.
@pytest.mark.parametrize("below", [False, True], ids=["the-file", "a-folder-in-the-file"])
@pytest.mark.parametrize("command", ["release", "annotate collect", "overlap index"])
def test_output_folder_that_is_an_existing_file_is_refused_in_one_line(
    tmp_path: Path, command: str, below: bool
) -> None:
    a_file = tmp_path / "taken.txt"
    a_file.write_text("not a folder")
    out = a_file / "sub" if below else a_file
    if command == "release":
        result, option = release_into(tmp_path, out, "--version", "v1"), "--out"
    elif command == "annotate collect":
        result, option = cli("annotate", "collect", "--out", str(out)), "--out"
    else:
        corpus = tmp_path / "corpus.txt"
        corpus.write_text("Anna met Beth, but she left.\n")
        result = cli("overlap", "index", str(corpus), "--index", str(out), "--model", "nope_sm")
        option = "--index"
    where = f" ({a_file})" if below else ""
    assert_one_line_error(result, f"{option} {out}{where} is a file, not a folder")
    assert a_file.read_text() == "not a folder"


# D13: 99999999999999999999 workers ended in an OverflowError, and workers far above the cores were
# all started (24 on 2 cores took 10 GB); --workers 0 printed click's usage block (D17).
@pytest.mark.parametrize("workers", ["99999999999999999999", "1025", "0", "-3"])
@pytest.mark.parametrize("command", ["extract", "overlap index"])
def test_absurd_or_too_few_workers_are_refused_in_one_line(
    tmp_path: Path, command: str, workers: str
) -> None:
    if command == "extract":
        result = extract_with(tmp_path, "--workers", workers)
    else:
        source = one_comment(tmp_path)
        index = str(tmp_path / "index")
        result = cli(
            "overlap", "index", str(source), "--index", index, "--model", "nope_sm", "--workers", workers
        )
    assert_one_line_error(result, f"--workers must be a whole number from 1 to 1024, not {workers}")


def test_workers_above_the_cpu_cores_are_capped_at_the_cores_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from knowref60k.core import parallel
    from knowref60k.extract import extractor

    started: list[int] = []

    def recording_extractor(settings: Any, workers: int) -> Any:
        started.append(workers)
        raise UserError("stopped before any work")

    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.setattr(extractor, "Extractor", recording_extractor)
    assert_one_line_error(extract_with(tmp_path, "--workers", "24"), "stopped before any work")
    assert started == [2]
    assert "--workers 24 is more than the 2 CPU cores here: starting 2" in caplog.text
    assert parallel.worker_count(2) == 2 and parallel.worker_count(1) == 1


def test_flows_workers_option_is_checked_and_capped_like_the_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--workers` of `run` and `flow scale` is checked and capped as `extract`'s, before a dump is read."""
    from knowref60k.core import parallel
    from knowref60k_flows.cli import workers_checked

    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    assert (workers_checked(1), workers_checked(24)) == (1, 2)
    dump = str(tmp_path / "RC_1999-01.zst")
    for command in (["run", dump, "--out", str(tmp_path / "o")], ["flow", "scale", dump]):
        for absurd in ("0", "99999999999999999999"):
            assert_one_line_error(cli(*command, "--workers", absurd), "--workers must be a whole number")
        assert_one_line_error(cli(*command, "--workers", "two"), "'--workers'", "integer")
    assert not (tmp_path / "o").exists()


# D15: a dump in a compression no decoder reads was read as NDJSON of its compressed bytes: exit 0,
# "0 candidates".
@pytest.mark.parametrize(
    "name", ["RC_z.zip", "RC_z.7z", "RC_z.rar", "RC_z.lz4", "RC_z.ndjson.Z", "RC_z.tar.gz"]
)
def test_dump_in_a_compression_that_cannot_be_read_is_refused(tmp_path: Path, name: str) -> None:
    import zipfile

    dump = tmp_path / name
    with zipfile.ZipFile(dump, "w") as archive:
        archive.writestr("RC_z.ndjson", one_comment(tmp_path).read_bytes())
    suffix = ".tar" if name.endswith(".tar.gz") else Path(name).suffix.lower()
    assert_one_line_error(
        cli("extract", str(dump), "--out", str(tmp_path / "o"), "--model", "nope_sm"),
        f"{dump}: {suffix} files cannot be read; compress with zstd (.zst), gzip (.gz), bzip2 (.bz2) or xz",
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", ["zstd", "gzip", "bzip2", "xz", "zip"])
def test_compressed_content_under_a_plain_name_is_refused_not_misread(tmp_path: Path, kind: str) -> None:
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    import zstandard

    text = one_comment(tmp_path).read_bytes()
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("RC_one.ndjson", text)
    compress = {
        "zstd": zstandard.ZstdCompressor().compress,
        "gzip": gzip.compress,
        "bzip2": bz2.compress,
        "xz": lzma.compress,
        "zip": lambda _: zipped.getvalue(),
    }[kind]
    dump = tmp_path / "RC_renamed.ndjson"
    dump.write_bytes(compress(text))
    assert_one_line_error(
        cli("extract", str(dump), "--out", str(tmp_path / "o"), "--model", "nope_sm"),
        f"{dump}: the content is {kind}-compressed, which the name does not say",
    )


# D17: errors that did not name the config file, or were not one line.
def test_config_value_refused_by_the_settings_as_a_whole_names_the_file_unless_an_option_caused_it(
    tmp_path: Path,
) -> None:
    config = tmp_path / "k.toml"
    config.write_text("[extract]\nmin_spaces = -5\nmax_spaces = 2\n")
    assert_one_line_error(
        extract_with(tmp_path, "--config", str(config)),
        f"error: invalid setting in {config}: need 0 <= min_spaces <= max_spaces, got -5, 2",
    )
    rules = tmp_path / "rules.toml"
    rules.write_text("[labelling]\nkeep_at_least = 6\n")
    assert_one_line_error(
        release_into(tmp_path, tmp_path / "r", "--version", "v1", "--config", str(rules)),
        f"error: invalid setting in {rules}: keep-at-least must be more than half of votes-per-item",
    )
    rules.write_text("[labelling]\nkeep_at_least = 3\n")
    result = release_into(
        tmp_path, tmp_path / "r", "--version", "v1", "--config", str(rules), "--keep-at-least", "9"
    )
    assert str(rules) not in assert_one_line_error(result, "error: keep-at-least must be more than half")


def test_config_value_that_is_none_of_its_choices_names_the_file_with_every_other_problem(
    tmp_path: Path,
) -> None:
    config = tmp_path / "k.toml"
    config.write_text('[extract]\nperson_detection = "nerr"\n')
    assert_one_line_error(
        extract_with(tmp_path, "--config", str(config)),
        f"error: invalid setting in {config}: "
        "person_detection must be one of ner, names, both, score, not 'nerr'",
    )
    config.write_text(
        '[extract]\nperson_detection = "nerr"\nantecedent_rule = "two"\nmax_connectives = "x"\n'
    )
    result = extract_with(tmp_path, "--config", str(config))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.splitlines() == [
        f"error: invalid setting(s) in {config}:",
        "  person_detection must be one of ner, names, both, score, not 'nerr'",
        "  antecedent_rule must be one of two_noun_phrases, two_persons, not 'two'",
        "  max_connectives must be a whole number, not 'x'",
    ]
    rules = tmp_path / "rules.toml"
    rules.write_text('[labelling]\noverlap_policy = "most"\n')
    assert_one_line_error(
        release_into(tmp_path, tmp_path / "r", "--version", "v1", "--config", str(rules)),
        f"error: invalid setting in {rules}: overlap_policy must be one of fewest, agreeing, not 'most'",
    )


def test_config_path_that_is_a_folder_is_called_a_folder_not_missing(tmp_path: Path) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    assert_one_line_error(
        extract_with(tmp_path, "--config", str(folder)),
        f"error: config file is a folder, not a file: {folder}",
    )


@pytest.mark.parametrize("kind", ["symlink loop", "dangling symlink", "fifo", "folder"])
def test_input_that_is_no_readable_file_says_what_it_is(tmp_path: Path, kind: str) -> None:

    dump = tmp_path / "RC_odd.ndjson"
    if kind == "symlink loop":
        dump.symlink_to(tmp_path / "RC_other.ndjson")
        (tmp_path / "RC_other.ndjson").symlink_to(dump)
        problem = f"input file is a symlink loop: {dump}"
    elif kind == "dangling symlink":
        dump.symlink_to(tmp_path / "gone.ndjson")
        problem = (
            f"input file not found: {dump} is a symlink to {tmp_path / 'gone.ndjson'}, which does not exist"
        )
    elif kind == "fifo":
        os.mkfifo(dump)  # opening it would wait for a writer forever
        problem = f"input file is not a regular file: {dump}"
    else:
        dump.mkdir()
        problem = f"input file is a folder, not a file: {dump}"
    assert_one_line_error(cli("extract", str(dump), "--out", str(tmp_path / "o")), f"error: {problem}")


def test_unreadable_input_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's own check (os.access) meets it first, then the library's (opening it)."""
    dump = one_comment(tmp_path)
    dump.chmod(0)
    if os.geteuid() == 0:  # root reads any file: refuse it as the kernel refuses everyone else
        opened, access = Path.open, os.access

        def refused(path: Path, *args: Any, **kwargs: Any) -> Any:
            if path == dump:
                raise PermissionError(13, "Permission denied", str(path))
            return opened(path, *args, **kwargs)

        monkeypatch.setattr(Path, "open", refused)

        def no_access(path: Any, mode: int, **kwargs: Any) -> bool:
            return str(path) != str(dump) and access(path, mode, **kwargs)

        monkeypatch.setattr(os, "access", no_access)
    assert_one_line_error(
        cli("extract", str(dump), "--out", str(tmp_path / "o"), "--model", "nope_sm"),
        f"error: Invalid value for 'DUMP': path '{dump}' is not readable.",
    )
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: True)
    assert_one_line_error(
        cli("extract", str(dump), "--out", str(tmp_path / "o"), "--model", "nope_sm"),
        f"error: input file is not readable (permission denied): {dump}",
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (["extract", "x.zst", "--out", "o", "--workers", "abc"], "Invalid value for '--workers'"),
        (["annotate", "users", "--role", "screener", "--count", "x"], "Invalid value for '--count'"),
        (["extract", "--no-such-option"], "No such option: --no-such-option"),
        (["extract"], "Missing argument 'DUMP'"),
    ],
)
def test_command_line_mistakes_are_one_line_not_a_usage_block(arguments: list[str], problem: str) -> None:
    line = assert_one_line_error(cli(*arguments), problem)
    assert line.endswith("--help')")


# D18: 0.9,0.2,-0.1 summed to 1 and was accepted: an empty test split, "test": -0.1 in the manifest.
@pytest.mark.parametrize(
    ("shares", "problem"),
    [
        ("0.9,0.2,-0.1", "not train 0.9, validation 0.2, test -0.1"),
        ("1.5,-0.25,-0.25", "not train 1.5, validation -0.25, test -0.25"),
        ("nan,0.5,0.5", "not train nan, validation 0.5, test 0.5"),
        ("0.8,0.1,0.2", "not train 0.8, validation 0.1, test 0.2"),
        ("0.5,0.5", "--split-proportions takes three numbers (train,validation,test), not '0.5,0.5'"),
    ],
)
def test_split_proportions_out_of_zero_to_one_or_not_summing_to_one_are_refused(
    tmp_path: Path, shares: str, problem: str
) -> None:
    from knowref60k.release.config import ReleaseConfig

    result = release_into(tmp_path, tmp_path / "r", "--version", "v1", "--split-proportions", shares)
    assert_one_line_error(result, problem)
    assert not (tmp_path / "r").exists()
    for edge in (
        {"train": 1.0, "validation": 0.0, "test": 0.0},
        {"train": 0.7, "validation": 0.2, "test": 0.1},
    ):
        assert ReleaseConfig(proportions=edge).proportions == edge  # the range's ends are in it


# D20: SIGTERM ended the command with 130, Ctrl-C's code, so a supervisor could not tell its own stop
# from a user's.
WAITING_COMMAND = """
import time

from knowref60k.cli.app import app


@app.command()
def wait() -> None:
    print("waiting", flush=True)
    time.sleep(120)


app(prog_name="knowref60k")
"""


def stopped_by(stop: signal.Signals) -> tuple[int, str]:
    """The exit code and output of a command that `stop` reaches while it runs."""
    process = subprocess.Popen(
        [sys.executable, "-c", WAITING_COMMAND, "wait"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "waiting\n"
        os.kill(process.pid, stop)  # to the process alone, as a supervisor sends it
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, output


def test_sigterm_ends_the_command_with_143_and_ctrl_c_with_130() -> None:
    for stop, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        returncode, output = stopped_by(stop)
        assert returncode == code, output
        assert f"interrupted ({stop.name})" in output and "Traceback" not in output
