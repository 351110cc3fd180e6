"""Label Studio behind one declared contract: every assumption about its internals checked against the
installed Label Studio in seconds, a broken one named; the installed version against the lock."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from knowref60k_annotation.environment import installed_label_studio, label_studio_program
from knowref60k_annotation.labelstudio_app import labelstudio_contract as contract
from knowref60k_annotation.server import CONTRACT, version_note
from tests.conftest import REPO, missing_prerequisite

pytestmark = pytest.mark.integration


def run_check(contract_file: Path) -> subprocess.CompletedProcess[str]:
    if not label_studio_program().exists():
        missing_prerequisite(
            f"{label_studio_program()} missing: `make test` installs Label Studio's own environment"
        )
    python = label_studio_program().parent / "python"
    return subprocess.run(
        [str(python), "-P", str(contract_file)], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_every_assumption_holds_against_the_installed_label_studio() -> None:
    done = run_check(CONTRACT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"all {len(contract.ASSUMPTIONS)} assumptions hold" in done.stdout
    assert f"Label Studio {contract.READ_FROM_VERSION}" in done.stdout


# Assumptions as a later Label Studio might break them: (the contract's line, the moved one, its name).
MOVED = [
    ('SIGN_UP_PATH = "/user/signup/"', 'SIGN_UP_PATH = "/user/register/"', "pages and endpoints"),
    ('"inner_id annotators', '"inner_id no_such_column annotators', "Data Manager columns"),
    ('SIGN_UP_FIELDS = ("email", "password")', 'SIGN_UP_FIELDS = ("email", "passcode")', "sign-up form"),
    ('WSGI_MODULE = "label_studio.core.wsgi"', 'WSGI_MODULE = "label_studio.wsgi"', "WSGI module"),
    ('"DJANGO_DB POSTGRE_NAME', '"DJANGO_DB NO_SUCH_SETTING POSTGRE_NAME', "environment variables"),
]


def test_each_broken_assumption_fails_naming_it(tmp_path: Path) -> None:
    """A copy of the contract with five assumptions broken: five `moved:` lines, each naming its
    assumption, in one run."""
    text = CONTRACT.read_text(encoding="utf-8")
    for line, moved, _ in MOVED:
        assert text.count(line) == 1, line
        text = text.replace(line, moved)
    broken = tmp_path / "labelstudio_contract.py"
    broken.write_text(text, encoding="utf-8")
    done = run_check(broken)
    assert done.returncode == 1
    moved_lines = [line for line in done.stderr.splitlines() if line.startswith("moved: ")]
    assert sorted(line.split(":")[1].strip() for line in moved_lines) == sorted(name for *_, name in MOVED)
    assert f"{len(MOVED)} of {len(contract.ASSUMPTIONS)} assumptions broken" in done.stderr


def test_the_contract_is_read_from_the_locked_version() -> None:
    locked = re.search(
        r"^label-studio==(\S+)", (REPO / "annotation" / "requirements-labelstudio.lock").read_text(), re.M
    )
    assert locked is not None and locked.group(1) == contract.READ_FROM_VERSION


def test_every_label_studio_pin_is_hashed() -> None:
    text = (REPO / "annotation" / "requirements-labelstudio.lock").read_text()
    requirements = re.split(r"(?<!\\)\n", text)
    pins = [line for line in requirements if line and not line.startswith("#")]
    assert len(pins) > 100
    assert all("--hash=sha256:" in pin for pin in pins), [p.split()[0] for p in pins if "--hash" not in p]


def test_another_installed_version_is_one_line_naming_both(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "label_studio-9.9.9.dist-info").mkdir(parents=True)
    label_studio = tmp_path / "venv" / "bin" / "label-studio"
    assert installed_label_studio(label_studio) == "9.9.9"
    note = version_note(installed_label_studio(label_studio))
    assert note is not None and "\n" not in note
    assert "9.9.9" in note and contract.READ_FROM_VERSION in note and "requirements-labelstudio.lock" in note
    assert version_note(contract.READ_FROM_VERSION) is None
    assert "not installed" in (version_note(installed_label_studio(tmp_path / "nowhere" / "bin" / "x")) or "")
    if label_studio_program().exists():
        assert installed_label_studio(label_studio_program()) == contract.READ_FROM_VERSION


def test_every_variable_the_server_hands_label_studio_is_in_the_contract(tmp_path: Path) -> None:
    """What server.py sets for Label Studio, on SQLite and on a team's PostgreSQL, is what the contract
    checks Label Studio still reads."""
    from knowref60k_annotation.server import Server
    from knowref60k_annotation.settings import Settings

    for database in ("sqlite", "postgresql://u:p@db.example:5432/labelstudio"):
        settings = Settings("http://127.0.0.1:1", "u", "p", "k", state_dir=tmp_path, database=database)
        handed = set(Server(settings).label_studio_variables())
        assert handed <= set(contract.ENVIRONMENT_VARIABLES), handed - set(contract.ENVIRONMENT_VARIABLES)
        assert {"SSRF_PROTECTION_ENABLED", "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN", "DJANGO_DB"} <= handed
    assert {"POSTGRE_NAME", "POSTGRE_PASSWORD"} <= handed


def test_a_label_studio_command_outside_its_environment_is_one_line() -> None:
    import os
    import sys

    done = subprocess.run(
        [str(Path(sys.executable).parent / "knowref60k"), "labelstudio", "check"],
        env={**os.environ, "KNOWREF60K_LABELSTUDIO_BIN": "/bin/true"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: /bin/true is not the command of a Label Studio environment (no label-studio installed beside "
        "it, or no /bin/python): run `knowref60k labelstudio setup`, or point "
        "KNOWREF60K_LABELSTUDIO_BIN at one"
    ]
