"""The Label Studio connection's settings as `knowref60k config` shows them (the `knowref60k.settings`
entry point): where the server lives and how to log in, from the environment, else `.env`, else the
default. They are not in the TOML config: `.env` holds secrets, the config file is shared."""

from __future__ import annotations

import os
from pathlib import Path

from knowref60k.labelling.labelstudio_table import without_password
from knowref60k.settings.effective import Setting

from .environment import PROGRAM_VARIABLE, label_studio_program
from .server import CONNECTION_MAX_AGE, DEFAULT_CONNECTION_MAX_AGE
from .settings import (
    DEFAULT_PORT,
    DEFAULT_PROJECT,
    DEMO_PORT,
    ENV_FILE_VARIABLE,
    default_demo_state_dir,
    default_state_dir,
    env_file_path,
    read_env_file,
)


def _connection() -> tuple[tuple[str, str, str | None, bool], ...]:
    """(setting, its variable, the default, whether it is a secret), in the order they are shown; the
    defaults in the user's home folder, as the command that shows them resolved it."""
    return (
        ("url", "LABEL_STUDIO_URL", f"http://127.0.0.1:{DEFAULT_PORT}", False),
        ("username", "LABEL_STUDIO_USERNAME", None, False),
        ("password", "LABEL_STUDIO_PASSWORD", None, True),
        ("api_key", "LABEL_STUDIO_API_KEY", None, True),
        ("project", "KNOWREF60K_PROJECT", DEFAULT_PROJECT, False),
        ("state_dir", "KNOWREF60K_LABELSTUDIO_DIR", str(default_state_dir()), False),
        ("receiver_url", "KNOWREF60K_RECEIVER_URL", "(beside the server, 10 ports up)", False),
        ("connection_max_age", CONNECTION_MAX_AGE, str(DEFAULT_CONNECTION_MAX_AGE), False),
        ("label_studio", PROGRAM_VARIABLE, str(label_studio_program()), False),
        ("demo_url", "KNOWREF60K_DEMO_LABEL_STUDIO_URL", f"http://127.0.0.1:{DEMO_PORT}", False),
        ("demo_state_dir", "KNOWREF60K_DEMO_LABELSTUDIO_DIR", str(default_demo_state_dir()), False),
    )


UNSET = "not set (`make labelstudio` writes it to .env)"
# Only these are read from `.env`; the others from the environment alone.
IN_ENV_FILE = {"LABEL_STUDIO_URL", "LABEL_STUDIO_USERNAME", "LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_API_KEY"}


def connection_settings(config_path: Path | None = None) -> list[Setting]:
    """Each connection setting with its origin; a secret shows as `***`, so does a URL's password."""
    env_file_name = env_file_path()
    env_file = read_env_file(env_file_name)
    env_file_origin = f"environment {ENV_FILE_VARIABLE}" if os.environ.get(ENV_FILE_VARIABLE) else "default"
    rows = [Setting("connection", "env_file", str(env_file_name), env_file_origin)]
    for key, variable, default, secret in _connection():
        value: str | None = default
        origin = "default" if default is not None else UNSET
        if os.environ.get(variable):
            value, origin = os.environ[variable], f"environment {variable}"
        elif variable in IN_ENV_FILE and env_file.get(variable):
            value, origin = env_file[variable], f"file {env_file_name}"
        shown = "***" if secret and value else without_password(value) if value else value
        rows.append(Setting("connection", key, shown, origin))
    return rows
