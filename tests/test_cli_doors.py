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
import typer
from typer.testing import CliRunner

from knowref60k.cli.common import add_forwarded, terminated
from tests.conftest import REPO, free_port

SEEN: dict[str, Any] = {}


def record_how_it_runs(argv: list[str]) -> int:
    """A forwarded command line of the test's own: what it was given and what it runs under."""
    SEEN.update(
        argv=argv,
        program=sys.argv[0],
        sigint=signal.getsignal(signal.SIGINT),
        sigterm=signal.getsignal(signal.SIGTERM),
    )
    return 7


def test_a_forwarded_command_runs_as_its_own_program() -> None:
    app = typer.Typer()
    add_forwarded(app, "probe", f"{__name__}:record_how_it_runs", "A probe.")
    app.callback()(lambda: None)

    def extraction_handler(signum: int, frame: object) -> None:
        raise AssertionError("the extraction's handler reached a forwarded command")

    before = signal.signal(signal.SIGTERM, extraction_handler)
    try:
        result = CliRunner().invoke(app, ["probe", "--out", "x", "a b", "--help-me"])
        assert signal.getsignal(signal.SIGTERM) is extraction_handler  # put back afterwards
    finally:
        signal.signal(signal.SIGTERM, before)
    assert result.exit_code == 7
    assert SEEN["argv"] == ["--out", "x", "a b", "--help-me"]
    assert SEEN["program"].endswith("probe")
    assert SEEN["sigint"] is signal.default_int_handler and SEEN["sigterm"] is terminated


def knowref60k(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "knowref60k", *arguments]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)


@pytest.mark.integration
@pytest.mark.parametrize("command", [("run",), ("serve",), ("flow", "scale")])
def test_each_flow_has_its_help_and_one_line_mistakes_through_knowref60k(command: tuple[str, ...]) -> None:
    helped = knowref60k(*command, "--help")
    assert helped.returncode == 0 and helped.stdout.startswith(f"usage: knowref60k {' '.join(command)} ")
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
        ("eval", "eval"),
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

    monkeypatch.chdir(tmp_path)
    assert prefect_defaults() == {
        "PREFECT_HOME": str(tmp_path / ".prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    assert (tmp_path / ".prefect").is_dir()
