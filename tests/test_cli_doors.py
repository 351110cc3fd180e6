"""One door per action: the flows' and the Label Studio side's commands run through `knowref60k` as they
run on their own, and the Makefile's targets are aliases of `knowref60k` commands."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from knowref60k.cli.common import Interrupted, stopping_what_it_starts, terminated
from tests.conftest import REPO, free_port


def test_a_command_that_starts_servers_stops_them_on_a_signal_and_puts_the_handlers_back() -> None:
    """Inside a flow or Label Studio command Ctrl-C and SIGTERM raise `Interrupted` where the command is
    (its `finally` stops what it started), not through the extraction's handler; afterwards the handlers
    before are back."""

    def extraction_handler(signum: int, frame: object) -> None:
        raise AssertionError("the extraction's handler reached a server command")

    before = signal.signal(signal.SIGTERM, extraction_handler)
    try:
        with stopping_what_it_starts():
            assert signal.getsignal(signal.SIGINT) is terminated
            assert signal.getsignal(signal.SIGTERM) is terminated
            with pytest.raises(Interrupted) as interrupted:
                signal.raise_signal(signal.SIGTERM)
        assert interrupted.value.signum == signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is extraction_handler
    finally:
        signal.signal(signal.SIGTERM, before)


def knowref60k(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "knowref60k", *arguments]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)


@pytest.mark.integration
@pytest.mark.parametrize("command", [("run",), ("serve",), ("flow", "scale")])
def test_each_flow_has_its_help_and_one_line_mistakes_through_knowref60k(command: tuple[str, ...]) -> None:
    helped = knowref60k(*command, "--help")
    assert helped.returncode == 0 and helped.stdout.startswith(f"Usage: knowref60k {' '.join(command)} ")
    wrong = knowref60k(*command, "--no-such-option")
    assert wrong.returncode == 2
    lines = wrong.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert lines[0].endswith(f"(see 'knowref60k {' '.join(command)} --help')")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (("flow", "scale", "{dump}", "--shards=0"), "--shards must be at least 1, not 0"),
        (("flow", "scale", "{dump}", "--shards=-3"), "--shards must be at least 1, not -3"),
        (
            ("flow", "scale", "{dump}", "--shards=99999999999999999999"),
            "--shards 99999999999999999999: more shards than the 1,075 lines of",
        ),
        (("run", "{passwd}"), "cannot tell the format from the name"),
    ],
)
def test_a_user_mistake_in_a_flow_is_one_line_before_any_work(
    tmp_path: Path, arguments: tuple[str, ...], problem: str
) -> None:
    """Shard counts no dump can be cut into, and an input of no known format: one `error:` line, exit 2,
    no traceback (neither ours nor Prefect's), and no shard written."""
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    dump = REPO.parent / "shared" / "data" / "reddit" / "RC_2005-12.zst"
    given = [a.format(dump=dump, passwd=passwd) for a in arguments]
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    run = knowref60k(*given, "--out", str(tmp_path / "out"), env=env)
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and problem in lines[0]
    assert not list((tmp_path / "out").rglob("*.zst"))


@pytest.mark.integration
def test_the_label_studio_commands_run_through_knowref60k(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    url = f"http://127.0.0.1:{free_port()}"
    env_file.write_text(
        f"LABEL_STUDIO_URL={url}\nLABEL_STUDIO_USERNAME=a@b.c\nLABEL_STUDIO_PASSWORD=p\nLABEL_STUDIO_API_KEY=k\n"
    )
    environment = {
        **os.environ,
        "KNOWREF60K_ENV_FILE": str(env_file),
        "KNOWREF60K_LABELSTUDIO_DIR": str(tmp_path),
    }
    status = knowref60k("labelstudio", "server", "status", env=environment)
    assert (status.returncode, status.stdout.strip()) == (0, f"{url}: down")
    receiver = knowref60k("labelstudio", "receiver", "status", env=environment)
    assert receiver.returncode == 0 and receiver.stdout.strip().endswith(": down")


def recipe(target: str) -> list[str]:
    """The commands of a Makefile target's own recipe, as make would run them (nothing is run)."""
    text = (REPO / "Makefile").read_text()
    found = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert found is not None, target
    return [line.strip().lstrip("@") for line in found.group(1).splitlines()]


@pytest.mark.parametrize(
    ("target", "command"),
    [
        ("run", "run"),
        ("demo", "demo"),
        ("serve", "serve"),
        ("labelstudio", "labelstudio server start"),
        ("labelstudio-stop", "labelstudio server stop"),
        ("demo-stop", "labelstudio server stop --demo"),
        ("eval", "measure-extraction"),
    ],
)
def test_the_makefiles_user_targets_are_aliases_of_knowref60k_commands(target: str, command: str) -> None:
    lines = recipe(target)
    assert any(
        re.match(rf"\$\((KNOWREF60K|VENV)\)(/bin/knowref60k)? {re.escape(command)}\b", line) for line in lines
    )
    assert not any("python -m" in line or "$(PY) -m" in line for line in lines), lines


def test_the_flows_keep_prefect_at_home_and_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a flow command runs Prefect with unless told otherwise (what `make run` sets)."""
    from knowref60k_flows.cli import prefect_defaults

    monkeypatch.delenv("KNOWREF60K_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert prefect_defaults() == {
        "PREFECT_HOME": str(tmp_path / ".prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    assert (tmp_path / ".prefect").is_dir()
    # In the home folder the user names (`knowref60k --home`), wherever the command runs.
    monkeypatch.setenv("KNOWREF60K_HOME", str(tmp_path / "home"))
    assert prefect_defaults()["PREFECT_HOME"] == str(tmp_path / "home" / ".prefect")
    assert (tmp_path / "home" / ".prefect").is_dir()


# ---- one command line: every command's help, the old names, the home folder ----


def command_paths() -> list[tuple[str, ...]]:
    """Every command and sub-command of `knowref60k`, hidden ones too (the deprecated names, the vote
    receiver's foreground process)."""
    import typer

    from knowref60k.cli.app import app

    found: list[tuple[str, ...]] = []
    waiting: list[tuple[tuple[str, ...], Any]] = [((), typer.main.get_command(app))]
    while waiting:
        path, command = waiting.pop()
        found.append(path)
        waiting += [((*path, name), sub) for name, sub in getattr(command, "commands", {}).items()]
    return sorted(found)


def test_the_walk_finds_every_part_of_the_command_line() -> None:
    paths = command_paths()
    expected = [
        ("run",),
        ("demo",),
        ("serve",),
        ("flow", "annotate", "sync"),
        ("flow", "scale"),
        ("labelstudio", "server", "start"),
        ("labelstudio", "receiver", "serve"),
        ("annotate", "push"),
        ("measure-extraction",),
        ("evaluate-models",),
        ("eval",),
        ("evaluate",),
    ]
    assert set(expected) <= set(paths)


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_every_command_has_its_help_under_the_name_knowref60k(path: tuple[str, ...]) -> None:
    from knowref60k.cli.app import app

    result = CliRunner().invoke(app, [*path, "--help"], prog_name="knowref60k", terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith(f"Usage: {' '.join(('knowref60k', *path))} "), result.output


def test_the_help_and_a_library_command_start_without_prefect(tmp_path: Path) -> None:
    """Prefect (seconds to import) is loaded only when a flow command runs."""
    probe = (
        "import sys\n"
        "from knowref60k.cli.app import app\n"
        "for arguments in (['--help'], ['extract', sys.argv[1], '--out', sys.argv[2]], ['run', '--help']):\n"
        "    try:\n"
        "        app(arguments, prog_name='knowref60k')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'dask')))\n"
    )
    command = [sys.executable, "-c", probe, str(tmp_path / "RC_1999-01.zst"), str(tmp_path / "out")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.stdout.strip().splitlines()[-1] == "LOADED []", result.stdout + result.stderr


@pytest.mark.parametrize(("old", "new"), [("eval", "measure-extraction"), ("evaluate", "evaluate-models")])
def test_the_old_names_still_work_with_a_notice_and_are_hidden(old: str, new: str, tmp_path: Path) -> None:
    from knowref60k.cli.app import app

    assert f" {old} " not in CliRunner().invoke(app, ["--help"]).output
    arguments = {
        "eval": ["--items", str(tmp_path / "none.json")],
        "evaluate": [str(tmp_path / "nowhere"), "--model", "m"],
    }
    result = CliRunner().invoke(app, [old, *arguments[old]])
    notice = f"note: `knowref60k {old}` is deprecated and will be removed in the next release; use "
    assert result.stderr.splitlines()[0] == f"{notice}`knowref60k {new}`"
    assert result.exit_code == CliRunner().invoke(app, [new, *arguments[old]]).exit_code == 2


def test_home_names_the_folder_of_the_users_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--home DIR`: KNOWREF60K_HOME for the command and what it starts; the Label Studio logins' file in
    it by default."""
    import orjson

    from knowref60k.cli.app import app

    # Set, not deleted: the command sets KNOWREF60K_HOME in this process, and what is set is undone.
    for variable in ("KNOWREF60K_HOME", "KNOWREF60K_ENV_FILE"):
        monkeypatch.setenv(variable, "")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["--home", "state", "config", "--json"])
    assert result.exit_code == 0, result.output
    assert os.environ["KNOWREF60K_HOME"] == str(tmp_path / "state")
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    env_file = next(row for row in rows if row["table"] == "connection" and row["key"] == "env_file")
    assert env_file["value"] == str(tmp_path / "state" / ".env")
