"""Every table of the TOML config in one object, read from one parse of the file with the environment's
overrides applied in one place (`knowref60k.core.config`), and where each value came from: the file (its
line), the environment, the cost model, or the default, as `knowref60k config` prints them.

`RunConfig.load` is the one loader of a command: it resolves every level at the command's entry, the
ones the file leaves to the cost model included (the key left out, or -1 as earlier files wrote it), and
hands each phase settings with concrete levels: prepare gets a threshold in [0, 1], not a marker."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowref60k.core.config import (
    ENVIRONMENT,
    ExtractConfig,
    PrepareConfig,
    file_table,
    file_threshold,
    level_in_file,
    line_of_setting,
    load_config,
    load_prepare_config,
)
from knowref60k.labelling.config import (
    LEVELS,
    LabellingConfig,
    chosen_levels,
    levels_left_to_cost,
    load_labelling_config,
)
from knowref60k.labelling.cost_model import CostConfig, load_cost_config
from knowref60k.labelling.labelstudio_table import (
    LabelStudioConfig,
    load_labelstudio_config,
    without_password,
)
from knowref60k.labelling.levels import Expected, Pinned

TABLES = ("extract", "prepare", "labelling", "cost", "labelstudio")
# Settings a file leaves to the cost model (knowref60k.labelling.levels) by leaving them out (or by -1).
CHOSEN_BY_COST = {
    ("prepare", "validity_threshold"),
    ("labelling", "skip_screening_above"),
    ("labelling", "careful_screening_below"),
}


@dataclass(frozen=True)
class RunConfig:
    """Every table of the config a run works with, every level the cost model chooses already chosen."""

    extract: ExtractConfig
    prepare: PrepareConfig
    labelling: LabellingConfig
    cost: CostConfig
    labelstudio: LabelStudioConfig
    # The labelling levels with what they are expected to cost (None without a calibration).
    levels: Expected | None
    # The config file they were read from (None: the defaults and the environment only).
    path: Path | None = None

    @classmethod
    def load(cls, path: Path | None = None) -> RunConfig:
        """Every table of the file at `path` (None: the defaults and the environment), each level the
        cost model chooses chosen: without a calibration, the threshold sends every candidate (0), no item
        skips screening and none is screened carefully."""
        # In the order of the phases, so that of two bad tables the earlier phase's is reported.
        extract, prepare, labelling = (
            load_config(path),
            load_prepare_config(path),
            load_labelling_config(path),
        )
        levels = file_levels(path, labelling)
        if file_threshold(path) is None:
            prepare = dataclasses.replace(prepare, validity_threshold=levels.threshold if levels else 0.0)
        return cls(
            extract,
            prepare,
            settled_labelling(path, labelling, levels),
            load_cost_config(path),
            load_labelstudio_config(path),
            levels,
            path,
        )

    def prepare_given(self, **options: Any) -> PrepareConfig:
        """The `[prepare]` settings with the command's options (None: not given) over the file's."""
        given = {key: value for key, value in options.items() if value is not None}
        return dataclasses.replace(self.prepare, **given)

    def fingerprint(self) -> str:
        """What a dump's outputs depend on (the library's fingerprints of extraction and prepare: settings,
        spaCy pipeline, code, data): a dump done under another one is done again."""
        from knowref60k.extract.extractor import extraction_fingerprint
        from knowref60k.prepare.preparer import prepare_fingerprint

        return f"{extraction_fingerprint(self.extract)}+{prepare_fingerprint(self.prepare)}"


def file_levels(path: Path | None, labelling: LabellingConfig | None = None) -> Expected | None:
    """The levels the config file sets, those it leaves to the cost model chosen with its `[cost]` table
    for the rules of `labelling` (the file's `[labelling]` table, a command's options over it), with
    their expected figures; None without a calibration to choose by."""
    labelling = labelling or load_labelling_config(path)
    return chosen_levels(
        labelling, pinned_by_file(path, labelling, file_threshold(path)), load_cost_config(path)
    )


def pinned_by_file(path: Path | None, labelling: LabellingConfig, threshold: float | None) -> Pinned:
    """`threshold` and the screening levels the file sets (as `labelling` holds them); None for each
    level the file leaves to the cost model."""
    left = levels_left_to_cost(path)
    return Pinned(threshold, *(None if key in left else getattr(labelling, key) for key in LEVELS))


def settled_labelling(
    path: Path | None, labelling: LabellingConfig, levels: Expected | None
) -> LabellingConfig:
    """`labelling` with the levels the file leaves to the cost model taken from `levels`; without a
    calibration (or without screening) no item skips screening and none is screened carefully."""
    if levels is None or not labelling.screening:
        return labelling
    left = levels_left_to_cost(path)
    return dataclasses.replace(
        labelling,
        skip_screening_above=(
            levels.skip if "skip_screening_above" in left else labelling.skip_screening_above
        ),
        careful_screening_below=(
            levels.careful if "careful_screening_below" in left else labelling.careful_screening_below
        ),
    )


def labelling_settings(path: Path | None = None, **overrides: Any) -> LabellingConfig:
    """The labelling settings of a command that reads no other phase's table: the file's `[labelling]`
    table, the command's options (`overrides`, None: not given) over it, its levels settled as a run's."""
    labelling = load_labelling_config(path, **overrides)
    if not labelling.screening:
        return labelling  # no screening levels to choose
    return settled_labelling(path, labelling, file_levels(path, labelling))


@dataclass(frozen=True)
class Setting:
    """One effective value and where it came from."""

    table: str
    key: str
    value: Any
    origin: str


def effective_settings(run: RunConfig) -> list[Setting]:
    """Every setting of every table, in the tables' order, with its origin; a database URL's password
    masked (the output is made to be read and pasted)."""
    rows = []
    for table in TABLES:
        in_file = file_table(run.path, table) if run.path is not None else {}
        for field in dataclasses.fields(getattr(run, table)):
            value = getattr(getattr(run, table), field.name)
            origin = origin_of(run.path, in_file, table, field.name, chosen=run.levels is not None)
            shown = without_password(value) if (table, field.name) == ("labelstudio", "database") else value
            rows.append(Setting(table, field.name, shown, origin))
    return rows


def origin_of(path: Path | None, in_file: dict[str, Any], table: str, key: str, chosen: bool) -> str:
    """Where a setting's effective value came from: the environment, the file (its line; `in_file` is
    the file's table), the cost model (a level the file leaves out, or sets to -1), or the default."""
    for name, setting in ENVIRONMENT.items():
        if setting == (table, key) and os.environ.get(name):
            return f"environment {name}"
    if (table, key) in CHOSEN_BY_COST and left_to_cost(path, table, key):
        set_by = f"{file_reference(path, table, key)}: -1" if key in in_file else "not set"
        if not chosen:
            return f"{set_by}, and no calibration to choose by (data/scorer/calibration.json)"
        return f"cost model ({set_by})"
    if key in in_file:
        return file_reference(path, table, key)
    return "default"


def left_to_cost(path: Path | None, table: str, key: str) -> bool:
    """Whether the file leaves a level to the cost model. The labelling levels take any negative value
    for it, as they always have; the threshold takes -1 only (a value checked when the file was read)."""
    if path is None:
        return True
    if table == "labelling":
        return key in levels_left_to_cost(path)
    return level_in_file(path, table, key) is None


def file_reference(path: Path | None, table: str, key: str) -> str:
    line = line_of_setting(path, table, key) if path is not None else None
    return f"file {path}" + (f":{line}" if line else "")
