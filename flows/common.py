"""What the flows' command lines share."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Task
from prefect.client.schemas.objects import TaskRun
from prefect.states import State
from rich.console import Console

from knowref60k.core.config import ExtractConfig, PrepareConfig, load_config
from knowref60k.core.console import print_error
from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.labelling.config import (
    LabellingConfig,
    file_levels,
    load_labelling_config,
    load_run_prepare_config,
)
from knowref60k.labelling.cost_model import CostConfig, load_cost_config
from knowref60k.labelling.levels import Expected


def is_transient(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry only what another try can fix: a server outage, or a crash we did not foresee. A user
    error (a missing file, a wrong format, no spaCy model) fails the task at once with its message."""
    error = state.data
    return isinstance(error, ServiceUnavailable) or not isinstance(error, UserError)


# The retry policy of every per-file task.
RETRIES: dict[str, Any] = {"retries": 2, "retry_condition_fn": is_transient}


@dataclass(frozen=True)
class RunSettings:
    """Every table of a config file, read once per flow run and handed to its tasks."""

    extract: ExtractConfig
    prepare: PrepareConfig
    labelling: LabellingConfig
    cost: CostConfig
    # The labelling levels with what they are expected to cost (None without a calibration).
    levels: Expected | None

    @classmethod
    def load(cls, config_path: str | None) -> RunSettings:
        path = Path(config_path) if config_path else None
        return cls(
            load_config(path),
            load_run_prepare_config(path),
            load_labelling_config(path),
            load_cost_config(path),
            file_levels(path),
        )

    def fingerprint(self) -> str:
        """What a dump's outputs depend on (the library's fingerprints of extraction and prepare: settings,
        spaCy pipeline, code, data): a dump done under another one is done again."""
        from knowref60k.extract.extractor import extraction_fingerprint
        from knowref60k.prepare.preparer import prepare_fingerprint

        return f"{extraction_fingerprint(self.extract)}+{prepare_fingerprint(self.prepare)}"


def worker_count(text: str) -> int:
    """argparse type of --workers: a whole number from 1 to MOST_WORKERS, capped at the CPU cores."""
    from knowref60k.core import parallel

    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    try:
        return parallel.worker_count(int(text))
    except UserError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def missing_inputs(console: Console, paths: Iterable[str], what: str = "input file(s)") -> bool:
    """Print one clear line and return True when any of the files does not exist."""
    missing = [path for path in paths if not Path(path).is_file()]
    if missing:
        print_error(console, f"{what} not found: {', '.join(missing)}")
    return bool(missing)
