"""Settings are resolved once, at a command's entry, and handed down: the validity threshold goes from the
config file to the settings (`RunConfig`), to the command, to prepare, to the stage that filters on it,
one way down the phases (tests/test_architecture.py PHASES), never back up into the labelling code or a
config loader; prepare's stages get what they need as typed constructor arguments."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import UserError
from knowref60k.core.io import CANDIDATE_SCHEMA
from knowref60k.core.stage import Stage
from knowref60k.core.versioning import PACKAGE_DIR
from knowref60k.labelling.config import LabellingConfig, chosen_levels, load_labelling_config
from knowref60k.labelling.levels import NEVER, Pinned
from knowref60k.prepare.preparer import PIPELINE, STAGES, Preparer, built_stages
from knowref60k.prepare.stages.threshold import ValidityThreshold
from knowref60k.settings.effective import RunConfig, effective_settings, labelling_settings
from tests.test_scorer import candidate

PREPARE_DIR = PACKAGE_DIR / "prepare"
# What loads settings from a file: prepare calls none of them, it is given concrete values.
CONFIG_LOADERS = {
    "load_config",
    "load_prepare_config",
    "load_section",
    "file_table",
    "config_document",
    "file_threshold",
    "level_in_file",
    "load_labelling_config",
    "file_levels",
    "tomllib",
    "RunConfig",
}


def imported_and_named(path: Path) -> tuple[set[str], set[str]]:
    """The modules a file imports (anywhere in it) and every name it uses or imports."""
    modules, names = set(), set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return modules, names


@pytest.mark.parametrize(
    "path", sorted(PREPARE_DIR.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE_DIR))
)
def test_prepare_imports_no_labelling_or_settings_code_and_loads_no_config(path: Path) -> None:
    modules, names = imported_and_named(path)
    upward = sorted(m for m in modules if m.startswith(("knowref60k.labelling", "knowref60k.settings")))
    assert upward == []
    assert sorted(names & CONFIG_LOADERS) == []


def test_the_stage_base_takes_no_shared_context_and_prepare_stages_typed_arguments() -> None:
    assert list(inspect.signature(Stage.__init__).parameters) == ["self"]
    for stage in STAGES:
        parameters = list(inspect.signature(stage.__init__).parameters.values())[1:]
        assert all(p.annotation is not inspect.Parameter.empty for p in parameters), stage
        assert "context" not in {p.name for p in parameters}, stage
    threshold = inspect.signature(ValidityThreshold.__init__).parameters
    assert list(threshold) == ["self", "threshold"] and threshold["threshold"].annotation == "float"


def test_the_threshold_stage_refuses_a_level_still_to_be_chosen() -> None:
    with pytest.raises(ValueError, match="score in"):
        ValidityThreshold(-1.0)


@pytest.mark.parametrize("spelling", ["", "validity_threshold = -1\n", "validity_threshold = -1.0\n"])
def test_a_threshold_left_to_the_cost_model_is_chosen_at_the_settings_layer(
    tmp_path: Path, spelling: str
) -> None:
    """The key left out, or -1 as earlier files wrote it: the same concrete threshold, the cost model's."""
    path = tmp_path / "k.toml"
    path.write_text(f"[prepare]\nseed = 7\n{spelling}", encoding="utf-8")
    run = RunConfig.load(path)
    levels = chosen_levels(LabellingConfig())
    assert levels is not None and run.levels is not None
    assert run.prepare.validity_threshold == levels.threshold == run.levels.threshold
    assert 0 <= run.prepare.validity_threshold <= 1 and run.prepare.seed == 7
    assert run.labelling.skip_screening_above >= 0 and run.labelling.careful_screening_below >= 0
    origin = {row.key: row.origin for row in effective_settings(run) if row.table == "prepare"}
    assert origin["validity_threshold"].startswith("cost model (")


@pytest.mark.parametrize("spelling", ["", "skip_screening_above = -1\n", "skip_screening_above = -0.5\n"])
def test_screening_levels_left_to_the_cost_model_are_chosen_at_the_settings_layer_only(
    tmp_path: Path, spelling: str
) -> None:
    """The `[labelling]` table alone knows no cost model: a level it leaves out (or sets negative, as
    earlier files did) keeps its inert default there (no item skips screening, none is screened
    carefully); the settings layer writes in the cost model's choice, and a level the file sets stays."""
    path = tmp_path / "k.toml"
    path.write_text(f"[labelling]\ncareful_screening_below = 0.3\n{spelling}", encoding="utf-8")
    table, settled = load_labelling_config(path), RunConfig.load(path).labelling
    levels = chosen_levels(LabellingConfig(), Pinned(careful=0.3))
    assert levels is not None and levels.skip <= 1
    assert (table.skip_level, table.careful_level) == (NEVER, 0.3)
    assert (settled.skip_level, settled.careful_level) == (levels.skip, 0.3)
    assert labelling_settings(path) == settled
    with pytest.raises(UserError, match="skip_screening_above must be 0 or more, not -1"):
        LabellingConfig(skip_screening_above=-1)


def test_the_files_threshold_reaches_the_stage_and_filters_exactly_at_it(tmp_path: Path) -> None:
    config = tmp_path / "k.toml"
    config.write_text("[prepare]\nvalidity_threshold = 0.42\n", encoding="utf-8")
    settings = RunConfig.load(config).prepare_given(seed=None, validity_threshold=None)
    assert settings.validity_threshold == 0.42
    path = tmp_path / "RC_2099-01.candidates.parquet"
    rows = [candidate(1, 0.42), candidate(2, 0.4199), candidate(3, 0.43), candidate(4, 0.0)]
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), path)
    with Preparer(settings, tmp_path / "dedup.sqlite") as preparer:
        stage = next(s for s in built_stages(preparer.file_inputs("x")) if isinstance(s, ValidityThreshold))
        assert stage.threshold == 0.42
        report = preparer.prepare_file(path, tmp_path / "items")
    items = pq.read_table(report.rows_path).column("candidate_id").to_pylist()
    held = pq.read_table(tmp_path / "items" / "RC_2099-01.below-threshold.parquet").to_pylist()
    assert sorted(items) == ["c1", "c3"]
    assert sorted(row["candidate_id"] for row in held) == ["c2", "c4"]


def test_an_option_wins_over_the_file_and_is_checked(tmp_path: Path) -> None:
    run = RunConfig.load(None)
    assert run.prepare_given(validity_threshold=0.0, seed=None).validity_threshold == 0.0
    with pytest.raises(UserError, match="validity_threshold must be a score in"):
        run.prepare_given(validity_threshold=1.5)


def test_each_line_of_the_pipeline_builds_its_own_stage_and_side_outputs_are_declared(tmp_path: Path) -> None:
    """Adding a stage is one module and one line of `PIPELINE`; what a stage sets aside is the declared
    `set_aside` every stage has, not an attribute looked for."""
    with Preparer(PrepareConfig(validity_threshold=0.3), tmp_path / "dedup.sqlite") as preparer:
        stages = built_stages(preparer.file_inputs("x"))
    assert [type(stage) for stage in stages] == list(STAGES) == [kind for kind, _ in PIPELINE]
    assert all(stage.set_aside == [] for stage in stages)
