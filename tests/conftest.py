from __future__ import annotations

import atexit
import dataclasses
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from knowref60k.core.config import ExtractConfig
from knowref60k.core.stats import StageStats
from knowref60k.extract.cleaning import clean_text
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.extract.pipeline import CandidateExtractor
from knowref60k.ingest.readers import iter_line_chunks, open_input, parse_chunk
from knowref60k.ingest.slicing import write_line_range
from knowref60k_annotation.server import Server
from knowref60k_annotation.settings import Settings

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REDDIT = SHARED / "data" / "reddit"
# Prefect reads these when it is first imported: keep its state inside the repo, and quiet. Each worker
# of a parallel run (pytest-xdist) has a folder of its own: one Prefect database is not shared by two
# ephemeral servers.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
os.environ.setdefault("PREFECT_HOME", str(REPO / ".prefect"))
# The checkout's Label Studio environment (`make test` makes it), whatever folder a test works in.
os.environ.setdefault("KNOWREF60K_LABELSTUDIO_BIN", str(REPO / ".venv-labelstudio" / "bin" / "label-studio"))
if WORKER:
    os.environ["PREFECT_HOME"] = str(Path(os.environ["PREFECT_HOME"]) / f"tests-{WORKER}")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# The default 20 s is not always enough for the ephemeral server on a busy 2-core CI machine.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# One cache folder per test run (knowref60k.core.cache), shared by its workers and the processes they
# start, and removed at its end: every run computes what it caches once, none reads an earlier run's.
if "KNOWREF60K_TEST_CACHE" not in os.environ:
    os.environ["KNOWREF60K_TEST_CACHE"] = tempfile.mkdtemp(prefix="knowref60k-test-cache-")
    atexit.register(shutil.rmtree, os.environ["KNOWREF60K_TEST_CACHE"], ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = os.environ["KNOWREF60K_TEST_CACHE"]


IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Tests that use these need a spaCy pipeline, ../shared or a server: they must be marked integration.
# (A test's fixture names include those its fixtures use: `label_studio` brings the template along.)
HEAVY_FIXTURES = frozenset(
    {"extractor", "reddit_slice", "label_studio_template", "pipeline_run", "evaluation"}
)
_unit_test_running = False


def missing_prerequisite(message: str) -> NoReturn:
    """Skip a test whose prerequisite is missing, except in CI (`CI=true`), where a test not run must
    not pass as green: there it fails."""
    if IN_CI:
        pytest.fail(f"prerequisite missing in CI: {message}", pytrace=False)
    pytest.skip(message)


def shared_file(relative: str) -> Path:
    """A file under ../shared; the test is skipped (failed in CI), saying which file is missing, when it
    is absent."""
    if _unit_test_running:
        pytest.fail("a unit test reads ../shared: mark it @pytest.mark.integration", pytrace=False)
    path = SHARED / relative
    if not path.exists():
        missing_prerequisite(f"shared data missing: {path} (tests read it from ../shared beside the repo)")
    return path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rebuild",
        action="store_true",
        help="run only the full rebuilds of the trained models (`make rebuild-check`), which the suite "
        "leaves out: it checks each rebuild on a slice",
    )


