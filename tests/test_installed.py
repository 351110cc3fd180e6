"""The package as a user installs it: the wheel, with the project's locks, in a fresh environment, run
from an empty folder. It finds its data inside itself, keeps a user's state in the working folder, and
gives the same candidates and items as the checkout for the same input."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from knowref60k.ingest.readers import iter_line_chunks, iter_lines, open_input
from knowref60k_annotation.server import Server
from tests.conftest import REPO, free_port, shared_file

# What a user installs: the locks of the package's dependencies, then the wheel without dependencies.
MAIN_LOCK = "requirements.lock"
HASHED_LOCKS = ("requirements-crowd.lock", "requirements-encoder.lock", "requirements-model.lock")
# Imported only by model evaluation, which runs in an environment made from this lock (`make setup-eval`).
EVAL_LOCK = "requirements-eval.lock"
EVAL_ONLY = ("knowref60k/evaluate/", "knowref60k/release/winogrande_form.py")
# The code, each folder installed under the project's name, and its data.
SOURCE_FOLDERS = ("knowref60k", "annotation", "flows", "data")
# Gold sentences judged valid, taken with their comments from the head of the 1M sample: enough to give
# items at the default validity threshold, few enough to extract in seconds.
VALID_GOLD_COMMENTS = 40


def pinned(lock: str) -> set[str]:
    names = re.findall(r"^([A-Za-z0-9_.\-\[\]]+)==", (REPO / lock).read_text(), re.M)
    return {normalised(name.split("[")[0]) for name in names}


def normalised(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def third_party_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {
        name for name in found if name not in sys.stdlib_module_names and not name.startswith("knowref60k")
    }


def test_every_package_the_code_imports_is_pinned_in_the_lock_that_installs_it() -> None:
    """The code's imports (Label Studio's application runs in Label Studio's own environment: left out)
    against the locks: the installed package's in its locks, model evaluation's in its own."""
    distributions = packages_distributions()
    installed = pinned(MAIN_LOCK).union(*(pinned(lock) for lock in HASHED_LOCKS))
    missing = []
    for folder in ("knowref60k", "annotation", "flows"):
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = str(path.relative_to(REPO))
            if "labelstudio_app" in path.parts:
                continue
            locked = pinned(EVAL_LOCK) | installed if relative.startswith(EVAL_ONLY) else installed
            for module in third_party_imports(path):
                # Not installed here (model evaluation's packages): the module is named for its package.
                names = distributions.get(module, [module])
                if not any(normalised(name) in locked for name in names):
                    missing.append(f"{relative}: {module}")
    assert missing == []
    assert "threadpoolctl" in pinned(MAIN_LOCK)  # imported by every extraction worker


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the source (setuptools builds inside the project)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    for folder in SOURCE_FOLDERS:
        ignored = shutil.ignore_patterns("__pycache__", "releases")
        shutil.copytree(REPO / folder, source / folder, ignore=ignored)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root), str(source)]
    subprocess.run(build, check=True, capture_output=True, timeout=600, cwd=root)
    (made,) = root.glob("knowref60k-*.whl")
    return made


@pytest.mark.integration
def test_the_wheel_holds_the_projects_names_its_data_and_its_entry_points(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"knowref60k", "knowref60k_annotation", "knowref60k_flows", "knowref60k_data"}
    assert {
        "knowref60k_annotation/labelstudio_app/labelstudio_contract.py",
        "knowref60k_annotation/screening_config.xml",
        "knowref60k_annotation/resolution_guidelines.html",
        "knowref60k_annotation/requirements-labelstudio.lock",
        "knowref60k/release/card_template.md",
        "knowref60k_data/scorer/validity_model.json",
        "knowref60k_data/scorer/calibration.json",
        "knowref60k_data/scorer/span_adapter.safetensors",
        "knowref60k_data/names/female.tsv",
        "knowref60k_data/eval/resolution_controls.jsonl",
    } <= set(names)
    shipped = {name.removeprefix("knowref60k_data/") for name in names if name.startswith("knowref60k_data/")}
    tracked = git_files("data")
    assert shipped == {name.removeprefix("data/") for name in tracked}
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[knowref60k.commands]" in text and "knowref60k_flows.cli:add_commands" in text


def git_files(folder: str) -> set[str]:
    listed = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True, check=True)
    return set(listed.stdout.split())


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the locks and the wheel, as docs/installing.md says (uv, as `make setup`
    does, when it is there: the same locks, from its cache)."""
    environment = tmp_path_factory.mktemp("installed") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True, timeout=300)
    python = environment / "bin" / "python"
    uv = Path(sys.executable).parent / "uv"
    install = (
        [str(uv), "pip", "install", "-q", "-p", str(python)]
        if uv.exists()
        else [str(python), "-m", "pip", "install", "-q"]
    )
    hashed = [argument for lock in HASHED_LOCKS for argument in ("-r", str(REPO / lock))]
    for arguments in (
        ["-r", str(REPO / MAIN_LOCK)],
        ["--no-deps", "--require-hashes", *hashed],
        ["--no-deps", str(wheel)],
    ):
        subprocess.run([*install, *arguments], check=True, capture_output=True, timeout=900)
    return environment


