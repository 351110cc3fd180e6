"""What the flows share: the retry policy of their tasks, and the check of their inputs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prefect import Task
from prefect.client.schemas.objects import TaskRun
from prefect.states import State
from rich.console import Console

from knowref60k.core.console import print_error
from knowref60k.core.errors import ServiceUnavailable, UserError


def is_transient(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry only what another try can fix: a server outage, or a crash we did not foresee. A user
    error (a missing file, a wrong format, no spaCy model) fails the task at once with its message."""
    error = state.data
    return isinstance(error, ServiceUnavailable) or not isinstance(error, UserError)


# The retry policy of every per-file task.
RETRIES: dict[str, Any] = {"retries": 2, "retry_condition_fn": is_transient}


def missing_inputs(console: Console, paths: Iterable[str], what: str = "input file(s)") -> bool:
    """Print one clear line and return True when any of the files does not exist."""
    missing = [path for path in paths if not Path(path).is_file()]
    if missing:
        print_error(console, f"{what} not found: {', '.join(missing)}")
    return bool(missing)
