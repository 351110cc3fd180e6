"""Start and stop a local Label Studio server (its own virtual environment, loopback only, SQLite).

knowref60k labelstudio server start|stop|status [--demo]
knowref60k labelstudio check
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from knowref60k.core.errors import UserError
from knowref60k.core.io import private_dir
from knowref60k.labelling.labelstudio_table import POSTGRESQL, SQLITE

from .database import POSTGRES_PORT_OFFSET, LocalPostgres, database_environment
from .environment import (
    QUIET_VARIABLES,
    in_its_site_packages,
    installed_label_studio,
    label_studio_program,
    own_environment,
)
from .labelstudio_app.labelstudio_contract import (
    HEALTH_PATH,
    INIT_COMMAND,
    READ_FROM_VERSION,
    RECEIVER_VARIABLE,
    SETTINGS_MODULE,
)
from .migrated import seed_database
from .settings import Settings, receiver_url, state_lock
from .webhooks import banned_networks

# Migrating a new database (migrated.py, or PostgreSQL's) takes minutes on a busy machine.
START_TIMEOUT = 600.0
# Threads of each gunicorn worker on PostgreSQL: requests mostly wait on the database.
THREADS = 8
# Seconds a worker keeps an idle connection open: longer than the clients keep one (httpx, under the
# SDK and the annotator sessions: 5 s), so that a client never sends on a connection the server is
# closing at that moment (gunicorn's gthread worker then resets it: "Connection reset by peer").
KEEP_ALIVE = 30
# Label Studio's application with persistent database connections (a folder of its own on its path:
# the modules of `annotation/` would shadow Label Studio's apps of the same names, such as `tasks`).
APPLICATION_DIR = Path(__file__).parent / "labelstudio_app"
APPLICATION_MODULE = "knowref60k_labelstudio"
# Every assumption about Label Studio's internals, checked inside its own environment (`check_contract`).
CONTRACT = APPLICATION_DIR / "labelstudio_contract.py"
# Seconds it keeps a database connection open between requests (0: Django's default, one per request).
CONNECTION_MAX_AGE = "KNOWREF60K_DB_CONN_MAX_AGE"
DEFAULT_CONNECTION_MAX_AGE = 300
# The name of the vote receiver's pid and log files (receiver.py), stopped with its server.
RECEIVER = "receiver"
# On several processes, the vote receiver's requests go to a Label Studio worker of their own, on this
# port beside the server's: queued behind the annotators' requests, a vote took seconds to settle.
SETTLE_PORT_OFFSET = 30
SETTLE_SERVER = "settle-server"


@dataclass(frozen=True)
class Background:
    """A server process of ours in its own session: its pid and log files in the state folder."""

    settings: Settings
    name: str = "server"
    title: str = "server"

    @property
    def state_dir(self) -> Path:
        return self.settings.state_dir

    @property
    def pid_file(self) -> Path:
        return self.state_dir / f"{self.name}-{self.settings.port}.pid"

    @property
    def log_file(self) -> Path:
        return self.state_dir / f"{self.name}-{self.settings.port}.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text())
            _reap(pid)
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
            return None
        return pid

    def spawn(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start `command` in a session of its own and record its pid; refused while the pid on record is
        alive (it runs but does not answer here: a second one would orphan it)."""
        running = self.pid()
        if running is not None:
            raise RuntimeError(
                f"{self.title} (pid {running}, {self.pid_file}) runs but does not answer here; stop it first"
            )
        private_dir(self.state_dir)
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                command,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.state_dir,
            )
        self.pid_file.write_text(str(process.pid))
        return process

    def wait_healthy(
        self, process: subprocess.Popen[bytes], healthy: Callable[[], bool], timeout: float
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if healthy():
                return
            if process.poll() is not None:
                self.forget(process.pid)
                raise RuntimeError(f"{self.title} exited with code {process.returncode}; see {self.log_file}")
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.title} did not answer within {timeout:.0f} s; see {self.log_file}")

    def forget(self, pid: int) -> None:
        """Remove the pid file if it holds `pid` (a process that ended), never another's."""
        with contextlib.suppress(FileNotFoundError, ValueError):
            if int(self.pid_file.read_text()) == pid:
                self.pid_file.unlink()

    def starting(self) -> AbstractContextManager[None]:
        """One start at a time of this server, across processes: two at once would each spawn one, and
        the loser's exit would leave the winner without its pid file."""
        private_dir(self.state_dir)
        return state_lock(self.settings, f"start-{self.name}-{self.settings.port}")

    def stop(self, timeout: float = 30.0) -> str:
        pid = self.pid()
        if pid is None:
            return f"{self.title} is not running (no live pid file)"
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.pid() is not None:
            time.sleep(0.2)
        if self.pid() is not None:
            os.killpg(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return f"{self.title} (pid {pid}) stopped"


@dataclass(frozen=True)
class Server(Background):
    """A Label Studio instance: its URL, credentials and the folder holding its data, pid and log."""

    name: str = "server"
    title: str = "Label Studio"

    @property
    def data_dir(self) -> Path:
        return self.state_dir / "data"

    def healthy(self) -> bool:
        return _answers(f"{self.settings.url}{HEALTH_PATH}")

    def environment(self) -> dict[str, str]:
        env = own_environment()
        env.update(self.label_studio_variables())
        env[CONNECTION_MAX_AGE] = str(connection_max_age())
        env[RECEIVER_VARIABLE] = receiver_url(self.settings)
        return env

    def label_studio_variables(self) -> dict[str, str]:
        """What this server hands Label Studio (each is in the contract's ENVIRONMENT_VARIABLES)."""
        variables = dict(
            LABEL_STUDIO_BASE_DATA_DIR=str(self.data_dir),
            LABEL_STUDIO_USERNAME=self.settings.username,
            LABEL_STUDIO_PASSWORD=self.settings.password,
            LABEL_STUDIO_USER_TOKEN=self.settings.api_key,
            # The admin token above is a "legacy" token: refused unless enabled on the first start.
            LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
            # Any account can create webhooks and imports by URL: the SSRF guard refuses every private or
            # reserved address but the vote receiver's own.
            SSRF_PROTECTION_ENABLED="true",
            USE_DEFAULT_BANNED_SUBNETS="false",
            USER_ADDITIONAL_BANNED_SUBNETS=",".join(banned_networks(receiver_addresses(self.settings))),
            **QUIET_VARIABLES,
        )
        return variables | database_environment(self.settings.database, self.state_dir, self.settings.port)

    def start(self, timeout: float = START_TIMEOUT) -> str:
        """Start (or find running) and wait until /health answers; returns a line saying which."""
        with self.starting():
            return self._start(timeout)

    def _start(self, timeout: float) -> str:
        if self.healthy():
            note = self.start_settle_worker(self.environment(), timeout) if self.multiprocess else ""
            return f"Label Studio already running at {self.settings.url}{note}"
        if not label_studio_program().exists():
            raise RuntimeError(
                f"{label_studio_program()} not found: `knowref60k labelstudio setup` makes its environment"
            )
        private_dir(self.data_dir.parent)
        private_dir(self.data_dir)
        environment = self.environment()
        self.initialise(environment)
        self.wait_healthy(self.spawn(self.command(), environment), self.healthy, timeout)
        note = self.start_settle_worker(environment, timeout) if self.multiprocess else ""
        started = f"Label Studio started at {self.settings.url} (log: {self.log_file}){note}"
        other_version = version_note(installed_label_studio(label_studio_program()))
        return f"warning: {other_version}\n{started}" if other_version else started

    @property
    def multiprocess(self) -> bool:
        """Served by several processes: on PostgreSQL unless `workers` is 1. SQLite takes one writer at a
        time anyway, so there Label Studio's own single-process server runs."""
        return self.settings.database != SQLITE and self.settings.workers > 1

    def settle_worker(self) -> Background:
        """Label Studio's worker for the vote receiver's requests (the same database), beside the server."""
        port = self.settings.port + SETTLE_PORT_OFFSET
        settings = dataclasses.replace(self.settings, url=f"http://127.0.0.1:{port}")
        return Background(settings, SETTLE_SERVER, "Label Studio's settle worker")

    def start_settle_worker(self, environment: dict[str, str], timeout: float) -> str:
        """Start the receiver's worker unless it runs. Returns "", or why it does not run: the receiver
        then settles through the server itself, slower under load but complete."""
        worker = self.settle_worker()
        if serves(worker):
            return ""
        fallback = "the vote receiver settles through the server"
        if _answers(f"{worker.settings.url}{HEALTH_PATH}"):
            return f"; port {worker.settings.port} answers for another server, so {fallback}"
        command = Server(worker.settings).command(workers=1)
        try:
            worker.wait_healthy(worker.spawn(command, environment), lambda: serves(worker), timeout)
        except RuntimeError as error:
            return f"; {error}, so {fallback}"
        return ""

    def command(self, workers: int | None = None) -> list[str]:
        """Label Studio's application with the pipeline's access gate (knowref60k_gate.py) under gunicorn,
        as its production image runs it (docs/labelling-operations.md): `workers` processes when
        multiprocess, else one (SQLite takes one writer at a time)."""
        workers = workers or (self.settings.workers if self.multiprocess else 1)
        return [
            str(label_studio_program().parent / "gunicorn"),
            f"{APPLICATION_MODULE}:application",
            "--env",
            f"DJANGO_SETTINGS_MODULE={SETTINGS_MODULE}",
            # Label Studio imports its apps by their own names (`projects`, `tasks`), as `start` does.
            *("--pythonpath", f"{label_studio_package_dir()},{APPLICATION_DIR}"),
            *("--bind", f"127.0.0.1:{self.settings.port}"),
            *("--workers", str(workers), "--worker-class", "gthread"),
            *("--threads", str(THREADS), "--timeout", "120", "--keep-alive", str(KEEP_ALIVE)),
        ]

    def initialise(self, environment: dict[str, str]) -> None:
        """What `label-studio start` does before it serves: apply the migrations (a new SQLite data folder
        starts from the environment's migrated database: migrated.py), make the admin login."""
        with self.log_file.open("ab") as log:
            if self.settings.database == SQLITE:
                seed_database(label_studio_program(), self.data_dir, START_TIMEOUT)
            try:
                done = subprocess.run(
                    [str(label_studio_program()), *INIT_COMMAND],
                    env=environment,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=self.state_dir,
                    timeout=START_TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                raise RuntimeError(
                    f"label-studio init did not finish within {START_TIMEOUT:.0f} s; see {self.log_file}"
                ) from None
        if done.returncode:
            raise RuntimeError(f"label-studio init exited with code {done.returncode}; see {self.log_file}")

    def stop(self, timeout: float = 30.0) -> str:
        """Stop the server and its vote receiver (receiver.py), when that runs."""
        receiver = Background(self.settings, RECEIVER, "vote receiver")
        stopped = receiver.stop(timeout) if receiver.pid() is not None else None
        settle_worker = self.settle_worker()
        if settle_worker.pid() is not None:
            settle_worker.stop(timeout)
        said = super().stop(timeout)
        if self.settings.database == POSTGRESQL:
            LocalPostgres(self.state_dir, self.settings.port + POSTGRES_PORT_OFFSET).stop()
        return f"{said}; {stopped}" if stopped else said


def settle_url(settings: Settings) -> str:
    """Where the vote receiver sends its requests: Label Studio's settle worker where one answers, else
    the server itself (one process, or a server started without it)."""
    server = Server(settings)
    worker = server.settle_worker()
    return worker.settings.url if server.multiprocess and serves(worker) else settings.url


def serves(process: Background) -> bool:
    """Our process, by its pid file, answers on its port (not another server that took the port)."""
    return process.pid() is not None and _answers(f"{process.settings.url}{HEALTH_PATH}")


def connection_max_age() -> int:
    """The environment's connection lifetime for Label Studio's application, else the default."""
    given = os.environ.get(CONNECTION_MAX_AGE, "").strip()
    if not given:
        return DEFAULT_CONNECTION_MAX_AGE
    if not given.isdigit():
        raise UserError(f"{CONNECTION_MAX_AGE} must be a whole number of seconds (0 or more), not {given!r}")
    return int(given)


def version_note(installed: str | None) -> str | None:
    """One line when the installed Label Studio is not the release the contract was read from, which
    requirements-labelstudio.lock pins; None when it is."""
    if installed == READ_FROM_VERSION:
        return None
    return (
        f"Label Studio {installed or 'is not installed'}{' is installed' if installed else ''}, the pipeline "
        f"is built on {READ_FROM_VERSION} (requirements-labelstudio.lock): `knowref60k labelstudio check` "
        "lists the assumptions about it that no longer hold"
    )


def check_contract() -> int:
    """Check every assumption of the contract against the installed Label Studio, in its own environment
    (`-P`: the modules beside the contract must not shadow its apps); its lines printed as they come."""
    if not label_studio_program().exists():
        raise RuntimeError(
            f"{label_studio_program()} not found: `knowref60k labelstudio setup` makes its environment"
        )
    python = label_studio_program().parent / "python"
    installed = installed_label_studio(label_studio_program())
    if installed is None or not python.exists():
        raise RuntimeError(
            f"{label_studio_program()} is not the command of a Label Studio environment (no label-studio "
            f"installed beside it, or no {python}): run `knowref60k labelstudio setup`, or point "
            "KNOWREF60K_LABELSTUDIO_BIN at one"
        )
    note = version_note(installed)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return subprocess.run([str(python), "-P", str(CONTRACT)], check=False).returncode


def label_studio_package_dir() -> Path:
    """The `label_studio` package in Label Studio's own environment."""
    found = in_its_site_packages(label_studio_program(), "label_studio")
    if found is None:
        raise RuntimeError(
            f"no label_studio package beside {label_studio_program()}: run `knowref60k labelstudio setup`"
        )
    return found


def receiver_addresses(settings: Settings) -> set[str]:
    """The addresses the vote receiver's host name resolves to (none when it does not resolve: then the
    server's guard refuses the webhook, and the push says so)."""
    host = urlsplit(receiver_url(settings)).hostname or ""
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except (socket.gaierror, UnicodeError):
        return set()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _reap(pid: int) -> None:
    """Collect a server that exited while this process is its parent: a zombie would look alive."""
    with contextlib.suppress(ChildProcessError):  # not our child, or already collected
        os.waitpid(pid, os.WNOHANG)