def user_environment(installed: Path) -> dict[str, str]:
    """A user's shell: the environment's commands first, none of the suite's settings."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("KNOWREF60K_", "LABEL_STUDIO_", "PYTHON", "PREFECT_"))
    }
    return {**kept, "PATH": f"{installed / 'bin'}{os.pathsep}{kept.get('PATH', '')}", "DO_NOT_TRACK": "1"}


def run(command: list[str], folder: Path, environment: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(
        command, cwd=folder, env=environment, capture_output=True, text=True, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, f"{' '.join(command)}:\n{output}"
    return done.stdout


HELP_OF_EVERY_COMMAND = """
import json, typer.main
from typer.testing import CliRunner
from knowref60k.cli.app import app

def walk(command, path):
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from walk(sub, [*path, name])

answers = {}
for path in walk(typer.main.get_command(app), []):
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="knowref60k")
    answers[" ".join(path)] = [result.exit_code, result.output.splitlines()[:1]]
print(json.dumps(answers))
"""


@pytest.mark.integration
def test_every_command_of_the_installed_package_answers_help(installed: Path, tmp_path: Path) -> None:
    environment = user_environment(installed)
    answers = orjson.loads(
        run([str(installed / "bin" / "python"), "-c", HELP_OF_EVERY_COMMAND], tmp_path, environment)
    )
    assert {"", "extract", "prepare", "run", "demo", "annotate push", "labelstudio setup", "release"} <= set(
        answers
    )
    broken = {
        path: answer
        for path, answer in answers.items()
        if answer[0] != 0 or not answer[1][0].startswith("Usage: knowref60k")
    }
    assert broken == {}
    assert list(tmp_path.iterdir()) == []  # asking for help writes nothing


def valid_gold_comments(target: Path) -> int:
    """The comments of the first VALID_GOLD_COMMENTS gold sentences judged valid, as NDJSON."""
    gold = [
        orjson.loads(line)
        for line in (REPO / "data" / "eval" / "reddit_gold.jsonl").read_bytes().splitlines()
    ]
    wanted = sorted(
        {
            row["line_number"]
            for row in gold
            if row["label"] == "valid" and row["source_file"] == "RC_sample_1M.zst"
        }
    )[:VALID_GOLD_COMMENTS]
    source = shared_file("data/reddit/RC_sample_1M.zst")
    written = 0
    with open_input(source) as (_raw, stream), target.open("wb") as handle:
        for chunk in iter_line_chunks(stream, source.name):
            for number, line in iter_lines(chunk):
                if number in wanted:
                    handle.write(line + b"\n")
                    written += 1
            if written == len(wanted):
                return written
    return written


def extract_and_prepare(knowref60k: str, folder: Path, comments: Path, environment: dict[str, str]) -> None:
    folder.mkdir()
    shutil.copy(comments, folder / comments.name)
    run(
        [knowref60k, "extract", comments.name, "--out", "run/candidates", "--workers", "2"],
        folder,
        environment,
    )
    candidates = sorted(
        str(p.relative_to(folder)) for p in (folder / "run" / "candidates").glob("*.candidates.parquet")
    )
    run([knowref60k, "prepare", *candidates, "--out", "run/items"], folder, environment)


def outputs(folder: Path) -> dict[str, bytes]:
    run_dir = folder / "run"
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*.parquet"))}


@pytest.mark.integration
def test_installed_it_runs_from_an_empty_folder_as_the_checkout_does(
    installed: Path, label_studio_template: Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """extract and prepare give the checkout's bytes; then Label Studio's environment made from the shipped
    lock, a server the installed package starts, push, simulated resolvers, collect and a release, every
    file of it in the user's folder."""
    root = tmp_path_factory.mktemp("same-input")
    comments = root / "gold-comments.ndjson"
    assert valid_gold_comments(comments) == VALID_GOLD_COMMENTS
    user, folder = user_environment(installed), root / "installed"
    extract_and_prepare(str(installed / "bin" / "knowref60k"), folder, comments, user)
    checkout = {**os.environ, "DO_NOT_TRACK": "1"}
    extract_and_prepare(
        str(Path(sys.executable).parent / "knowref60k"), root / "checkout", comments, checkout
    )
    made, expected = outputs(folder), outputs(root / "checkout")
    assert made.keys() == expected.keys() and any(name.startswith("items/") for name in made)
    assert made == expected
    kept = label_and_release(installed, folder, label_studio_template, user)
    items = sum(
        pq.read_metadata(folder / "run" / name).num_rows for name in made if name.startswith("items/")
    )
    assert 0 < kept <= items


