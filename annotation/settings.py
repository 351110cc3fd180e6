"""Where the local Label Studio lives and how to log in: from the environment, else a `.env` file.

`.env` (git-ignored, mode 600) is written on first use with a random admin password and API token,
so nothing secret is ever committed and a second start reuses the same credentials.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from knowref60k.core.errors import UserError
from knowref60k.core.paths import home
from knowref60k.labelling.labelstudio_table import DEFAULT_WORKERS, load_labelstudio_config

ENV_FILE_VARIABLE = "KNOWREF60K_ENV_FILE"
DEFAULT_PORT = 8080
DEFAULT_PROJECT = "KnowRef-60K pronoun resolution"
DEMO_PORT = DEFAULT_PORT + 1
DEMO_PROJECT = "knowref60k demo (simulated annotators)"
# The vote receiver (receiver.py) listens beside its Label Studio, this many ports up.
RECEIVER_PORT_OFFSET = 10
SECRET_HEADER = "X-Knowref60k-Secret"
WEBHOOK_ACTIONS = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED")
KEYS = ("LABEL_STUDIO_URL", "LABEL_STUDIO_USERNAME", "LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_API_KEY")


def env_file_path() -> Path:
    """The logins' file: KNOWREF60K_ENV_FILE, else `.env` in the user's home folder (`knowref60k --home`)."""
    return Path(os.environ.get(ENV_FILE_VARIABLE) or home() / ".env")


def default_state_dir() -> Path:
    """The local Label Studio's data, log and records: `.labelstudio/` in the user's home folder."""
    return home() / ".labelstudio"


def default_demo_state_dir() -> Path:
    """The demo runs in a Label Studio of its own, so annotators of the real project never see its
    project: `.labelstudio-demo/` in the user's home folder."""
    return home() / ".labelstudio-demo"


@dataclass(frozen=True)
class Settings:
    url: str
    username: str
    password: str
    api_key: str
    project: str = DEFAULT_PROJECT
    # Where this server's data, log and local records (annotator logins, their roles) live.
    state_dir: Path = dataclasses.field(default_factory=default_state_dir)
    # Its database: sqlite, postgresql (a server of its own) or a postgresql:// URL (database.py).
    database: str = "sqlite"
    # Label Studio's worker processes on PostgreSQL (server.py); SQLite always runs one.
    workers: int = DEFAULT_WORKERS

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (443 if parts.scheme == "https" else 80)


