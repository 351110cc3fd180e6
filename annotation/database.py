"""Label Studio's database: SQLite in its data folder (the embedded default), or PostgreSQL for teams,
which Label Studio advises once several people label at once (docs/labelling-operations.md):

- `sqlite`: the default;
- `postgresql`: a PostgreSQL server of its own, Debian's, started here in a data folder of its own on a
  loopback port, with a generated password (kept private in the server's state folder);
- `postgresql://USER:PASSWORD@HOST:PORT/NAME`: a server the team runs.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from knowref60k.core.errors import UserError
from knowref60k.labelling.labelstudio_table import POSTGRESQL, SQLITE, database_problem

# The local PostgreSQL listens this many ports above its Label Studio.
POSTGRES_PORT_OFFSET = 20
ROLE = DATABASE = "labelstudio"
# PostgreSQL refuses to run as root; as root, its data lives where Debian's package keeps it, owned by the
# `postgres` account the package made.
ROOT_DATA_HOME = Path("/var/lib/postgresql/knowref60k")


def database_environment(database: str, state_dir: Path, port: int) -> dict[str, str]:
    """The variables that point Label Studio at its database, starting a local PostgreSQL if asked."""
    if problem := database_problem(database):
        raise UserError(problem)
    if database == SQLITE:
        return {"DJANGO_DB": "sqlite"}
    url = (
        LocalPostgres(state_dir, port + POSTGRES_PORT_OFFSET).start() if database == POSTGRESQL else database
    )
    parts = urlsplit(url)
    return {
        "DJANGO_DB": "default",
        "POSTGRE_NAME": parts.path.strip("/"),
        "POSTGRE_USER": unquote(parts.username or "postgres"),
        "POSTGRE_PASSWORD": unquote(parts.password or ""),
        "POSTGRE_HOST": parts.hostname or "localhost",
        "POSTGRE_PORT": str(parts.port or 5432),
    }


def postgres_bin() -> Path:
    """The folder of Debian's PostgreSQL programs (the newest installed)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise UserError(
            "PostgreSQL is not installed: `make postgresql` (apt-get install postgresql, as root)"
        )
    return found[-1].parent


@dataclass(frozen=True)
class LocalPostgres:
    """A PostgreSQL server of a Label Studio's own, on 127.0.0.1:`port`."""

    state_dir: Path
    port: int

    @property
    def data_dir(self) -> Path:
        if os.geteuid() != 0:
            return self.state_dir / "postgres"
        return ROOT_DATA_HOME / hashlib.sha256(str(self.state_dir.resolve()).encode()).hexdigest()[:16]

    @property
    def password_file(self) -> Path:
        return self.state_dir / "postgres-password"

    def url(self) -> str:
        password = quote(self.password_file.read_text(encoding="utf-8").strip())
        return f"postgresql://{ROLE}:{password}@127.0.0.1:{self.port}/{DATABASE}"

    def start(self) -> str:
        """Make the cluster and its database on first use, start it unless it runs; returns its URL."""
        made = (self.data_dir / "PG_VERSION").exists()
        if not made:
            self._initialise()
        if self._run("pg_ctl", "status", "-D", str(self.data_dir), check=False).returncode != 0:
            options = f"-p {self.port} -k {self.data_dir} -c listen_addresses=127.0.0.1"
            log = str(self.data_dir / "server.log")
            self._run(
                "pg_ctl", "start", "-w", "-t", "120", "-D", str(self.data_dir), "-l", log, "-o", options
            )
        if not made:
            password = self.password_file.read_text(encoding="utf-8").strip()
            self._run(
                "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE, DATABASE,
                env={**os.environ, "PGPASSWORD": password},
            )  # fmt: skip
        return self.url()

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-m", "fast", "-D", str(self.data_dir), check=False)

    def remove(self) -> None:
        """Stop it and delete its data (for throw-away servers: tests, benchmarks)."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def _initialise(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        password = secrets.token_hex(16)
        descriptor = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(password)
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            subprocess.run(["chown", "postgres:postgres", str(self.data_dir.parent)], check=True)
        # The password reaches initdb in a file only its server's account can read, never on a command line.
        pwfile = self.data_dir.parent / f".{self.data_dir.name}.password"
        descriptor = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(password)
        if os.geteuid() == 0:
            subprocess.run(["chown", "postgres:postgres", str(pwfile)], check=True)
        try:
            self._run(
                "initdb", "-D", str(self.data_dir), "-U", ROLE, "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8",
            )  # fmt: skip
        finally:
            pwfile.unlink()

    def _run(
        self, program: str, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [str(postgres_bin() / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if check and done.returncode != 0:
            raise UserError(f"PostgreSQL {program} failed ({done.returncode}): {done.stderr.strip()[:300]}")
        return done
