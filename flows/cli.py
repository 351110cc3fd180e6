"""The flows' commands in `knowref60k` (the `knowref60k.commands` entry point): each runs a Prefect flow
and takes that flow's own arguments (`knowref60k run --help`)."""

from __future__ import annotations

from pathlib import Path

import typer

from knowref60k.cli.common import add_forwarded

FLOW_COMMANDS = {
    "run": (
        "pipeline",
        "Extract, de-duplicate and perturb dumps (--label-studio: and push them) under Prefect.",
    ),
    "demo": ("demo", "The whole loop with simulated annotators, ending in a release."),
    "serve": ("serve", "A local Prefect server with scheduled deployments watching a folder of dumps."),
}
STEP_COMMANDS = {
    "annotate": ("annotate", "push | sync | collect: the labelling loop under Prefect."),
    "release": ("release", "Collect the votes and cut a release under Prefect."),
    "overlap": ("overlap", "Index corpora for the overlap audit under Prefect."),
    "scale": ("scale", "Shard a dump and extract it on Dask."),
}


def prefect_defaults() -> dict[str, str]:
    """What the flows run Prefect with unless told otherwise (`make run` sets the same): its home in the
    working folder, not the user's `~/.prefect`, and no usage data sent, by the server or the client."""
    home = Path.cwd() / ".prefect"
    home.mkdir(mode=0o700, exist_ok=True)
    return {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}


def add_commands(app: typer.Typer) -> None:
    for name, (module, summary) in FLOW_COMMANDS.items():
        add_forwarded(app, name, f"knowref60k_flows.{module}:main", summary, prefect_defaults)
    steps = typer.Typer(
        help="One step of the pipeline as a Prefect flow.", no_args_is_help=True, rich_markup_mode=None
    )
    for name, (module, summary) in STEP_COMMANDS.items():
        add_forwarded(steps, name, f"knowref60k_flows.{module}:main", summary, prefect_defaults)
    app.add_typer(steps, name="flow")
