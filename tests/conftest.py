from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotation.server import Server
from annotation.settings import Settings
from knowref60k.config import ExtractConfig
from knowref60k.extract import CandidateExtractor
from knowref60k.nlp import resolve_model_name
from knowref60k.slicing import write_line_range

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REDDIT = SHARED / "data" / "reddit"
# Prefect reads these when it is first imported: keep its state inside the repo, and quiet.
os.environ.setdefault("PREFECT_HOME", str(REPO / ".prefect"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def shared_file(relative: str) -> Path:
    """A file under ../shared; the test is skipped, saying which file is missing, when it is absent."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared data missing: {path} (tests read it from ../shared beside the repo)")
    return path


@pytest.fixture(scope="session")
def extractor() -> CandidateExtractor:
    """The whole extraction with the real installed spaCy pipeline, loaded once per test session."""
    config = ExtractConfig()
    return CandidateExtractor(config, resolve_model_name(config.model))


@pytest.fixture(scope="session")
def reddit_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30,000 real comments from 2015-2019 (RC_sample_1M.zst): enough to yield candidates."""
    source = shared_file("data/reddit/RC_sample_1M.zst")
    target = tmp_path_factory.mktemp("slice") / "RC_sample_slice.zst"
    assert write_line_range(source, target, 600_000, 30_000) == 30_000
    return target


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def label_studio(label_studio_server: Server) -> Settings:
    return label_studio_server.settings


@pytest.fixture(scope="session")
def label_studio_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real Label Studio server on a free loopback port, with its own data, stopped afterwards."""
    import secrets

    from annotation.server import LABEL_STUDIO

    if not LABEL_STUDIO.exists():
        pytest.skip(f"{LABEL_STUDIO} missing: `make test` installs Label Studio's own environment")
    settings = Settings(
        url=f"http://127.0.0.1:{free_port()}",
        username="admin@knowref60k.test",
        password=secrets.token_urlsafe(12),
        api_key=secrets.token_hex(20),
        project="knowref60k test",
    )
    server = Server(settings, tmp_path_factory.mktemp("labelstudio"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