def label_and_release(installed: Path, folder: Path, template: Server, user: dict[str, str]) -> int:
    """The labelling loop from the installed command line, in `folder`; the release's kept items."""
    knowref60k = str(installed / "bin" / "knowref60k")
    run([knowref60k, "labelstudio", "setup", "--no-compile", "--no-migrate"], folder, user)
    assert (folder / ".venv-labelstudio" / "bin" / "label-studio").exists()
    # The template's migrated database and admin: a first start on a new database takes minutes.
    shutil.copytree(template.data_dir, folder / ".labelstudio" / "data")
    login = template.settings
    env_file = folder / ".env"
    env_file.write_text(
        f"LABEL_STUDIO_URL=http://127.0.0.1:{free_port()}\nLABEL_STUDIO_USERNAME={login.username}\n"
        f"LABEL_STUDIO_PASSWORD={login.password}\nLABEL_STUDIO_API_KEY={login.api_key}\n"
    )
    env_file.chmod(0o600)
    (folder / "labelling.toml").write_text("[labelling]\nscreening = false\n")
    config = ["--config", "labelling.toml"]
    run([knowref60k, "labelstudio", "server", "start"], folder, user)
    try:
        items = sorted(str(p.relative_to(folder)) for p in (folder / "run" / "items").glob("*.items.parquet"))
        run([knowref60k, "annotate", "push", *items, *config], folder, user)
        simulate = ["annotate", "simulate", "--stage", "resolution", "--accuracy", "1.0", *config]
        run([knowref60k, *simulate], folder, user)
        run([knowref60k, "annotate", "collect", *config], folder, user)
        release = [
            "release",
            "--version",
            "v1",
            "--run",
            "run",
            "--votes",
            "output/annotation/votes.parquet",
            *config,
        ]
        run([knowref60k, *release], folder, user)
    finally:
        run([knowref60k, "labelstudio", "server", "stop"], folder, user)
    manifest = orjson.loads((folder / "data" / "releases" / "v1" / "manifest.json").read_bytes())
    made = {path.name for path in folder.iterdir()}
    assert made == {
        ".env",
        ".labelstudio",
        ".venv-labelstudio",
        "labelling.toml",
        "run",
        "output",
        "data",
    } | {"gold-comments.ndjson"}
    return int(sum(manifest["splits"].values()))
