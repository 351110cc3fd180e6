"""Label Studio's own Python environment, made from the hashed lock shipped with the package: its server
pins packages Prefect cannot live with (docs/decisions.md, "Label Studio"), so it never shares ours."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Collection
from importlib.resources import files
from pathlib import Path

from knowref60k.core.errors import UserError
from knowref60k.core.paths import home

logger = logging.getLogger(__name__)

PROGRAM_VARIABLE = "KNOWREF60K_LABELSTUDIO_BIN"
LOCK = "requirements-labelstudio.lock"
# Written last, with the lock's digest: an environment whose install was interrupted is made again.
MARKER = ".installed"


def lock_file() -> Path:
    return Path(str(files("knowref60k_annotation") / LOCK))


def default_environment() -> Path:
    return home() / ".venv-labelstudio"


# Label Studio offline and silent: no usage data, no error reports, no version check.
QUIET_VARIABLES = {
    "COLLECT_ANALYTICS": "false",
    "SENTRY_DSN": "",
    "FRONTEND_SENTRY_DSN": "",
    "LATEST_VERSION_CHECK": "false",
}
# Label Studio also reads these plain names; a stray USERNAME or PORT must not leak into it.
LEAKY_VARIABLES = ("USERNAME", "PASSWORD", "PORT", "HOST")


def own_environment(excluding: Collection[str] = ()) -> dict[str, str]:
    """This process's environment variables without those Label Studio would misread, nor `excluding`."""
    left_out = {*LEAKY_VARIABLES, *excluding}
    return {key: value for key, value in os.environ.items() if key not in left_out}


def label_studio_program() -> Path:
    """The `label-studio` command the server runs: KNOWREF60K_LABELSTUDIO_BIN, else the one of
    `.venv-labelstudio/` in the user's home folder (`knowref60k labelstudio setup` makes it)."""
    return Path(os.environ.get(PROGRAM_VARIABLE) or default_environment() / "bin" / "label-studio")


def _installer(python: Path) -> list[str]:
    """uv where it is installed (about ten times faster on a fresh machine), else the environment's pip."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv:
        return [uv, "pip", "install", "-q", "-p", str(python)]
    return [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]


def make_environment(environment: Path, compile_modules: bool = True) -> bool:
    """Make (or complete) Label Studio's environment in `environment` from the shipped lock, every package
    checked against its hash; `compile_modules`: byte-compile it now, not on each server's first start.
    False when it was already made from this lock."""
    lock = lock_file()
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    marker = environment / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == digest:
        return False
    python = environment / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(environment)] if not python.exists() else None,
        [*_installer(python), "--require-hashes", "-r", str(lock)],
        [str(python), "-m", "compileall", "-q", "-j", "0", str(environment / "lib")]
        if compile_modules
        else None,
    ]
    for step in filter(None, steps):
        logger.info("running %s", " ".join(step))
        done = subprocess.run(step, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise UserError(f"{environment}: making Label Studio's environment failed at `{step[0]}`: {last}")
    marker.write_text(digest + "\n", encoding="utf-8")
    return True


def installed_label_studio(label_studio: Path) -> str | None:
    """The version of Label Studio installed in the environment of its `label_studio` command, read
    from the distribution's metadata folder (no process started); None when there is none."""
    found = in_its_site_packages(label_studio, "label_studio-*.dist-info")
    return found.name.removeprefix("label_studio-").removesuffix(".dist-info") if found else None


def in_its_site_packages(label_studio: Path, pattern: str) -> Path | None:
    """What matches `pattern` in the site-packages of the environment of the `label-studio` command
    (the newest Python's, should there be several); None when nothing does."""
    found = sorted(
        label_studio.parent.parent.glob(f"lib/python*/site-packages/{pattern}"),
        key=lambda path: [int(number) for number in re.findall(r"\d+", path.parent.parent.name)],
    )
    return found[-1] if found else None
