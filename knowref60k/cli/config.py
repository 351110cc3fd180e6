"""`knowref60k config`: the effective settings, each with where it came from (as `git config
--show-origin` does): the config file and its line, the environment, the cost model, or the default."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from knowref60k.cli.common import user_errors

# Settings the project's other parts keep outside the TOML (Label Studio's address and logins, from the
# environment or `.env`) come through this entry-point group: callables of the config path returning
# `Setting`s; the library names none of them.
SETTINGS_GROUP = "knowref60k.settings"
# Origins line up after settings up to this long; a longer one (a list) is followed by its origin.
ALIGN_AT = 56


def config(
    config_file: Annotated[
        Path | None, typer.Option("--config", help="TOML config file (default: none, the defaults).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per setting.")] = False,
) -> None:
    """Print every setting of every table as the run would use it, with its origin: `file PATH:LINE`,
    `environment NAME`, `cost model` (a level the cost model chose) or `default`."""
    from knowref60k.settings.effective import RunConfig, effective_settings

    with user_errors():
        rows = effective_settings(RunConfig.load(config_file))
        for entry in sorted(entry_points(group=SETTINGS_GROUP), key=lambda entry: entry.name):
            rows += entry.load()(config_file)
    if as_json:
        for row in rows:
            typer.echo(orjson.dumps({**row.__dict__, "value": _plain(row.value)}).decode())
        return
    typer.echo(f"# the settings of {config_file or 'no config file: the defaults and the environment'}")
    settings = [f"{row.table}.{row.key} = {_shown(row.value)}" for row in rows]
    width = min(max(map(len, settings)), ALIGN_AT)
    for setting, row in zip(settings, rows, strict=True):
        typer.echo(f"{setting:<{width}}  {row.origin}")


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return str(value) if isinstance(value, Path) else value


def _shown(value: Any) -> str:
    """A value as TOML writes it."""
    if value is None:
        return "(none)"
    return orjson.dumps(_plain(value)).decode() if not isinstance(value, bool) else str(value).lower()
