import re
from pathlib import Path

import pytest

from knowref60k.core.config import (
    MODEL_ENV_VAR,
    ExtractConfig,
    PrepareConfig,
    is_installed,
    load_config,
    load_prepare_config,
)
from knowref60k.core.errors import UserError
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.labelling.config import load_labelling_config
from knowref60k.labelling.cost_model import CostConfig, load_cost_config

REPO = Path(__file__).resolve().parent.parent


def test_the_documented_example_config_is_the_default() -> None:
    assert load_config(REPO / "config.example.toml") == ExtractConfig()
    assert load_labelling_config(REPO / "config.example.toml") == load_labelling_config()
    assert load_prepare_config(REPO / "config.example.toml") == PrepareConfig()
    assert load_cost_config(REPO / "config.example.toml") == CostConfig()


def test_file_then_environment_then_explicit_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = tmp_path / "pipeline"
    pipeline.mkdir()  # a pipeline folder: the file may name only an installed model
    path = tmp_path / "k.toml"
    path.write_text(f'[extract]\nmax_connectives = 2\nmodel = "{pipeline}"\n')
    assert load_config(path).model == str(pipeline)
    monkeypatch.setenv(MODEL_ENV_VAR, "from_env")
    config = load_config(path)
    assert (config.model, config.max_connectives) == ("from_env", 2)
    assert load_config(path, model="explicit").model == "explicit"


def test_unknown_key_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "k.toml"
    path.write_text("[extract]\nmax_conectives = 2\n")
    with pytest.raises(UserError, match=r"unknown setting.*k\.toml: max_conectives"):
        load_config(path)


def test_bad_values_and_files_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="person_detection"):
        load_config(person_detection="magic")
    with pytest.raises(UserError, match="config file not found"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("[extract\n")
    with pytest.raises(UserError, match=r"bad\.toml: not valid TOML"):
        load_config(tmp_path / "bad.toml")


@pytest.mark.parametrize(
    ("table", "setting", "problem"),
    [
        ("extract", "max_tokens = 0", "max_tokens must be at least 1"),
        ("extract", "ssa_min_count = -100", "ssa_min_count at least 0"),
        ("extract", "connectives = []", "connectives and sentence_end_chars must not be empty"),
        ("extract", 'sentence_end_chars = ""', "connectives and sentence_end_chars must not be empty"),
        ("prepare", "minhash_permutations = 100000000", "minhash_permutations from 16 to 1024"),
        ("prepare", "gender_ambiguity_share = 7", r"gender_ambiguity_share must be in \[0, 1\]"),
        (
            "prepare",
            "validity_threshold = 3",
            r"validity_threshold must be a score in \[0, 1\] \(or, in a config file, left out to be chosen "
            r"by cost\), not 3",
        ),
    ],
)
def test_a_value_no_run_could_use_is_refused_naming_the_file(
    tmp_path: Path, table: str, setting: str, problem: str
) -> None:
    path = tmp_path / "k.toml"
    path.write_text(f"[{table}]\n{setting}\n")
    load = load_config if table == "extract" else load_prepare_config
    with pytest.raises(UserError, match=rf"invalid setting in {re.escape(str(path))}: .*{problem}"):
        load(path)


@pytest.mark.parametrize(
    ("table", "setting", "problem"),
    [
        ("prepare", "validity_threshold = nan", "validity_threshold must be a finite number, not nan"),
        ("prepare", "near_duplicate_threshold = inf", "near_duplicate_threshold must be a finite number"),
        ("labelling", "skip_screening_above = nan", "skip_screening_above must be a finite number, not nan"),
        (
            "extract",
            "language_seed = -99999999999999999999999",
            "language_seed must be a whole number that fits",
        ),
        ("prepare", "seed = 9223372036854775808", "seed must be a whole number that fits in 64 bits"),
        (
            "labelling",
            "votes_per_item = 99999999999999999999",
            "votes_per_item must be a whole number that fits",
        ),
    ],
)
def test_a_number_no_library_can_hold_is_refused_in_one_line(
    tmp_path: Path, table: str, setting: str, problem: str
) -> None:
    path = tmp_path / "k.toml"
    path.write_text(f"[{table}]\n{setting}\n")
    load = {"extract": load_config, "prepare": load_prepare_config, "labelling": load_labelling_config}[table]
    with pytest.raises(UserError, match=rf"invalid setting in {re.escape(str(path))}: {problem}"):
        load(path)


def test_fingerprint_changes_with_config_and_model() -> None:
    base = ExtractConfig().fingerprint("en_ud_open_sm", "1.0.0")
    assert base == ExtractConfig().fingerprint("en_ud_open_sm", "1.0.0")
    assert base != ExtractConfig(max_connectives=2).fingerprint("en_ud_open_sm", "1.0.0")
    assert base != ExtractConfig().fingerprint("en_core_web_sm", "3.8.0")


def test_a_missing_model_in_the_file_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k.toml"
    path.write_text('[extract]\nmodel = "en_no_such_model_sm"\n')
    with pytest.raises(UserError, match=r"in .*k\.toml: model 'en_no_such_model_sm' is no installed"):
        load_config(path)
    # A model given on the command line or in the environment replaces the file's: no fault of the file.
    assert load_config(path, model="explicit").model == "explicit"
    monkeypatch.setenv(MODEL_ENV_VAR, "from_env")
    assert load_config(path).model == "from_env"


@pytest.mark.parametrize("name", ["en_no_such_model_sm", "en_core_web_sm-3.8.0", "./no/such/folder", "a.b.c"])
def test_a_name_that_is_no_pipeline_is_not_installed(name: str) -> None:
    assert not is_installed(name)  # never an import error: a version, a missing folder, a dotted name


def test_missing_model_says_what_to_do() -> None:
    with pytest.raises(UserError, match=r"not installed.*make setup"):
        resolve_model_name("en_no_such_model_sm")
