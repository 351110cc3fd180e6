"""One settings object: the TOML parsed once, the environment's overrides applied in one place, and
`knowref60k config` printing every effective setting with where it came from."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from knowref60k.cli.app import app
from knowref60k.core import config as config_module
from knowref60k.core.config import ENVIRONMENT, load_config, load_prepare_config
from knowref60k.labelling.config import load_labelling_config
from knowref60k.labelling.cost_model import load_cost_config
from knowref60k.labelling.labelstudio_table import load_labelstudio_config
from knowref60k.settings.effective import RunConfig, effective_settings
from tests.conftest import REPO

CONFIG = """\
# a comment
[extract]
max_tokens = 40

[prepare]
validity_threshold = -1

[labelling]
skip_screening_above = 0.95

[labelstudio]
workers = 2
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parses: list[str] = []
    loads = tomllib.loads

    def counted(text: str) -> dict[str, object]:
        parses.append(text)
        return loads(text)

    config_module._parsed.cache_clear()
    monkeypatch.setattr(config_module.tomllib, "loads", counted)
    return parses


def test_a_run_parses_the_config_file_once(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parses = counting_parses(monkeypatch)
    settings = RunConfig.load(config_file)
    # what the flows, the CLI commands and the receiver load besides, from the same file
    load_config(config_file), load_prepare_config(config_file), load_labelling_config(config_file)
    load_cost_config(config_file), load_labelstudio_config(config_file), effective_settings(settings)
    assert len(parses) == 1
    assert (settings.extract.max_tokens, settings.labelstudio.workers) == (40, 2)
    assert settings.labelling.skip_screening_above == 0.95
    assert 0 <= settings.prepare.validity_threshold <= 1  # the -1 left to the cost model is chosen


def test_a_changed_file_is_parsed_again(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parses = counting_parses(monkeypatch)
    assert load_config(config_file).max_tokens == 40
    # the same size, written within the file system clock's resolution: told apart by its content
    config_file.write_text(CONFIG.replace("max_tokens = 40", "max_tokens = 41"), encoding="utf-8")
    assert load_config(config_file).max_tokens == 41
    assert len(parses) == 2


def origins(config_file: Path | None) -> dict[str, str]:
    return {f"{row.table}.{row.key}": row.origin for row in effective_settings(RunConfig.load(config_file))}


def test_each_setting_names_its_origin(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWREF60K_LABELSTUDIO_DATABASE", "postgresql")
    monkeypatch.delenv("KNOWREF60K_SPACY_MODEL", raising=False)
    found = origins(config_file)
    assert found["extract.max_tokens"] == f"file {config_file}:3"
    assert found["labelling.skip_screening_above"] == f"file {config_file}:9"
    assert found["labelstudio.workers"] == f"file {config_file}:12"
    assert found["prepare.validity_threshold"] == f"cost model (file {config_file}:6: -1)"
    assert found["labelstudio.database"] == "environment KNOWREF60K_LABELSTUDIO_DATABASE"
    assert found["extract.min_spaces"] == found["cost.currency"] == "default"
    tables = {name.split(".")[0] for name in found}
    assert tables == {"extract", "prepare", "labelling", "cost", "labelstudio"}


def test_the_environment_wins_over_the_file_and_an_option_over_both(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWREF60K_LABELSTUDIO_DATABASE", "postgresql")
    assert load_labelstudio_config(config_file).database == "postgresql"
    monkeypatch.setenv("KNOWREF60K_SPACY_MODEL", "some_model")
    assert load_config(config_file).model == "some_model"
    assert load_config(config_file, model="explicit").model == "explicit"
    assert set(ENVIRONMENT) == {"KNOWREF60K_SPACY_MODEL", "KNOWREF60K_LABELSTUDIO_DATABASE"}


def environment_reads(path: Path) -> set[str]:
    """The variables a module reads from the environment (`os.environ[...]`, `os.environ.get(...)`,
    `os.getenv(...)`), by literal name or by the name of a module constant holding it."""
    tree = ast.parse(path.read_bytes())
    constants = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }
    constants |= {"MODEL_ENV_VAR": config_module.MODEL_ENV_VAR}
    read = set()
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("os.environ.get", "os.getenv")
            and node.args
        ):
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            read.add(key.value)
        elif isinstance(key, ast.Name) and key.id in constants:
            read.add(constants[key.id])
    return read


def test_an_environment_override_is_read_in_one_place() -> None:
    """No module reads a variable that overrides a setting by its name: knowref60k.core.config reads
    them all, through ENVIRONMENT (the detector itself sees the other variables read by name)."""
    readers = sorted(
        str(path.relative_to(REPO))
        for folder in ("knowref60k", "annotation", "flows")
        for path in (REPO / folder).rglob("*.py")
        if environment_reads(path) & set(ENVIRONMENT)
    )
    assert readers == []
    assert "KNOWREF60K_LABELSTUDIO_DIR" in environment_reads(REPO / "annotation" / "settings.py")


def test_a_bad_environment_value_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWREF60K_LABELSTUDIO_DATABASE", "mysql")
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "KNOWREF60K_LABELSTUDIO_DATABASE" in lines[0] and "'mysql'" in lines[0]


def test_the_config_command_prints_every_setting_with_its_origin(config_file: Path) -> None:
    """Through the installed command: the library's tables and the Label Studio connection the
    annotation side plugs in, its secrets masked."""
    env_file = config_file.parent / ".env"
    env_file.write_text("LABEL_STUDIO_URL=http://127.0.0.1:9999\nLABEL_STUDIO_PASSWORD=hunter2\n")
    environment = {**os.environ, "KNOWREF60K_ENV_FILE": str(env_file), "KNOWREF60K_PROJECT": "p"}
    environment.pop("KNOWREF60K_LABELSTUDIO_DATABASE", None)
    command = [sys.executable, "-m", "knowref60k", "config", "--config", str(config_file)]
    text = subprocess.run(command, capture_output=True, text=True, env=environment, check=True).stdout
    as_json = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, env=environment, check=True
    ).stdout
    rows = {f"{r['table']}.{r['key']}": r for r in map(orjson.loads, as_json.splitlines())}
    assert rows["extract.max_tokens"] == {
        "table": "extract",
        "key": "max_tokens",
        "value": 40,
        "origin": f"file {config_file}:3",
    }
    assert rows["connection.url"]["origin"] == f"file {env_file}"
    assert rows["connection.password"]["value"] == "***" and "hunter2" not in text + as_json
    assert rows["connection.project"] == {
        "table": "connection",
        "key": "project",
        "value": "p",
        "origin": "environment KNOWREF60K_PROJECT",
    }
    assert rows["connection.env_file"]["origin"] == "environment KNOWREF60K_ENV_FILE"
    shown = text.splitlines()
    assert shown[0] == f"# the settings of {config_file}"
    assert len(shown) == len(rows) + 1
    assert any(
        line.startswith("extract.max_tokens = 40") and line.endswith(f"file {config_file}:3")
        for line in shown
    )