@contextmanager
def state_lock(settings: Settings, name: str) -> Iterator[None]:
    """One holder at a time of the server's lock `name`, across processes (the receiver, the periodic
    sync, a push): the others wait for it."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with (settings.state_dir / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read, from its first byte (no moment of umask permissions)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its old mode through O_CREAT
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def read_env_file(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise UserError(f"{path}: Label Studio settings that cannot be read as UTF-8 ({error})") from None
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.strip().startswith("#"):
                values[key.strip()] = value.strip().strip('"').strip("'")
    return values


def write_default_env_file(path: Path, kept: dict[str, str] | None = None) -> dict[str, str]:
    """Write `.env` with fresh secrets, keeping the values of `kept` (a partial `.env`'s)."""
    values = {
        "LABEL_STUDIO_URL": f"http://127.0.0.1:{DEFAULT_PORT}",
        "LABEL_STUDIO_USERNAME": "admin@knowref60k.local",
        "LABEL_STUDIO_PASSWORD": secrets.token_urlsafe(18),
        "LABEL_STUDIO_API_KEY": secrets.token_hex(20),
    }
    values.update({key: value for key, value in (kept or {}).items() if value})
    write_private(
        path,
        (
            "# Local Label Studio credentials, made by knowref60k. Never commit this file.\n"
            + "".join(f"{key}={value}\n" for key, value in values.items())
        ).encode(),
    )
    return values


def load_settings(env_file: Path | None = None, create: bool = False) -> Settings:
    """Environment first, then `.env` (`env_file`, else `env_file_path()`); with `create`, a missing
    `.env` is written with fresh secrets, and a partial one completed (what it holds kept)."""
    env_file = env_file or env_file_path()
    values = read_env_file(env_file)
    from_environment = {key: os.environ[key] for key in KEYS if os.environ.get(key)}
    incomplete = any(not (values.get(key) or from_environment.get(key)) for key in KEYS)
    if create and incomplete:
        if not env_file.parent.is_dir():
            raise UserError(f"{env_file}: its folder does not exist (KNOWREF60K_ENV_FILE names the file)")
        values = write_default_env_file(env_file, values)
    values.update(from_environment)
    values.setdefault("LABEL_STUDIO_URL", f"http://127.0.0.1:{DEFAULT_PORT}")
    missing = [key for key in KEYS if not values.get(key)]
    if missing:
        raise UserError(
            f"Label Studio settings missing: {', '.join(missing)}. "
            f"Run `make labelstudio` (it writes {env_file}, or completes it) or set them in the environment."
        )
    return Settings(
        url=values["LABEL_STUDIO_URL"].rstrip("/"),
        username=values["LABEL_STUDIO_USERNAME"],
        password=values["LABEL_STUDIO_PASSWORD"],
        api_key=values["LABEL_STUDIO_API_KEY"],
        project=os.environ.get("KNOWREF60K_PROJECT", DEFAULT_PROJECT),
        state_dir=Path(os.environ.get("KNOWREF60K_LABELSTUDIO_DIR") or default_state_dir()),
        # Without a config file: the default, or KNOWREF60K_LABELSTUDIO_DATABASE (read where every
        # environment override is, knowref60k.core.config).
        database=load_labelstudio_config(None).database,
    )


def demo_settings(settings: Settings) -> Settings:
    """The demo's Label Studio: the same admin login, its own port (KNOWREF60K_DEMO_LABEL_STUDIO_URL to
    change it) and data folder."""
    url = os.environ.get("KNOWREF60K_DEMO_LABEL_STUDIO_URL") or f"http://127.0.0.1:{DEMO_PORT}"
    state_dir = Path(os.environ.get("KNOWREF60K_DEMO_LABELSTUDIO_DIR") or default_demo_state_dir())
    return dataclasses.replace(settings, url=url.rstrip("/"), project=DEMO_PROJECT, state_dir=state_dir)


def with_config(settings: Settings, config_path: Path | None) -> Settings:
    """The settings with the config file's `[labelstudio]` table applied (the environment's
    KNOWREF60K_LABELSTUDIO_DATABASE winning over the file)."""
    config = load_labelstudio_config(config_path)
    return dataclasses.replace(settings, database=config.database, workers=config.workers)


def receiver_url(settings: Settings) -> str:
    """Where Label Studio sends its webhooks: KNOWREF60K_RECEIVER_URL, else loopback beside the server."""
    explicit = os.environ.get("KNOWREF60K_RECEIVER_URL")
    return (explicit or f"http://127.0.0.1:{settings.port + RECEIVER_PORT_OFFSET}/").rstrip("/") + "/"


# The webhook secret's length in bytes (written as hex).
SECRET_BYTES = 20


def webhook_secret(settings: Settings) -> str:
    """The secret Label Studio sends with each webhook, kept private in the server's state folder and
    made on first use. It is written whole to a file of its own and then linked into place, so that of
    two processes making it at once one wins and both read the whole of it; a secret file that is empty
    or damaged is refused, never taken as the secret."""
    path = settings.state_dir / "webhook-secret"
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        made = settings.state_dir / f".webhook-secret.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(secrets.token_hex(SECRET_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
            os.link(made, path)
        except FileExistsError:
            pass  # another process linked its secret first: that one is read below
        finally:
            made.unlink(missing_ok=True)
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: the webhook secret cannot be read ({error})") from None
    if len(secret) != 2 * SECRET_BYTES or any(c not in "0123456789abcdef" for c in secret):
        raise UserError(
            f"{path}: the webhook secret is empty or damaged; delete the file and start the receiver again "
            "(a new secret is made and sent to Label Studio)"
        )
    return secret
