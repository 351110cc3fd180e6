from pathlib import Path

import pytest
from typer.testing import CliRunner

from knowref60k.cli.app import app

runner = CliRunner()


@pytest.mark.parametrize("command", [[], ["extract"], ["measure-extraction"], ["funnel"], ["setup-model"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_missing_input_is_a_clear_error_without_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, ["extract", str(tmp_path / "RC_1999-01.zst"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "input file not found" in result.output and "RC_1999-01.zst" in result.output
    assert "Traceback" not in result.output and "━" not in result.output  # no progress bar before it


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    source = tmp_path / "RC_2099-01.ndjson"
    source.write_text('{"id": "a", "body": "Hello."}\n')
    result = runner.invoke(app, ["extract", str(source), "--out", str(tmp_path / "o"), "--model", "nope_sm"])
    assert result.exit_code == 2
    assert "'nope_sm' is not installed" in result.output


@pytest.mark.integration
def test_extract_command_writes_outputs_and_prints_funnel(tmp_path: Path) -> None:
    source = tmp_path / "RC_2099-02.ndjson"
    source.write_text(
        '{"id": "a", "body": "Roderick is painting a portrait of Madeline, but every pose exhausts her."}\n'
        "not json\n"
    )
    result = runner.invoke(app, ["extract", str(source), "--out", str(tmp_path / "o"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "1 candidates" in result.output and "quarantined lines: 1" in result.output
    assert (tmp_path / "o" / "RC_2099-02.candidates.parquet").exists()
    funnel = runner.invoke(app, ["funnel", str(tmp_path / "o")])
    assert funnel.exit_code == 0 and "antecedent" in funnel.output
    # The default person detection (the validity score) is named with the counts.
    for output in (result.output, funnel.output):
        assert "Funnel over 1 file(s), person detection: score" in " ".join(output.split())
    rules = runner.invoke(
        app, ["extract", str(source), "--out", str(tmp_path / "r"), "--person-detection", "both"]
    )
    assert rules.exit_code == 0 and "person detection: both" in " ".join(rules.output.split())


def test_version_is_printed() -> None:
    from knowref60k.core.versioning import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"knowref60k {__version__}"