# The longest modules first (of the whole suite, then of the unit tests) in a run without workers. With
# them, pytest-xdist hands out the modules with the most tests first and keeps this order among modules
# with as many: handed out longest first, the evaluation and the scorer's tests ran side by side, and the
# scorer's waited for the gold examples the evaluation was computing (a fresh-clone suite took longer).
LONG_MODULES = (
    "test_evaluation.py",
    "test_scorer.py",
    "test_flows.py",
    "test_receiver.py",
    "test_faults.py",
    "test_debias.py",
    "test_screening_examples.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_integration_marks(items)
    items.sort(
        key=lambda item: (
            LONG_MODULES.index(item.path.name) if item.path.name in LONG_MODULES else len(LONG_MODULES)
        )
    )
    rebuild = bool(config.getoption("--rebuild"))
    chosen = [item for item in items if (item.get_closest_marker("rebuild") is not None) == rebuild]
    left_out = [item for item in items if item not in chosen]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = chosen
    for item in chosen if rebuild else ():
        # A full rebuild takes up to an hour on a slow machine: the limit only stops a hang.
        item.add_marker(pytest.mark.timeout(4 * 3600))


def check_integration_marks(items: list[pytest.Item]) -> None:
    unmarked = [
        item.nodeid
        for item in items
        if HEAVY_FIXTURES & set(getattr(item, "fixturenames", ()))
        and not item.get_closest_marker("integration")
    ]
    if unmarked:
        raise pytest.UsageError(
            "these tests use a spaCy pipeline, ../shared or a server but are not marked integration:\n  "
            + "\n  ".join(unmarked)
        )


@pytest.fixture(autouse=True)
def _unit_tests_stay_light(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test without the integration mark may not load a spaCy pipeline or read ../shared, so that
    `make unit` stays fast and honest."""
    global _unit_test_running
    if request.node.get_closest_marker("integration"):
        yield
        return
    import spacy

    def refuse(*_: object, **__: object) -> NoReturn:
        pytest.fail("a unit test loads a spaCy pipeline: mark it @pytest.mark.integration", pytrace=False)

    monkeypatch.setattr(spacy, "load", refuse)
    # A release's card parses its kept items for the subject baseline: a unit test cuts releases as a
    # machine without a spaCy pipeline does, whose card leaves that baseline out.
    monkeypatch.setattr("knowref60k.release.difficulty.load_parser", lambda _model: None)
    _unit_test_running = True
    try:
        yield
    finally:
        _unit_test_running = False


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In CI every skip fails the run: a green CI means every test ran."""
    if IN_CI and _skipped and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(
        f"skipped tests: {len(_skipped)}"
        + (" (CI=true: a skip fails the run)" if IN_CI and _skipped else "")
        + "".join(f"\n  {nodeid}" for nodeid in _skipped)
    )


@pytest.fixture(scope="session")
def extractor() -> CandidateExtractor:
    """The whole extraction with the real installed spaCy pipeline, loaded once per test session, with the
    rules' person detection (`both`): the tests that use it examine what the rules decide; the default,
    the validity score, is measured on whole files (test_evaluation, test_gold, the flows)."""
    config = ExtractConfig(person_detection="both")
    return CandidateExtractor(config, resolve_model_name(config.model))


def once_per_run(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder that `build` fills once per test run, by whichever worker of a parallel run asks first;
    the others wait for it (a lock) and read it. A build that fails leaves nothing, so the next asks again."""
    root = factory.getbasetemp().parent if WORKER else factory.getbasetemp()
    folder = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


@pytest.fixture(scope="session")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`knowref60k measure-extraction` (what `make eval` runs) once per test run: its eval.json, read by
    the tests of the recall and person-detection tables, the README's headline numbers and the gold set's
    figures."""
    import orjson

    items = shared_file("data/knowref2019/knowref2019_reddit_items.json")

    def run_eval(out: Path) -> None:
        from typer.testing import CliRunner

        from knowref60k.cli.app import app

        result = CliRunner().invoke(app, ["measure-extraction", "--items", str(items), "--out", str(out)])
        assert result.exit_code == 0, result.output

    payload: dict[str, Any] = orjson.loads(
        (once_per_run(tmp_path_factory, "eval", run_eval) / "eval.json").read_bytes()
    )
    return payload


@pytest.fixture(scope="session")
def reddit_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30,000 real comments from 2015-2019 (RC_sample_1M.zst): enough to yield candidates."""
    source = shared_file("data/reddit/RC_sample_1M.zst")
    target = tmp_path_factory.mktemp("slice") / "RC_sample_slice.zst"
    assert write_line_range(source, target, 600_000, 30_000) == 30_000
    return target


def cleaned_paragraphs(path: Path) -> Iterator[str]:
    """The cleaned paragraphs of every comment of an NDJSON file, in order (lines extraction would
    quarantine are skipped)."""
    with open_input(path) as (_raw, stream):
        for chunk in iter_line_chunks(stream, path.name):
            comments, _quarantined = parse_chunk(chunk, "ndjson", StageStats("lines"))
            for comment in comments:
                yield from clean_text(comment.body)


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """Poll `condition` until it returns something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def use_label_studio(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """Point the command line and the flows at a Label Studio the way a user does: the environment."""
    monkeypatch.setenv("LABEL_STUDIO_URL", settings.url)
    monkeypatch.setenv("LABEL_STUDIO_USERNAME", settings.username)
    monkeypatch.setenv("LABEL_STUDIO_PASSWORD", settings.password)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", settings.api_key)
    monkeypatch.setenv("KNOWREF60K_PROJECT", settings.project)
    monkeypatch.setenv("KNOWREF60K_LABELSTUDIO_DIR", str(settings.state_dir))


def fresh_settings(project: str, state_dir: Path, database: str = "sqlite") -> Settings:
    """Settings for a Label Studio of the suite's own: a free port, new credentials."""
    import secrets

    return Settings(
        url=f"http://127.0.0.1:{free_port()}",
        username="admin@knowref60k.test",
        password=secrets.token_urlsafe(12),
        api_key=secrets.token_hex(20),
        project=project,
        state_dir=state_dir,
        database=database,
    )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def label_studio(label_studio_server: Server) -> Settings:
    return label_studio_server.settings


@pytest.fixture(scope="session")
def label_studio_template(tmp_path_factory: pytest.TempPathFactory) -> Server:
    """A stopped Label Studio whose database is migrated and has its admin, made once per test run from
    the environment's migrated database (`make test`'s set-up makes it); a copy of its data starts in
    seconds."""
    import orjson

    from knowref60k_annotation.environment import label_studio_program

    if not label_studio_program().exists():
        missing_prerequisite(
            f"{label_studio_program()} missing: `make test` installs Label Studio's own environment"
        )

    def migrate(state_dir: Path) -> None:
        settings = fresh_settings("knowref60k test", state_dir)
        template = Server(settings)
        template.start()
        template.stop()
        fields = {**dataclasses.asdict(settings), "state_dir": str(state_dir)}
        (state_dir / "template-settings.json").write_bytes(orjson.dumps(fields))

    state_dir = once_per_run(tmp_path_factory, "labelstudio-template", migrate)
    fields = orjson.loads((state_dir / "template-settings.json").read_bytes())
    return Server(Settings(**{**fields, "state_dir": Path(fields["state_dir"])}))


def server_from_template(template: Server, state_dir: Path) -> Server:
    """A server of its own (a copy of the template's data, a free port): tests that stop it touch no other."""
    settings = dataclasses.replace(
        template.settings, url=f"http://127.0.0.1:{free_port()}", state_dir=state_dir
    )
    server = Server(settings)
    shutil.copytree(template.data_dir, server.data_dir)
    return server


@pytest.fixture(scope="session")
def label_studio_server(
    label_studio_template: Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A real Label Studio server on a free loopback port, shared by the session, stopped afterwards."""
    server = server_from_template(label_studio_template, tmp_path_factory.mktemp("labelstudio"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_label_studio(label_studio_template: Server, tmp_path: Path) -> Iterator[Server]:
    """A Label Studio for one test alone, for tests that stop and restart it."""
    server = server_from_template(label_studio_template, tmp_path / "labelstudio")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def project_settings(label_studio: Settings, request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """A project of its own for each test, on the shared server; accounts on record under tmp_path."""
    name = request.node.name.removeprefix("test_")
    return dataclasses.replace(label_studio, project=name[:38], state_dir=tmp_path)
